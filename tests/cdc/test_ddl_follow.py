"""A Canal-JSON topic that carries its table's CREATE TABLE and ALTERs, converted with
``register: true``: each ALTER gives the next value schema version, exactly what the DDL
defines (NOT NULL with its default, column order), and every row converts; replays of a DDL
change nothing; a DDL that cannot be applied is reported and the rows fall back to the
definitions they imply."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from service.api.app import create_app
from service.api.settings import Settings
from service.core.ddl import table_from_ddl
from tests.cdc.builders import open_protocol_message
from tests.support.cdc import frame_open_protocol

TS = 440_000_000_000_000_000
TYPES = {"id": "int", "name": "varchar(20)"}


def ddl(sql: str, ts: int, table: str = "items") -> dict[str, Any]:
    return {"value": json.dumps({
        "id": 0, "database": "shop", "table": table, "pkNames": None, "isDdl": True,
        "type": "ALTER" if sql.startswith("ALTER") else "CREATE", "es": ts >> 18, "ts": 0,
        "sql": sql, "sqlType": None, "mysqlType": None, "data": None, "old": None,
        "_tidb": {"commitTs": ts}})}


def insert(row: dict[str, Any], types: dict[str, str], ts: int) -> dict[str, Any]:
    return {"value": json.dumps({
        "id": 0, "database": "shop", "table": "items", "pkNames": ["id"], "isDdl": False,
        "type": "INSERT", "es": ts >> 18, "ts": 0, "sql": "",
        "sqlType": {c: 4 for c in types}, "mysqlType": types,
        "data": [{k: None if v is None else str(v) for k, v in row.items()}], "old": None,
        "_tidb": {"commitTs": ts}})}


CREATE = "CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(20))"
ADD_QTY = "ALTER TABLE items ADD COLUMN qty INT NOT NULL DEFAULT 7"
ADD_NOTE = "ALTER TABLE `shop`.`items` ADD COLUMN note VARCHAR(8) NULL DEFAULT 'x' AFTER id"
TYPES_2 = {**TYPES, "qty": "int"}
TYPES_3 = {"id": "int", "note": "varchar(8)", "name": "varchar(20)", "qty": "int"}


def topic_messages() -> list[dict[str, Any]]:
    return [ddl(CREATE, TS), insert({"id": 1, "name": "a"}, TYPES, TS + 1),
            ddl(ADD_QTY, TS + 2), insert({"id": 2, "name": "b", "qty": 3}, TYPES_2, TS + 3),
            ddl(ADD_NOTE, TS + 4),
            insert({"id": 3, "note": "n", "name": "c", "qty": 4}, TYPES_3, TS + 5)]


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    settings = Settings(registry_db_path=str(tmp_path / "r.sqlite"), log_level="WARNING")
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        yield client


def convert(client: TestClient, messages: list[dict[str, Any]]) -> Any:
    done = client.post("/v1/convert/canal-json", json={"register": True, "messages": messages})
    assert done.status_code == 200, done.text
    return done.json()


def value_fields(client: TestClient, version: int) -> list[dict[str, Any]]:
    got = client.get(f"/registry/subjects/tidb_shop_items-value/versions/{version}")
    return list(json.loads(got.json()["schema"])["fields"])


@pytest.mark.parametrize("batches", [1, 6], ids=["one-batch", "message-by-message"])
def test_each_alter_registers_the_version_the_ddl_defines(client: TestClient,
                                                          batches: int) -> None:
    messages = topic_messages()
    size = len(messages) // batches
    converted = [m for i in range(0, len(messages), size)
                 for m in convert(client, messages[i:i + size])["messages"]]
    assert [m["value_schema_id"] for m in converted] == [2, 3, 4]
    assert client.get("/registry/subjects/tidb_shop_items-value/versions").json() == [1, 2, 3]
    v2 = value_fields(client, 2)
    assert v2[-1] == {"name": "qty", "type": {"type": "int", "connect.parameters": {
        "tidb_type": "INT"}}, "default": 7}
    v3 = value_fields(client, 3)
    assert [f["name"] for f in v3] == ["id", "note", "name", "qty"]
    assert v3[1]["default"] == "x" and v3[1]["type"][0] == {
        "type": "string", "connect.parameters": {"tidb_type": "TEXT"}}
    decoded = client.post("/v1/decode", json={"messages": [
        {"key": m["key"], "value": m["value"]} for m in converted]}).json()["messages"]
    assert [d["value"] for d in decoded] == [
        {"id": 1, "name": "a"}, {"id": 2, "name": "b", "qty": 3},
        {"id": 3, "note": "n", "name": "c", "qty": 4}]


def test_a_replayed_ddl_changes_nothing(client: TestClient) -> None:
    messages = topic_messages()
    convert(client, messages)
    again = convert(client, messages)  # the bridge re-reads a batch it did not commit
    assert [m["value_schema_id"] for m in again["messages"]] == [2, 3, 4]
    assert "already applied" in again["skipped"][1]["reason"]
    assert client.get("/registry/subjects/tidb_shop_items-value/versions").json() == [1, 2, 3]


def test_a_ddl_that_is_not_followed_is_reported_and_rows_fall_back(
        client: TestClient) -> None:
    partition = "ALTER TABLE items PARTITION BY HASH(id) PARTITIONS 4"
    done = convert(client, [ddl(CREATE, TS), insert({"id": 1, "name": "a"}, TYPES, TS + 1),
                            ddl(partition, TS + 2),
                            insert({"id": 2, "name": "b"}, TYPES, TS + 3)])
    reason = done["skipped"][1]["reason"]
    assert f"table `shop`.`items`: cannot apply `{partition}`: Command statements are not " \
           "followed" in reason and "definitions they imply" in reason
    assert len(done["messages"]) == 2  # the row after it converts on what it implies


def test_a_ddl_that_contradicts_the_table_is_an_error_of_its_message(
        client: TestClient) -> None:
    """Does not parse, names a column that is not there, drops the key: the message cannot
    be converted (the bridge stops at it or dead-letters it), nothing of the batch is."""
    for index, statement in enumerate(["ALTER TABLE items DROP COLUMN nope",
                                       "ALTER TABLE items ADD COLUMN (",
                                       "ALTER TABLE items DROP COLUMN id"]):
        done = client.post("/v1/convert/canal-json", json={"register": True, "messages": [
            ddl(CREATE, TS), insert({"id": 1, "name": "a"}, TYPES, TS + 1),
            ddl(statement, TS + 2 + index)]})
        assert done.status_code == 422, done.text
        [error] = done.json()["errors"]
        assert error["message_index"] == 2 and error["code"] == "unapplied_ddl"
        assert error["message"].startswith(
            f"message 2: table `shop`.`items`: cannot apply `{statement}`: ")
        assert error["statement"] == statement
    assert client.get("/registry/subjects").json() == []


def test_rows_with_a_new_column_and_no_ddl_evolve_the_derived_definition(
        client: TestClient) -> None:
    """A bridge started after the ALTER: no DDL in sight, rows gain `qty`, later lose `name`;
    each shape registers its own version (new columns nullable, default null), said in
    `notes` (relative to the version registered when the batch began), and the rows before
    the change keep theirs."""
    first = convert(client, [insert({"id": 1, "name": "a"}, TYPES, TS + 1)])
    assert first["notes"] == []
    done = convert(client, [insert({"id": 2, "name": "b"}, TYPES, TS + 2),
                            insert({"id": 3, "name": "c", "qty": 3}, TYPES_2, TS + 3),
                            insert({"id": 4, "qty": 4}, {"id": "int", "qty": "int"}, TS + 4)])
    assert [m["value_schema_id"] for m in done["messages"]] == [2, 3, 4]
    assert done["notes"] == [
        "table `shop`.`items`: a new value schema for topic tidb_shop_items derived from the "
        "rows, no DDL seen: new column(s) `qty` (nullable, default null: rows carry neither "
        "NOT NULL nor defaults) (registered as version 2)",
        "table `shop`.`items`: a new value schema for topic tidb_shop_items derived from the "
        "rows, no DDL seen: new column(s) `qty` (nullable, default null: rows carry neither "
        "NOT NULL nor defaults); column(s) `name` dropped (registered as version 3)"]
    assert value_fields(client, 2)[-1] == {"default": None, "name": "qty", "type": [
        "null", {"type": "int", "connect.parameters": {"tidb_type": "INT"}}]}
    assert [f["name"] for f in value_fields(client, 3)] == ["id", "qty"]
    decoded = client.post("/v1/decode", json={"messages": [
        {"key": m["key"], "value": m["value"]} for m in done["messages"]]}).json()["messages"]
    assert [d["value"] for d in decoded] == [{"id": 2, "name": "b"},
                                             {"id": 3, "name": "c", "qty": 3},
                                             {"id": 4, "qty": 4}]


def test_a_change_the_registry_refuses_stops_with_its_reason(client: TestClient) -> None:
    registered = client.post("/v1/tables/register", json={
        "ddl": "CREATE TABLE shop.items (id INT PRIMARY KEY, name VARCHAR(20) NOT NULL)"})
    assert registered.status_code == 200, registered.text
    assert client.put("/registry/config/tidb_shop_items-value",
                      json={"compatibility": "FORWARD"}).status_code == 200
    refused = client.post("/v1/convert/canal-json", json={"register": True, "messages": [
        insert({"id": 2}, {"id": "int"}, TS + 2)]})  # NOT NULL `name` gone: FORWARD refuses
    assert refused.status_code == 409, refused.text
    assert "column `name`" in refused.json()["detail"]
    assert client.get("/registry/subjects/tidb_shop_items-value/versions").json() == [1]


def test_an_open_protocol_topic_follows_its_ddl_too(client: TestClient) -> None:
    """The same table through the Open Protocol (DDL events `t: 2` with `q`; columns written
    in name order): the versions are the ones the DDL defines, not the rows' implied ones."""
    def ddl_message(sql: str, ts: int) -> dict[str, Any]:
        key, value = frame_open_protocol(
            [json.dumps({"ts": ts, "scm": "shop", "tbl": "items", "t": 2})],
            [json.dumps({"q": sql, "t": 3 if sql.startswith("CREATE") else 5})])
        return {"key": key, "value": value}

    def rows(ddl_text: str, row: dict[str, Any], ts: int) -> dict[str, Any]:
        key, value = open_protocol_message(table_from_ddl(ddl_text), [("insert", row, None, ts)])
        return {"key": key, "value": value}

    v1 = "CREATE TABLE shop.items (id INT PRIMARY KEY, name VARCHAR(20))"
    v2 = "CREATE TABLE shop.items (id INT PRIMARY KEY, name VARCHAR(20), qty INT NOT NULL)"
    done = client.post("/v1/convert/open-protocol", json={
        "register": True, "encoding": "base64", "messages": [
            ddl_message(CREATE, TS), rows(v1, {"id": 1, "name": "a"}, TS + 1),
            ddl_message(ADD_QTY, TS + 2), rows(v2, {"id": 2, "name": "b", "qty": 3}, TS + 3)]})
    assert done.status_code == 200, done.text
    assert [m["value_schema_id"] for m in done.json()["messages"]] == [2, 3]
    assert value_fields(client, 2)[-1] == {"name": "qty", "type": {
        "type": "int", "connect.parameters": {"tidb_type": "INT"}}, "default": 7}
    assert done.json()["notes"] == []


