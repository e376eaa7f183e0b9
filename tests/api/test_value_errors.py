"""Value and decode errors a person can act on, over a real socket: decode errors name the
message, part, schema id, subject, field and byte offset in plain words; encode errors list
every bad column of a row once, key columns included; out of range is called out of range."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from service.api.app import create_app
from service.api.settings import Settings
from service.core.framing import frame
from service.registry.embedded.registry import EmbeddedRegistry
from tests.support.api import ORDERS_DDL
from tests.support.harness import ServedApp
from tests.support.registry import ServedRegistry

TOPIC = "tidb_shop_orders"
ROW = {"id": 1, "sku": "A-1", "price": "9.90", "created": None, "note": None}
OCTETS = {"content-type": "application/octet-stream"}


class Orders:
    """The orders table registered on a served service, with one good message's bytes."""

    def __init__(self, served: ServedApp) -> None:
        self.url, self.http = served.url, served.http
        ids = self.http.post(f"{self.url}/v1/tables/register", json={"ddl": ORDERS_DDL}).json()
        self.key_id, self.value_id = ids["key"]["id"], ids["value"]["id"]
        good = self.encode([{"op": "insert", "row": ROW}]).json()["messages"][0]
        self.key, self.value = base64.b64decode(good["key"]), base64.b64decode(good["value"])

    def encode(self, records: list[dict[str, Any]]) -> httpx.Response:
        return self.http.post(f"{self.url}/v1/topics/{TOPIC}/encode", json={"records": records})

    def decode(self, key: bytes | None, value: bytes | None) -> httpx.Response:
        def text(raw: bytes | None) -> str | None:
            return None if raw is None else base64.b64encode(raw).decode()

        return self.http.post(f"{self.url}/v1/decode",
                              json={"messages": [{"key": text(key), "value": text(value)}]})


@pytest.fixture
def orders(served: ServedApp) -> Orders:
    return Orders(served)


def errors_of(response: httpx.Response, code: str) -> list[dict[str, Any]]:
    assert response.status_code == 422, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert body["code"] == code
    for leak in ("UnicodeDecodeError", "codec", "EOFError", "Traceback", "Expected"):
        assert leak not in response.text
    return list(body["errors"])


def test_invalid_utf8_names_field_offset_schema_id_and_subject(orders: Orders) -> None:
    at = orders.value.index(b"A-1") + 1  # the `-` of sku's value
    broken = orders.value[:at] + b"\xfe" + orders.value[at + 1:]
    [error] = errors_of(orders.decode(None, broken), "invalid_messages")
    assert {k: error[k] for k in ("code", "message_index", "part", "offset", "schema_id",
                                  "subject", "field")} == {
        "code": "invalid_message", "message_index": 0, "part": "value", "offset": at,
        "schema_id": orders.value_id, "subject": f"{TOPIC}-value", "field": "sku"}
    assert error["reason"] == f"field `sku`: string is not valid UTF-8 at byte {at}"
    assert error["message"] == (f"message 0 value (schema id {orders.value_id}, subject "
                                f"{TOPIC}-value): field `sku`: string is not valid UTF-8 at "
                                f"byte {at}")


def test_raw_octet_stream_errors_name_the_same_facts(orders: Orders, served: ServedApp) -> None:
    at = orders.value.index(b"A-1")
    broken = orders.value[:at] + b"\xff" + orders.value[at + 1:]
    response = served.http.post(f"{served.url}/v1/decode", content=broken, headers=OCTETS)
    [error] = errors_of(response, "invalid_messages")
    assert (error["field"], error["offset"], error["schema_id"], error["subject"]) == \
        ("sku", at, orders.value_id, f"{TOPIC}-value")


def test_a_truncated_body_says_where_it_ran_out(orders: Orders) -> None:
    cut = orders.value.index(b"A-1") + 5  # inside price (NOT NULL): its length, 1 of 2 bytes
    [error] = errors_of(orders.decode(None, orders.value[:cut]), "invalid_messages")
    assert (error["field"], error["offset"]) == ("price", cut)
    assert error["reason"].startswith(f"field `price`: ran out of bytes at byte {cut}")
    assert error["reason"].endswith(f"(message is {cut} bytes)")


def test_left_over_bytes_are_counted(orders: Orders) -> None:
    [error] = errors_of(orders.decode(None, orders.value + bytes(7)), "invalid_messages")
    assert "field" not in error
    assert error["offset"] == len(orders.value)
    assert error["reason"].startswith("7 byte(s) left over after the record")


