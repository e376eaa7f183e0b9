"""Canal-JSON rows: `typed_row` (the per-row fast path the converter uses) gives what
`typed_value` gives for each value, and for a bad value the same error, naming the field; a
table's column types follow each message's shape."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from service.cdc.canal_json.columns import column_type
from service.cdc.canal_json.decoder import Decoder
from service.cdc.canal_json.values import typed_row, typed_value
from service.cdc.definition import type_text
from service.cdc.errors import MessageFormatError
from service.cdc.events import SourceMessage
from tests.support.hypothesis_profile import examples

TYPES = {name: column_type(name, mysql, sql_type=None)[0] for name, mysql in {
    "i": "int", "u": "bigint unsigned", "y": "year", "b": "bit(8)", "f": "float",
    "d": "double", "blob": "blob", "e": "enum('a','b')", "s": "set('x','y')",
    "dec": "decimal(10,2)", "t": "varchar(20)", "dt": "datetime", "j": "json",
}.items()}

VALUES = st.one_of(
    st.none(), st.integers(-10**20, 10**20).map(str), st.floats().map(str),
    st.sampled_from(["", "-", "1e400", "nan", " 1", "1.5", "a", "x,y", "\u00ff\u0005", "\u0100",
                     "٣", "0x1F", "2024-01-02 03:04:05"]),
    st.text(max_size=8), st.integers(-5, 5), st.floats(allow_nan=False), st.booleans(),
    st.lists(st.integers(), max_size=2))


def _one_by_one(row: dict[str, Any]) -> dict[str, Any] | str:
    try:
        return {c: typed_value(c, TYPES[c], value=v, where="data/0") for c, v in row.items()}
    except MessageFormatError as exc:
        return f"{exc} [{exc.details.get('field')}]"


def _row(row: dict[str, Any]) -> dict[str, Any] | str:
    try:
        return typed_row(row, TYPES, where="data/0")
    except MessageFormatError as exc:
        return f"{exc} [{exc.details.get('field')}]"


@settings(max_examples=examples(400), deadline=None)
@given(st.fixed_dictionaries({}, optional={name: VALUES for name in TYPES}))
def test_typed_row_is_typed_value_of_each_column(row: dict[str, Any]) -> None:
    assert _row(row) == _one_by_one(row)


@pytest.mark.parametrize(("row", "error"), [
    ({"t": "ok", "i": 7}, "column `i`: Canal-JSON values are strings, got int [data/0/i]"),
    ({"i": "12", "d": "1e400"},
     "column `d`: '1e400' is not a valid DOUBLE value (out of range: beyond "
     "±1.7976931348623157e+308) [data/0/d]"),
    ({"blob": "\u0100"}, "column `blob`: '\u0100' is not a valid BLOB value (character 0 "
                         "(U+0100) is not a byte in the ISO-8859-1 mapping of binary values) "
                         "[data/0/blob]"),
])
def test_a_bad_value_names_its_field(row: dict[str, Any], error: str) -> None:
    assert _row(row) == error


def test_values_of_each_type() -> None:
    row = {"i": "-3", "u": "18446744073709551615", "y": "2024", "b": "5", "f": "1.5",
           "d": "-2.25", "blob": "\u00ff\u0005", "e": "2", "s": "3", "dec": "12.50",
           "t": "text", "dt": "2024-01-02 03:04:05", "j": '{"a": 1}', "n": None}
    types = TYPES | {"n": TYPES["t"]}
    assert typed_row(row, types, where="data/0") == {
        "i": -3, "u": 18446744073709551615, "y": 2024, "b": 5, "f": 1.5, "d": -2.25,
        "blob": b"\xff\x05", "e": 2, "s": 3, "dec": "12.50", "t": "text",
        "dt": "2024-01-02 03:04:05", "j": '{"a": 1}', "n": None}


def _decoded(mysql_types: dict[str, str], data: dict[str, str], pk_names: list[str],
             sql_types: dict[str, int] | None = None
             ) -> tuple[list[tuple[str, str]], tuple[str, ...], dict[str, Any]]:
    value = orjson.dumps({"database": "d", "table": "t", "type": "INSERT", "isDdl": False,
                          "es": 1, "pkNames": pk_names, "mysqlType": mysql_types,
                          "sqlType": sql_types or {}, "data": [data], "old": None})
    event = Decoder().decode(SourceMessage(0, None, value)).events[0]
    assert event.definition is not None and event.row is not None
    return ([(c.name, type_text(c.type)) for c in event.definition.columns],
            event.definition.key, event.row)


def test_a_table_whose_messages_change_shape_is_typed_by_each_message() -> None:
    """The decoder reuses a table's last shape only while its columns (in order), types and
    key stay the same."""
    first = _decoded({"id": "int", "c": "int"}, {"id": "1", "c": "2"}, ["id"])
    assert first == ([("id", "int"), ("c", "int")], ("id",), {"id": 1, "c": 2})
    assert _decoded({"id": "int", "c": "int"}, {"id": "1", "c": "2"}, ["id"]) == first
    assert _decoded({"id": "int", "c": "int"}, {"id": "1", "c": "2"}, ["c"])[1] == ("c",)
    assert _decoded({"id": "int", "c": "int"}, {"c": "2", "id": "1"}, ["id"])[0] == [
        ("c", "int"), ("id", "int")]
    assert _decoded({"id": "int", "c": "varchar(8)"}, {"id": "1", "c": "2"}, ["id"]) == (
        [("id", "int"), ("c", "varchar")], ("id",), {"id": 1, "c": "2"})
    assert _decoded({"id": "int", "c": "varchar(8)"}, {"id": "1", "c": "2"}, ["id"],
                    {"id": 4, "c": 2004}) == (  # sqlType BLOB: binary
        [("id", "int"), ("c", "varbinary")], ("id",), {"id": 1, "c": b"2"})
    assert _decoded({"id": "int", "c": "int", "e": "int"}, {"id": "1", "c": "2", "e": "3"},
                    ["id"])[0] == [("id", "int"), ("c", "int"), ("e", "int")]
