"""flatavro's Avro bodies against the Kafka messages TiCDC v8.3.0 itself encoded.

golden/ticdc/v8.3.0/messages.json holds, for each table version of the ground truth (see the
folder's README.md) and each of the 8 option combinations, the key and value messages tiflow
v8.3.0's avro encoder built (``BatchEncoder.Build()`` after ``AppendRowChangedEvent``) for
the INSERT that followed the statements: Confluent frames (magic 0, the 4-byte id the
intercepted registry handed out, Avro body), the row's column values as TiCDC's mounter saw
them, and the commit ts. For each message this checks that flatavro, given the same row
(as plain JSON), the schemas it generates for the same statements and options, and the same
commit ts, writes the same key and value bodies byte for byte; that `ChangeWriter` given
TiCDC's ids writes the same frames; and that flatavro reads TiCDC's bodies back to the row.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from service.codec.resolver import BoundSchema, TopicSchemas
from service.codec.writer import ChangeWriter
from service.core.alter import apply_ddl
from service.core.ddl import table_from_ddl
from service.core.framing import unframe
from service.core.mysql_types import TypeFamily
from service.core.record_codec import RecordCodec
from service.core.schema import SchemaPair, generate_schemas
from service.core.schema_text import schema_text
from service.core.table import Table
from service.core.values import commit_physical_time
from service.registry.model import RegisteredSchema
from tests.core.golden.cases import OPTION_CASES

GOLDEN = Path(__file__).parent / "golden" / "ticdc" / "v8.3.0"
TIDB = json.loads((GOLDEN / "tidb_tables.json").read_text(encoding="utf-8"))
RECORDED = json.loads((GOLDEN / "messages.json").read_text(encoding="utf-8"))
MESSAGES: list[dict[str, Any]] = RECORDED["messages"]
REGISTRATIONS: dict[str, list[dict[str, Any]]] = RECORDED["registrations"]
TABLES: dict[str, dict[str, Any]] = {t["case"]: t for t in TIDB["tables"]}
LABELS = [label for label in OPTION_CASES if "_ns-" not in label]

# TiCDC's column value (its text in messages.json) -> flatavro's plain-JSON value, by type
# family: integers as numbers, DECIMAL and text as strings (docs/flat-avro.md §5). Only the
# families the ground-truth tables use are listed; another one fails loudly.
_PLAIN: dict[TypeFamily, Callable[[str], Any]] = {
    TypeFamily.INTEGER: int,
    TypeFamily.DECIMAL: str,
    TypeFamily.TEXT: str,
}

# Messages whose bodies differ from flatavro's: {(case, options): reason}. Empty: none do.
KNOWN_DIFFERENCES: dict[tuple[str, str], str] = {}


def _params() -> list[Any]:
    params = []
    for message in MESSAGES:
        key = (message["case"], message["options"])
        marks = ([pytest.mark.xfail(strict=True, reason=KNOWN_DIFFERENCES[key])]
                 if key in KNOWN_DIFFERENCES else [])
        params.append(pytest.param(message, marks=marks, id=f"{key[0]}.{key[1]}"))
    return params


PARAMS = _params()


@cache
def _table(case: str) -> Table:
    statements = TABLES[case]["statements"]
    table = table_from_ddl(statements[0])
    for statement in statements[1:]:
        outcome = apply_ddl(table, statement, schema=table.schema, table=table.table)
        assert outcome.table is not None
        table = outcome.table
    return table


@cache
def _pair(case: str, label: str) -> SchemaPair:
    return generate_schemas(_table(case), OPTION_CASES[label])


def _row(message: dict[str, Any]) -> dict[str, Any]:
    """The row of a message as flatavro's plain JSON, from TiCDC's column values."""
    table = _table(message["case"])
    row: dict[str, Any] = {}
    for value in message["row"]:
        column = table.column(value["name"])
        text = value["value"]
        family = column.type.family
        if family not in _PLAIN:
            pytest.fail(f"no plain-JSON rule here for {family} (column {column.name})")
        row[column.name] = None if text is None else _PLAIN[family](text)
    return row


def _frames(message: dict[str, Any]) -> tuple[bytes, bytes]:
    return base64.b64decode(message["key"]), base64.b64decode(message["value"])


def _key_codec(message: dict[str, Any]) -> RecordCodec:
    key_schema = _pair(message["case"], message["options"]).key_schema
    assert key_schema is not None
    return RecordCodec(key_schema, allow_extra=True)


def _value_codec(message: dict[str, Any]) -> RecordCodec:
    return RecordCodec(_pair(message["case"], message["options"]).value_schema)


def _extension(message: dict[str, Any]) -> dict[str, Any]:
    if not message["enable_tidb_extension"]:
        return {}
    return {"_tidb_op": "c", "_tidb_commit_ts": message["commit_ts"],
            "_tidb_commit_physical_time": message["commit_physical_time"]}


def test_the_recorded_set_is_complete() -> None:
    assert len(MESSAGES) == len(TABLES) * len(LABELS) == 88
    assert {(m["case"], m["options"]) for m in MESSAGES} == {
        (case, label) for case in TABLES for label in LABELS}
    for message in MESSAGES:
        assert message["insert"] == TABLES[message["case"]]["insert"]
        assert message["table_version"] == TABLES[message["case"]]["table_version"]
        assert [v["name"] for v in message["row"]] == [
            c["name"] for c in TABLES[message["case"]]["columns"]]
        options = OPTION_CASES[message["options"]]
        assert message["enable_tidb_extension"] == options.enable_tidb_extension
        assert message["avro_decimal_handling_mode"] == options.decimal_handling_mode.value
        assert (message["avro_bigint_unsigned_handling_mode"]
                == options.bigint_unsigned_handling_mode.value)
    assert set(REGISTRATIONS) == set(LABELS)
    for label, registered in REGISTRATIONS.items():
        assert [r["id"] for r in registered] == list(range(1, 2 * len(TABLES) + 1))
        assert all(r["schema_file"].split(".")[1] == label for r in registered)


@pytest.mark.parametrize("message", PARAMS)
def test_frames_name_the_schemas_registered_for_them(message: dict[str, Any]) -> None:
    key, value = _frames(message)
    ids = {r["id"]: r for r in REGISTRATIONS[message["options"]]}
    for data, kind in ((key, "key"), (value, "value")):
        schema_id = unframe(data).schema_id
        assert schema_id == message[f"{kind}_schema_id"]
        registered = ids[schema_id]
        assert registered["schema_file"] == message[f"{kind}_schema_file"]
        assert registered["subject"] == f"{message['topic']}-{kind}"
        # The schema behind the id is flatavro's for the same statements and options.
        ours = _pair(message["case"], message["options"])
        schema = ours.key_schema if kind == "key" else ours.value_schema
        text = (GOLDEN / registered["schema_file"]).read_text(encoding="utf-8")
        assert schema is not None and schema_text(schema) == text


@pytest.mark.parametrize("message", PARAMS)
def test_commit_physical_time_is_ticdc_s(message: dict[str, Any]) -> None:
    assert commit_physical_time(message["commit_ts"]) == message["commit_physical_time"]


def _on(path: str, codec: RecordCodec) -> RecordCodec:
    """`codec` as is (its compiled writer), or writing with the Python path alone."""
    assert codec._fast_writer is not None  # the suite asserts the extension is built
    if path == "python":
        codec._fast_writer = None  # as on a machine without a C compiler
    return codec


@pytest.mark.parametrize("path", ["compiled", "python"])
@pytest.mark.parametrize("message", PARAMS)
def test_value_body_is_ticdc_s_byte_for_byte(message: dict[str, Any], path: str) -> None:
    _, value = _frames(message)
    codec = _on(path, _value_codec(message))
    body = codec.encode(_row(message), commit_ts=message["commit_ts"])
    assert body.hex() == unframe(value).body.hex()


@pytest.mark.parametrize("path", ["compiled", "python"])
@pytest.mark.parametrize("message", PARAMS)
def test_key_body_is_ticdc_s_byte_for_byte(message: dict[str, Any], path: str) -> None:
    key, _ = _frames(message)
    body = _on(path, _key_codec(message)).encode(_row(message))
    assert body.hex() == unframe(key).body.hex()


@pytest.mark.parametrize("message", PARAMS)
def test_change_writer_with_ticdc_s_ids_writes_ticdc_s_messages(message: dict[str, Any]
                                                                ) -> None:
    def bound(kind: str, codec: RecordCodec) -> BoundSchema:
        schema_id = message[f"{kind}_schema_id"]
        text = (GOLDEN / message[f"{kind}_schema_file"]).read_text(encoding="utf-8")
        return BoundSchema(RegisteredSchema(f"{message['topic']}-{kind}", 1, schema_id, text),
                           codec)

    schemas = TopicSchemas(message["topic"], bound("key", _key_codec(message)),
                           bound("value", _value_codec(message)))
    written = ChangeWriter(schemas).write("insert", _row(message), old_row=None,
                                          commit_ts=message["commit_ts"])
    assert written == [("insert", *_frames(message))]


@pytest.mark.parametrize("message", PARAMS)
def test_ticdc_s_bodies_read_back_to_the_row(message: dict[str, Any]) -> None:
    key, value = _frames(message)
    row = _row(message)
    assert _value_codec(message).decode(value, start=5) == row | _extension(message)
    handle = {v["name"] for v in message["row"] if v["handle_key"]}
    assert _key_codec(message).decode(key, start=5) == {
        name: row[name] for name in row if name in handle}
