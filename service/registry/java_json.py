"""JSON written as Jackson writes it for Java Avro's ``Schema.toString()``: compact, non-ASCII
characters as they are, control characters as upper-case ``\\uXXXX``, and floating-point numbers
in Java's ``Double.toString`` form (``1.0E10``, ``1.0E-4``, ``100.0``), not Python's
(``10000000000.0``, ``0.0001``, ``1e+22``).
"""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any

__all__ = ["java_json"]

_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n",
                  "\f": "\\f", "\r": "\\r"}


def java_json(value: Any, *, sort_keys: bool = False) -> str:
    """`value` (dicts, lists, strings, numbers, booleans, None) as Jackson's compact JSON."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=sort_keys)
    if "\\u" not in text and not _has_float(value):  # the usual case, at C speed
        return text
    return _written(value, sort_keys)


def _has_float(value: Any) -> bool:
    if isinstance(value, dict):
        return any(_has_float(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_float(v) for v in value)
    return isinstance(value, float)


def _written(value: Any, sort_keys: bool) -> str:
    if isinstance(value, dict):
        items = sorted(value.items()) if sort_keys else value.items()
        return "{" + ",".join(f"{_string(str(k))}:{_written(v, sort_keys)}"
                              for k, v in items) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_written(v, sort_keys) for v in value) + "]"
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, float):
        return _double(value)
    return json.dumps(value)  # int, bool, None


def _string(text: str) -> str:
    quoted = json.dumps(text, ensure_ascii=False)
    if "\\u" not in quoted:  # nothing Jackson writes differently
        return quoted
    return '"' + "".join(_SHORT_ESCAPES.get(c) or (f"\\u{ord(c):04X}" if ord(c) < 0x20 else c)
                         for c in text) + '"'


def _double(number: float) -> str:
    """Java's ``Double.toString`` from the shortest digits that round-trip (what Python's
    ``repr`` finds, and JDK 19+ prints): plain notation from 10^-3 up to 10^7, else
    ``d.dddE±n``; always a digit after the point."""
    if not math.isfinite(number):  # not JSON; a parsed schema never holds one
        return json.dumps(number)
    if number == 0:
        return "-0.0" if math.copysign(1.0, number) < 0 else "0.0"
    exact = Decimal(repr(number)).normalize()
    if 1e-3 <= abs(number) < 1e7:
        text = f"{exact:f}"
        return text if "." in text else text + ".0"
    sign, digits, exponent = exact.as_tuple()
    assert isinstance(exponent, int)  # finite
    scientific = len(digits) - 1 + exponent
    fraction = "".join(map(str, digits[1:])) or "0"
    return f"{'-' if sign else ''}{digits[0]}.{fraction}E{scientific}"