def test_a_bad_key_names_the_key_subject(orders: Orders) -> None:
    broken = orders.key[:-1] + b"\x80"  # the id's varint never ends
    [error] = errors_of(orders.decode(broken, orders.value), "invalid_messages")
    assert (error["part"], error["field"], error["schema_id"], error["subject"],
            error["offset"]) == ("key", "id", orders.key_id, f"{TOPIC}-key", len(orders.key))


def test_an_unknown_id_is_named_without_a_subject(orders: Orders) -> None:
    [error] = errors_of(orders.decode(None, frame(999, orders.value[5:])), "invalid_messages")
    assert (error["schema_id"], error["offset"]) == (999, 1)
    assert "subject" not in error and "field" not in error


def test_decimal_1e400_is_out_of_range(orders: Orders) -> None:
    [error] = errors_of(orders.encode([{"op": "insert", "row": dict(ROW, price="1e400")}]),
                        "invalid_records")
    assert (error["record_index"], error["column"]) == (0, "price")
    assert "out of range for DECIMAL(12,2): at most 10 integer digits" in error["reason"]
    assert "rounded" not in error["reason"]


def test_a_bad_key_column_does_not_hide_the_other_bad_columns(orders: Orders) -> None:
    bad = dict(ROW, id="seven", sku=None, price="12345678901.5")
    response = orders.encode([{"op": "insert", "row": ROW}, {"op": "insert", "row": bad},
                              {"op": "update", "row": bad}])
    errors = errors_of(response, "invalid_records")
    assert [(e["record_index"], e["column"]) for e in errors] == [
        (1, "id"), (1, "sku"), (1, "price"), (2, "id"), (2, "sku"), (2, "price")]
    assert errors[0]["reason"] == "expected an integer, got JSON string"


def test_old_row_key_errors_are_named_as_old_row(orders: Orders) -> None:
    record = {"op": "update", "row": dict(ROW, sku=None), "old_row": dict(ROW, id=None)}
    errors = errors_of(orders.encode([record]), "invalid_records")
    assert [(e["column"], e.get("row")) for e in errors] == [("id", "old_row"), ("sku", None)]
    assert errors[0]["message"] == "record 0: old_row column `id` is NOT NULL"


@pytest.fixture
def remote(tmp_path: Path) -> Iterator[Orders]:
    """The service on its own socket, using an embedded registry served on another one."""
    registry = EmbeddedRegistry(tmp_path / "remote.sqlite")
    served_registry = ServedRegistry(registry).start()
    settings = Settings(registry_url=served_registry.url, registry_retry_budget=0,
                        log_level="WARNING")
    service = ServedApp(create_app(settings), health_path="/healthz", lifespan="on").start()
    yield Orders(service)
    service.stop()
    served_registry.stop()
    registry.close()


def test_a_remote_registry_names_the_subject_too(remote: Orders) -> None:
    [error] = errors_of(remote.decode(None, remote.value[:-1]), "invalid_messages")
    assert (error["schema_id"], error["subject"], error["field"]) == \
        (remote.value_id, f"{TOPIC}-value", "note")


def canal_batch(data: dict[str, str]) -> dict[str, Any]:
    message = {"id": 0, "database": "shop", "table": "gauges", "pkNames": ["id"],
               "isDdl": False, "type": "INSERT", "es": 1, "ts": 1, "sql": "",
               "sqlType": {"id": 4, "level": 8, "n": 4},
               "mysqlType": {"id": "int", "level": "double", "n": "int"},
               "data": [data], "old": None, "_tidb": {"commitTs": 429918007904436226}}
    return {"messages": [{"value": orjson.dumps(message).decode()}], "encoding": "utf-8",
            "register": True}


def test_convert_calls_a_double_overflow_out_of_range(served: ServedApp) -> None:
    response = served.http.post(f"{served.url}/v1/convert/canal-json",
                          json=canal_batch({"id": "1", "level": "1e400", "n": "1"}))
    [error] = errors_of(response, "unconvertible_messages")
    assert error["column"] == "level"
    assert "out of range" in error["message"] and "inf" not in error["message"]


def test_convert_reports_a_bad_key_column_and_the_others_once_each(served: ServedApp) -> None:
    response = served.http.post(f"{served.url}/v1/convert/canal-json", json=canal_batch(
        {"id": "99999999999", "level": "0.5", "n": "-99999999999"}))
    errors = errors_of(response, "unconvertible_messages")
    assert [(e["message_index"], e["column"]) for e in errors] == [(0, "id"), (0, "n")]
    assert all("out of range for INT" in e["message"] for e in errors)