UNIQUE_TYPES = {"a": "int", "b": "varchar(8)", "v": "int"}


def keyless_insert(row: dict[str, Any], ts: int) -> dict[str, Any]:
    """A Canal-JSON INSERT of `shop.pairs`, keyed by a NOT NULL unique index: `pkNames` empty,
    as TiCDC writes it."""
    message = json.loads(insert(row, UNIQUE_TYPES, ts)["value"])
    message.update(table="pairs", pkNames=[])
    return {"value": json.dumps(message)}


def test_key_columns_key_a_table_its_messages_leave_keyless(client: TestClient) -> None:
    done = client.post("/v1/convert/canal-json", json={
        "register": True, "key_columns": {"shop.pairs": ["a", "b"]},
        "messages": [keyless_insert({"a": 1, "b": "x", "v": 2}, TS)]})
    assert done.status_code == 200, done.text
    assert done.json()["notes"] == []
    key = client.get("/registry/subjects/tidb_shop_pairs-key/versions/1").json()
    assert [f["name"] for f in json.loads(key["schema"])["fields"]] == ["a", "b"]
    missing = client.post("/v1/convert/canal-json", json={
        "register": True, "key_columns": {"shop.pairs": ["a", "nope"]},
        "messages": [keyless_insert({"a": 1, "b": "x", "v": 2}, TS)]})
    assert missing.status_code == 422
    assert "key column `nope` of `shop`.`pairs` (key_columns) is not in the message" in \
        missing.json()["detail"]


