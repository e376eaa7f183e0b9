"""confluent-kafka's own SchemaRegistryClient, AvroSerializer and AvroDeserializer against the
embedded registry, crossing bytes with flatavro's framing and row codec both ways."""

from __future__ import annotations

import io
import json
from collections.abc import Callable

import fastavro
import httpx
import pytest
from confluent_kafka.schema_registry import (
    Schema,
    SchemaRegistryClient,
    topic_subject_name_strategy,
)
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import MessageField, SerializationContext

from service.core.ddl import table_from_ddl
from service.core.framing import frame, unframe
from service.core.naming import SubjectKind, subject_for
from service.core.options import SchemaOptions
from service.core.schema import generate_schemas
from service.core.values import RowCodec
from tests.support.registry import ServedRegistry

TABLE = table_from_ddl("CREATE TABLE shop.orders (id BIGINT PRIMARY KEY, amount DECIMAL(10,2),"
                       " note VARCHAR(20), flags BIT(8), created DATETIME(3))")
OPTIONS = SchemaOptions(enable_tidb_extension=False)
PAIR = generate_schemas(TABLE, OPTIONS)
VALUE_SCHEMA = json.dumps(PAIR.value_schema)
ROW = {"id": 7, "amount": "-12.50", "note": "naïve ✓", "flags": "BQ==",
       "created": "2024-03-11 08:51:01.461"}
TOPIC = "tidb_shop_orders"
CONFIG = {"auto.register.schemas": True, "subject.name.strategy": topic_subject_name_strategy}


def client(served: ServedRegistry) -> SchemaRegistryClient:
    return SchemaRegistryClient({"url": served.url})


def test_client_registers_and_reads_back(served_registry: ServedRegistry) -> None:
    sr = client(served_registry)
    subject = subject_for(TOPIC, SubjectKind.VALUE)
    schema_id = sr.register_schema(subject, Schema(VALUE_SCHEMA, "AVRO"))
    assert schema_id == 1
    latest = sr.get_latest_version(subject)
    assert (latest.schema_id, latest.version) == (1, 1)
    assert json.loads(latest.schema.schema_str) == PAIR.value_schema
    assert json.loads(sr.get_schema(1).schema_str) == PAIR.value_schema
    assert sr.get_subjects() == [subject]
    assert sr.test_compatibility(subject, Schema(VALUE_SCHEMA, "AVRO")) is True


def test_confluent_serializer_bytes_decode_with_flatavro(served_registry: ServedRegistry) -> None:
    codec = RowCodec.for_value(TABLE, OPTIONS)
    serializer = AvroSerializer(client(served_registry), VALUE_SCHEMA, conf=CONFIG)
    ctx = SerializationContext(TOPIC, MessageField.VALUE)
    message = serializer(codec.to_datum(ROW), ctx)
    assert message is not None
    parsed = unframe(message)
    writer = json.loads(served_registry_schema(served_registry, parsed.schema_id))
    datum = fastavro.schemaless_reader(io.BytesIO(parsed.body), fastavro.parse_schema(writer),
                                       None)
    assert codec.from_datum(datum) == ROW


def test_flatavro_bytes_decode_with_confluent_deserializer(
    served_registry: ServedRegistry
) -> None:
    sr = client(served_registry)
    schema_id = sr.register_schema(subject_for(TOPIC, SubjectKind.VALUE),
                                   Schema(VALUE_SCHEMA, "AVRO"))
    codec = RowCodec.for_value(TABLE, OPTIONS)
    body = io.BytesIO()
    fastavro.schemaless_writer(body, fastavro.parse_schema(PAIR.value_schema),
                               codec.to_datum(ROW))
    message = frame(schema_id, body.getvalue())
    deserializer = AvroDeserializer(sr)
    decoded = deserializer(message, SerializationContext(TOPIC, MessageField.VALUE))
    assert codec.from_datum(decoded) == ROW


def served_registry_schema(served: ServedRegistry, schema_id: int) -> str:
    return httpx.get(f"{served.url}/schemas/ids/{schema_id}", timeout=10).json()["schema"]


R1 = json.dumps({"type": "record", "name": "myrecord",
                 "fields": [{"name": "f1", "type": "string"}]})
R1_JAVA = '{"type":"record","name":"myrecord","fields":[{"name":"f1","type":"string"}]}'
R2 = json.dumps({"type": "record", "name": "myrecord", "fields": [
    {"name": "f1", "type": "string"}, {"name": "f2", "type": "string", "default": "d"}]})
R_REQ = json.dumps({"type": "record", "name": "myrecord", "fields": [
    {"name": "f1", "type": "string"}, {"name": "f3", "type": "int"}]})
BAD_DEFAULT = json.dumps({"type": "record", "name": "myrecord", "fields": [
    {"name": "f", "type": "string", "default": None}]})
PROPS = json.dumps({"type": "record", "name": "myrecord", "fields": [
    {"type": "string", "name": "field1", "zprop": "z", "aprop": "a"}]})


def refused(call: Callable[[], object]) -> SchemaRegistryError:
    with pytest.raises(SchemaRegistryError) as err:
        call()
    return err.value


