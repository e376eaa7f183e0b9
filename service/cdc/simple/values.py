"""Simple protocol column values -> typed values, by the column's TableSchema type.

TiCDC writes every value as a JSON string except NULL (``null``) and TIMESTAMP
(``{"location": zone, "value": "YYYY-MM-DD HH:MM:SS[.f]"}``, the value in that zone):
integers, YEAR, BIT (its unsigned number), ENUM (1-based index) and SET (bit mask) as decimal
strings, FLOAT/DOUBLE as decimal text (``1e+06`` in some versions), binary columns as base64.
Early TiCDC 8 builds wrote numbers as JSON numbers; both spellings are accepted.

The Avro encoding (``encoding-format=avro``) sends each value in a union branch: ``long``
(integers, YEAR, BIT, ENUM index, SET mask), ``float`` (FLOAT, 32 bits), ``double``,
``string``, ``bytes`` (binary columns), a ``Timestamp`` record and an ``UnsignedBigint``
record (BIGINT UNSIGNED). The decoder tags them (`AvroValue`) and `avro_value` gives the value
the JSON form would have given, by the column's type: BIGINT UNSIGNED, BIT and SET numbers
above 2^63 arrive as negative 64-bit numbers (2^64-1 as -1) and are made unsigned; a FLOAT is
its shortest decimal (Go's ``FormatFloat(v, 'f', -1, 32)``, as the JSON form prints it);
binary values stay bytes.
"""

from __future__ import annotations

import base64
import binascii
import math
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from service.cdc.errors import MessageFormatError
from service.core.mysql_types import MySQLType, TypeFamily
from service.core.table import ColumnType

__all__ = ["typed_value", "AvroValue", "avro_value"]

_U64 = 1 << 64


def _integer(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.isascii() and value.lstrip("-").isdigit():
        return int(value)
    raise ValueError("not an integer")


def _float(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError("not a number")
    try:
        number = float(value)
    except ValueError as exc:  # Python's text names float(): say it plainly
        raise ValueError("not a number") from exc
    if math.isnan(number):
        raise ValueError("not a number")
    if math.isinf(number):  # 1e400: out of range, not infinite
        raise ValueError("out of range: beyond ±1.7976931348623157e+308")
    return number


def _decimal(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError("not decimal text")
    return str(value)


def _binary(value: Any) -> bytes:
    if isinstance(value, bytes):  # the Avro encoding's ``bytes``
        return value
    try:
        return base64.b64decode(_string(value), validate=True)
    except binascii.Error as exc:
        raise ValueError(f"not base64 ({exc})") from exc


def _index_or_names(value: Any) -> int | str:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    text = _string(value)
    return int(text) if text.isascii() and text.isdigit() else text


def _string(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected a string, got {type(value).__name__}")
    return value


_PARSERS: dict[TypeFamily, Callable[[Any], Any]] = {
    TypeFamily.INTEGER: _integer, TypeFamily.YEAR: _integer, TypeFamily.BIT: _integer,
    TypeFamily.FLOAT: _float, TypeFamily.DOUBLE: _float, TypeFamily.DECIMAL: _decimal,
    TypeFamily.BLOB: _binary, TypeFamily.ENUM: _index_or_names,
    TypeFamily.SET: _index_or_names,
}


def typed_value(column: str, column_type: ColumnType, *, value: Any, field: str) -> Any:
    """The typed value of one ``data``/``old`` entry.

    Raises:
        MessageFormatError: not a value of the column's type (names the column).
    """
    if value is None:
        return None
    if column_type.base is MySQLType.TIMESTAMP and isinstance(value, dict):
        value = value.get("value")
    try:
        return _PARSERS.get(column_type.family, _string)(value)
    except ValueError as exc:
        raise MessageFormatError(
            f"column `{column}`: {str(value)[:40]!r} is not a valid "
            f"{column_type.base.value.upper()} value ({exc})", column=column,
            field=field) from exc


@dataclass(frozen=True, slots=True)
class AvroValue:
    """A ``data``/``old`` value as a Simple-Avro datum held it (`avro_value` finishes it)."""

    value: Any


def avro_value(column_type: ColumnType, tagged: AvroValue) -> Any:
    """The value the JSON form gives for this column, before `typed_value`."""
    value = tagged.value
    if isinstance(value, int) and value < 0:
        family = column_type.family
        if family in (TypeFamily.BIT, TypeFamily.SET) or (
                family is TypeFamily.INTEGER and column_type.unsigned):
            return value + _U64
    elif isinstance(value, float) and column_type.family is TypeFamily.FLOAT:
        return _float32_shortest(value)
    return value


def _float32_shortest(value: float) -> float:
    """The shortest decimal that reads back as the same 32-bit float (as Go writes it)."""
    if not math.isfinite(value):
        return value
    for digits in range(1, 10):
        text = f"{value:.{digits}g}"
        try:
            if struct.unpack("<f", struct.pack("<f", float(text)))[0] == value:
                return float(text)
        except OverflowError:  # rounded past FLT_MAX
            continue
    return value
