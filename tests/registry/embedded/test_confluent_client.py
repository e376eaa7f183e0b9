"""confluent-kafka's own SchemaRegistryClient, AvroSerializer and AvroDeserializer against the
embedded registry, crossing bytes with flatavro's framing and row codec both ways."""

from __future__ import annotations

import io
import json

import fastavro
import httpx
from confluent_kafka.schema_registry import (
    Schema,
    SchemaRegistryClient,
    topic_subject_name_strategy,
)
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from service.core.ddl import table_from_ddl
from service.core.framing import frame, unframe
from service.core.naming import SubjectKind, subject_for
from service.core.options import SchemaOptions
from service.core.schema import generate_schemas
from service.core.values import RowCodec
from tests.registry.conftest import ServedRegistry

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