def test_client_sees_confluent_stored_form_and_listings(served_registry: ServedRegistry) -> None:
    sr = client(served_registry)
    assert sr.register_schema("app-value", Schema(R1, "AVRO")) == 1
    assert sr.register_schema("app-value", Schema(R2, "AVRO")) == 2
    assert sr.register_schema("zeta", Schema(R1, "AVRO")) == 1
    assert sr.get_version("app-value", 1).schema.schema_str == R1_JAVA
    assert sr.get_subjects(subject_prefix="app") == ["app-value"]
    assert sr.get_referenced_by("app-value", 1) == []
    assert sr.delete_version("app-value", 1) == 1
    assert sr.get_versions("app-value") == [2]
    assert sr.get_versions("app-value", deleted_only=True) == [1]
    assert sr.lookup_schema("app-value", Schema(R1, "AVRO"), deleted=True).version == 1
    assert sr.delete_subject("zeta") == [1]
    assert sr.get_subjects(deleted_only=True) == ["zeta"]
    assert sr.get_subjects(deleted=True) == ["app-value", "zeta"]


def test_client_sees_confluent_refusals(served_registry: ServedRegistry) -> None:
    sr = client(served_registry)
    sr.register_schema("s", Schema(R1, "AVRO"))
    bad = refused(lambda: sr.register_schema("s", Schema(BAD_DEFAULT, "AVRO")))
    assert (bad.http_status_code, bad.error_code) == (422, 42201)
    assert "Invalid default for field f" in bad.error_message
    incompatible = refused(lambda: sr.register_schema("s", Schema(R_REQ, "AVRO")))
    assert (incompatible.http_status_code, incompatible.error_code) == (409, 40901)
    assert "details: [{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE'" in \
        incompatible.error_message
    assert sr.test_compatibility("s", Schema(R_REQ, "AVRO"), verbose=True) is False
    assert sr.test_compatibility_all_versions("s", Schema(R2, "AVRO")) is True


def test_client_hard_delete_never_reuses_the_id(served_registry: ServedRegistry) -> None:
    sr = client(served_registry)
    assert sr.register_schema("s", Schema(R1, "AVRO")) == 1
    sr.delete_subject("s")
    sr.delete_subject("s", permanent=True)
    fresh = client(served_registry)  # no cached schema
    assert refused(lambda: fresh.get_schema(1)).error_code == 40403
    assert fresh.register_schema("s", Schema(R1, "AVRO")) == 2


def test_client_normalizes_and_imports(served_registry: ServedRegistry) -> None:
    sr = client(served_registry)
    assert sr.register_schema("n", Schema(PROPS, "AVRO"), normalize_schemas=True) == 1
    assert '"aprop":"a","zprop":"z"' in sr.get_version("n", 1).schema.schema_str
    assert sr.lookup_schema("n", Schema(PROPS, "AVRO"), normalize_schemas=True).schema_id == 1
    assert refused(lambda: sr.update_global_mode("IMPORT")).error_code == 42205
    assert sr.update_global_mode("IMPORT", force=True) == "IMPORT"
    assert refused(lambda: sr.register_schema("n", Schema(R1, "AVRO"))).error_code == 42205
    assert sr.update_mode("n", "READONLY") == "READONLY"
    assert sr.get_mode("n") == "READONLY"
    assert sr.delete_mode("n") == "READONLY"
    assert refused(lambda: sr.get_mode("n")).error_code == 40409
    assert sr.set_compatibility("n", "FULL") == {"compatibility": "FULL"}  # the body, as sent
    assert sr.get_compatibility("n") == "FULL"
    assert sr.delete_config("n").compatibility_level.value == "FULL"
    assert refused(lambda: sr.get_config("n")).error_code == 40408


def test_client_sees_confluent_settings_answers(served_registry: ServedRegistry) -> None:
    sr = client(served_registry)
    assert sr.register_schema("s", Schema(R1, "AVRO")) == 1
    for removal in (lambda: sr.delete_config("s"), lambda: sr.delete_mode("s")):
        unset = refused(removal)  # Confluent: DELETE of a setting the subject lacks is 40401
        assert (unset.http_status_code, unset.error_code) == (404, 40401)
    assert sr.update_mode("s", "READONLY") == "READONLY"
    assert refused(lambda: sr.set_compatibility("s", "FULL")).error_code == 42205
    assert sr.update_mode("s", "READWRITE") == "READWRITE"
    assert sr.set_compatibility(level="NONE") == {"compatibility": "NONE"}
    assert sr.delete_config().compatibility_level.value == "NONE"  # global reset
    assert sr.get_compatibility() == "BACKWARD"
    assert [(v.subject, v.version) for v in sr.get_schema_versions(1)] == [("s", 1)]
    assert sr.delete_subject("s") == [1]
    assert sr.update_global_mode("IMPORT") == "IMPORT"  # no live subject left
    assert sr.get_global_mode() == "IMPORT"
    gone = refused(lambda: sr.get_versions("s", deleted=True))  # IMPORT hard-deleted it
    assert gone.error_code == 40401
