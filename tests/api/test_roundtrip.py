"""generate -> register -> encode -> decode through the service, in process and over a socket;
Confluent's own serializer and deserializer crossing bytes with the service."""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import orjson
import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient, topic_subject_name_strategy
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from fastapi.testclient import TestClient

from service.core.framing import unframe
from service.core.schema import generate_schemas
from service.core.values import RowCodec
from tests.core.golden.cases import GOLDEN_DIR, OPTION_CASES, TABLES, expected_path
from tests.core.test_values import EDGE_DDL, EDGE_ROW, EDGE_TABLE, MIN_ROW, PRECISE
from tests.support.harness import ServedApp

TOPIC = "tidb_db_edge"
TSO = 449_522_326_498_394_113
EXTENSION = {"enable_tidb_extension": True}


def post(client: TestClient | httpx.Client, path: str, body: Any, **kw: Any) -> Any:
    response = client.post(path, content=orjson.dumps(body),
                           headers={"content-type": "application/json"}, **kw)
    assert response.status_code == 200, response.text
    return response.json()


@pytest.mark.parametrize("table", TABLES)
@pytest.mark.parametrize("label", ["ext-on_decimal-string_bigint-string",
                                   "ext-off_decimal-precise_bigint-long"])
def test_generate_matches_the_golden_files(client: TestClient, table: str, label: str) -> None:
    options = OPTION_CASES[label]
    spec = json.loads((GOLDEN_DIR / "tables" / f"{table}.table.json").read_text())
    body = {"table": spec, "options": {
        "enable_tidb_extension": options.enable_tidb_extension,
        "decimal_handling_mode": options.decimal_handling_mode.value,
        "bigint_unsigned_handling_mode": options.bigint_unsigned_handling_mode.value}}
    got = post(client, "/v1/schemas/generate", body)
    assert got["value_schema"] == json.loads(expected_path(table, label, "value").read_text())
    key_text = expected_path(table, label, "key").read_text()
    assert got["key_schema"] == json.loads(key_text)


def round_trip(client: TestClient | httpx.Client) -> None:
    registered = post(client, "/v1/tables/register", {"ddl": EDGE_DDL, "options": EXTENSION})
    assert registered["topic"] == TOPIC
    records = [
        {"op": "insert", "row": EDGE_ROW, "commit_ts": TSO},
        {"op": "update", "row": MIN_ROW, "old_row": EDGE_ROW, "commit_ts": TSO + 1},
        {"op": "delete", "old_row": MIN_ROW, "commit_ts": TSO + 2},
    ]
    encoded = post(client, f"/v1/topics/{TOPIC}/encode", {"records": records})
    assert encoded["key_schema_id"] == registered["key"]["id"]
    assert encoded["value_schema_id"] == registered["value"]["id"]
    assert [m["record_index"] for m in encoded["messages"]] == [0, 1, 2]
    assert encoded["messages"][2]["value"] is None
    decoded = post(client, "/v1/decode", {"messages": [
        {"key": m["key"], "value": m["value"]} for m in encoded["messages"]]})["messages"]
    assert [d["op"] for d in decoded] == ["upsert", "upsert", "delete"]
    assert decoded[0]["value"] == dict(EDGE_ROW, _tidb_op="c", _tidb_commit_ts=TSO,
                                       _tidb_commit_physical_time=TSO >> 18)
    assert decoded[1]["value"] == dict(MIN_ROW, _tidb_op="u", _tidb_commit_ts=TSO + 1,
                                       _tidb_commit_physical_time=(TSO + 1) >> 18)
    assert decoded[2] == {"key": {"id": 1}, "key_schema_id": registered["key"]["id"],
                          "value": None, "value_schema_id": None, "op": "delete"}


def test_round_trip_in_process(client: TestClient) -> None:
    round_trip(client)


def test_round_trip_over_a_socket(served: ServedApp) -> None:
    with httpx.Client(base_url=served.url, timeout=30) as http:
        round_trip(http)


def test_update_changing_the_key_becomes_delete_plus_insert(client: TestClient) -> None:
    post(client, "/v1/tables/register", {"ddl": EDGE_DDL})
    moved = dict(EDGE_ROW, id=2)
    encoded = post(client, f"/v1/topics/{TOPIC}/encode", {"encoding": "hex", "records": [
        {"op": "update", "row": moved, "old_row": EDGE_ROW}]})["messages"]
    assert [m["record_index"] for m in encoded] == [0, 0]
    assert encoded[0]["value"] is None
    assert unframe(bytes.fromhex(encoded[0]["key"])).body == b"\x02"  # id 1, zig-zag
    assert unframe(bytes.fromhex(encoded[1]["key"])).body == b"\x04"  # id 2
    back = post(client, "/v1/decode", {"encoding": "hex", "messages": encoded})["messages"]
    assert back[1]["value"] == moved


def test_octet_stream_decodes_one_raw_message(client: TestClient) -> None:
    post(client, "/v1/tables/register", {"ddl": EDGE_DDL})
    message = post(client, f"/v1/topics/{TOPIC}/encode", {"records": [
        {"op": "insert", "row": EDGE_ROW}]})["messages"][0]
    for part in ("key", "value"):
        response = client.post(f"/v1/decode?part={part}", content=base64.b64decode(
            message[part]), headers={"content-type": "application/octet-stream"})
        assert response.status_code == 200, response.text
        assert response.json()["messages"][0][part] == (EDGE_ROW if part == "value"
                                                        else {"id": 1})


CONFLUENT = {"auto.register.schemas": False, "use.latest.version": True,
             "subject.name.strategy": topic_subject_name_strategy}


def test_service_bytes_decode_with_confluent_deserializer(served: ServedApp) -> None:
    with httpx.Client(base_url=served.url, timeout=30) as http:
        post(http, "/v1/tables/register", {"ddl": EDGE_DDL})
        value = post(http, f"/v1/topics/{TOPIC}/encode", {"records": [
            {"op": "insert", "row": EDGE_ROW}]})["messages"][0]["value"]
    deserializer = AvroDeserializer(SchemaRegistryClient({"url": served.url + "/registry"}))
    datum = deserializer(base64.b64decode(value),
                         SerializationContext(TOPIC, MessageField.VALUE))
    assert RowCodec.for_value(EDGE_TABLE, PRECISE).from_datum(datum) == EDGE_ROW


def test_confluent_serializer_bytes_decode_with_the_service(served: ServedApp) -> None:
    with httpx.Client(base_url=served.url, timeout=30) as http:
        post(http, "/v1/tables/register", {"ddl": EDGE_DDL})
        schema = json.dumps(generate_schemas(EDGE_TABLE, PRECISE).value_schema)
        serializer = AvroSerializer(SchemaRegistryClient({"url": served.url + "/registry"}),
                                    schema, conf=CONFLUENT)
        message = serializer(RowCodec.for_value(EDGE_TABLE, PRECISE).to_datum(EDGE_ROW),
                             SerializationContext(TOPIC, MessageField.VALUE))
        assert message is not None
        decoded = post(http, "/v1/decode", {"messages": [
            {"key": None, "value": base64.b64encode(message).decode()}]})["messages"][0]
    assert decoded["value"] == EDGE_ROW
    assert decoded["op"] == "upsert"
