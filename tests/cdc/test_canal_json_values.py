"""Canal-JSON row values: `typed_row` (the per-row fast path the converter uses) gives what
`typed_value` gives for each value, and for a bad value the same error, naming the field."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from service.cdc.canal_json.columns import column_type
from service.cdc.canal_json.values import typed_row, typed_value
from service.cdc.errors import MessageFormatError

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


@settings(max_examples=400, deadline=None)
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