def test_a_keyless_table_is_said_once(client: TestClient) -> None:
    first = convert(client, [keyless_insert({"a": 1, "b": "x", "v": 2}, TS)])
    assert first["messages"][0]["key"] is None
    assert first["notes"] == [
        "table `shop`.`pairs` has no primary key and no NOT NULL unique key: TiCDC's avro "
        "protocol refuses such a table, so a changefeed would not have written topic "
        "tidb_shop_pairs; registered without a key schema (every message has a null key)"]
    assert convert(client, [keyless_insert({"a": 2, "b": "y", "v": 3}, TS + 1)])["notes"] == []


def test_a_unique_key_table_takes_its_key_from_the_create_table(client: TestClient) -> None:
    create = ("CREATE TABLE pairs (a INT NOT NULL, b VARCHAR(8) NOT NULL, v INT, "
              "UNIQUE KEY uk (a, b))")
    done = convert(client, [ddl(create, TS, table="pairs"),
                            keyless_insert({"a": 1, "b": "x", "v": 2}, TS + 1)])
    assert done["notes"] == [] and done["messages"][0]["key"] is not None
    key = client.get("/registry/subjects/tidb_shop_pairs-key/versions/1").json()
    assert [f["name"] for f in json.loads(key["schema"])["fields"]] == ["a", "b"]
    decoded = client.post("/v1/decode", json={"messages": [
        {"key": done["messages"][0]["key"], "value": done["messages"][0]["value"]}]})
    assert decoded.json()["messages"][0]["key"] == {"a": 1, "b": "x"}
