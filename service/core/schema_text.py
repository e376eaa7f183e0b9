"""Schema JSON text byte-identical to what TiCDC registers (Go ``encoding/json.Marshal``).

Go writes compact JSON, escapes ``<`` ``>`` ``&`` U+2028 U+2029 as ``\\uXXXX``, leaves other
non-ASCII raw, and prints floats in their shortest form without ``.0`` and with exponents only
outside [1e-6, 1e21). Key order is the dicts' insertion order, which `service.core.schema`
builds in Go's order.
"""

from __future__ import annotations

import decimal
import json
import re
from typing import Any

__all__ = ["schema_text", "go_float"]

_GO_ESCAPES = str.maketrans({
    "<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029",
})
_SHORT_NEGATIVE_EXPONENT = re.compile(r"e-0(\d)$")


def schema_text(schema: Any) -> str:
    """Serialize a schema (or any JSON value) exactly as Go's ``json.Marshal`` would."""
    parts: list[str] = []
    _write(schema, parts)
    return "".join(parts)


def _write(value: Any, out: list[str]) -> None:
    if isinstance(value, dict):
        _write_object(value, out)
    elif isinstance(value, (list, tuple)):
        _write_array(value, out)
    elif isinstance(value, str):
        out.append(_string(value))
    elif value is None or isinstance(value, bool):
        out.append(json.dumps(value))
    elif isinstance(value, int):
        out.append(str(value))
    elif isinstance(value, float):
        out.append(go_float(value))
    else:
        raise TypeError(f"cannot serialize {type(value).__name__} as schema JSON")


def _write_object(value: dict[Any, Any], out: list[str]) -> None:
    out.append("{")
    for i, (key, item) in enumerate(value.items()):
        if i:
            out.append(",")
        out.append(_string(str(key)))
        out.append(":")
        _write(item, out)
    out.append("}")


def _write_array(value: list[Any] | tuple[Any, ...], out: list[str]) -> None:
    out.append("[")
    for i, item in enumerate(value):
        if i:
            out.append(",")
        _write(item, out)
    out.append("]")


def _string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False).translate(_GO_ESCAPES)


def go_float(value: float) -> str:
    """Format a float64 as Go's ``encoding/json`` does (shortest round-trip digits)."""
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(f"{value} cannot be written as JSON")
    if value == 0:
        return "-0" if str(value).startswith("-") else "0"
    number = decimal.Decimal(repr(value)).normalize()
    if 1e-6 <= abs(value) < 1e21:
        return format(number, "f")
    sign, digits, exponent = number.as_tuple()
    assert isinstance(exponent, int)
    mantissa = str(digits[0]) + ("." + "".join(map(str, digits[1:])) if len(digits) > 1 else "")
    power = exponent + len(digits) - 1
    text = f"{'-' if sign else ''}{mantissa}e{'-' if power < 0 else '+'}{abs(power):02d}"
    return _SHORT_NEGATIVE_EXPONENT.sub(r"e-\1", text)
