"""JSON as Jackson writes it for Java Avro: doubles in Java's ``Double.toString`` form, control
characters upper-case escaped, and the same JSON value back whatever the path taken."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from service.registry.java_json import java_json

JAVA_DOUBLE = re.compile(r"-?\d+\.\d+(E-?\d+)?")


@pytest.mark.parametrize(("number", "java"), [
    (1e10, "1.0E10"), (1e-4, "1.0E-4"), (100.0, "100.0"), (1e22, "1.0E22"),
    (-1.5e-5, "-1.5E-5"), (12345678.9, "1.23456789E7"), (0.001, "0.001"),
    (9999999.0, "9999999.0"), (1e7, "1.0E7"), (0.1, "0.1"), (-0.0, "-0.0"), (0.0, "0.0"),
    (1.7976931348623157e308, "1.7976931348623157E308"), (123.456, "123.456"),
])
def test_doubles_as_java_writes_them(number: float, java: str) -> None:
    assert java_json(number) == java
    assert java_json({"default": number}) == f'{{"default":{java}}}'


def test_strings_numbers_and_keys() -> None:
    value = {"b": [1, "x\u0001\u001f\n\t\"é\\u0041", None, True, 2.5], "a": {}}
    assert java_json(value) == \
        '{"b":[1,"x\\u0001\\u001F\\n\\t\\"é\\\\u0041",null,true,2.5],"a":{}}'
    assert java_json(value, sort_keys=True).startswith('{"a":{},"b":')
    assert java_json({"doc": "naïve ✓"}) == '{"doc":"naïve ✓"}'  # not escaped, as Jackson


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_every_double_round_trips_in_java_notation(number: float) -> None:
    text = java_json(number)
    assert JAVA_DOUBLE.fullmatch(text), text
    assert float(text) == number
    assert ("E" in text) == (number != 0 and not 1e-3 <= abs(number) < 1e7)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=5), children, max_size=4),
    max_leaves=20)


@given(JSON)
def test_any_value_reads_back_the_same(value: object) -> None:
    text = java_json(value)
    assert json.loads(text) == value
    assert "\n" not in text  # one line, as Jackson's compact output
