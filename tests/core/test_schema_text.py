"""Go encoding/json compatible schema text: escapes and float formatting."""

from __future__ import annotations

import pytest

from service.core.schema_text import go_float, schema_text


@pytest.mark.parametrize(
    ("value", "text"),
    [(3.0, "3"), (3.140000104904175, "3.140000104904175"), (1e16, "10000000000000000"),
     (1e20, "100000000000000000000"), (1e21, "1e+21"), (1.5e-7, "1.5e-7"), (1e-6, "0.000001"),
     (-2.5, "-2.5"), (0.0, "0"), (1.7976931348623157e308, "1.7976931348623157e+308"),
     (5e-324, "5e-324"), (123456789.125, "123456789.125")],
)
def test_go_float(value: float, text: str) -> None:
    assert go_float(value) == text


def test_go_escapes_and_key_order() -> None:
    assert schema_text({"b": "<&>", "a": ["中", "\u2028", None, True, 1]}) == (
        '{"b":"\\u003c\\u0026\\u003e","a":["中","\\u2028",null,true,1]}'
    )
