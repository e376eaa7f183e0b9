"""confluent-kafka's own SchemaRegistryClient, AvroSerializer and AvroDeserializer pointed at
each external registry: they read what flatavro wrote, and flatavro reads what they wrote."""

from __future__ import annotations

import base64
from decimal import Decimal

from confluent_kafka.schema_registry import SchemaRegistryClient, topic_subject_name_strategy
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from fastapi.testclient import TestClient

from tests.support.parts import ExternalRegistry
from tests.support.registries import Names

ROW = {"id": 7, "sku": "naïve ✓", "price": "-12.50", "created": "2024-03-11 08:51:01.461"}


def test_confluent_deserializer_reads_what_flatavro_wrote(
        service: TestClient, names: Names, registry: ExternalRegistry) -> None:
    assert service.post("/v1/tables/register", json={"ddl": names.ddl()}).status_code == 200
    encoded = service.post(f"/v1/topics/{names.topic}/encode",
                           json={"records": [{"op": "insert", "row": ROW}]})
    assert encoded.status_code == 200, encoded.text
    message = encoded.json()["messages"][0]
    sr = SchemaRegistryClient({"url": registry.url})
    deserializer = AvroDeserializer(sr)
    value = deserializer(base64.b64decode(message["value"]),
                         SerializationContext(names.topic, MessageField.VALUE))
    key = deserializer(base64.b64decode(message["key"]),
                       SerializationContext(names.topic, MessageField.KEY))
    assert key == {"id": 7}
    assert value == {"id": 7, "sku": "naïve ✓", "price": Decimal("-12.50"),
                     "created": "2024-03-11 08:51:01.461"}


def test_flatavro_reads_what_the_confluent_serializer_wrote(
        service: TestClient, names: Names, registry: ExternalRegistry) -> None:
    assert service.post("/v1/tables/register", json={"ddl": names.ddl()}).status_code == 200
    sr = SchemaRegistryClient({"url": registry.url})
    config = {"auto.register.schemas": False, "use.latest.version": True,
              "subject.name.strategy": topic_subject_name_strategy}
    latest = sr.get_latest_version(names.value_subject)
    serializer = AvroSerializer(sr, latest.schema.schema_str, conf=config)
    key_serializer = AvroSerializer(
        sr, sr.get_latest_version(names.key_subject).schema.schema_str, conf=config)
    value = serializer({"id": 8, "sku": "B-2", "price": Decimal("3.10"),
                        "created": "2024-03-11 08:51:01.000"},
                       SerializationContext(names.topic, MessageField.VALUE))
    key = key_serializer({"id": 8}, SerializationContext(names.topic, MessageField.KEY))
    assert value is not None and key is not None
    assert int.from_bytes(value[1:5], "big") == latest.schema_id
    decoded = service.post("/v1/decode", json={"messages": [
        {"key": base64.b64encode(key).decode(), "value": base64.b64encode(value).decode()}]})
    assert decoded.status_code == 200, decoded.text
    assert decoded.json()["messages"][0]["value"] == {
        "id": 8, "sku": "B-2", "price": "3.10", "created": "2024-03-11 08:51:01.000"}
    assert decoded.json()["messages"][0]["key"] == {"id": 8}
