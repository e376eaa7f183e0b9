"""Column defaults as TiCDC writes them into flat-avro field ``default`` values
(docs/flat-avro.md §4).

TiDB stores defaults as text; TiCDC parses that text per column type: integers become JSON
numbers, FLOAT is rounded to float32 and widened, BIGINT UNSIGNED wraps in long mode, binary
and BIT defaults are written as base64 text, everything else (DECIMAL in string mode too)
stays the stored text.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

from service.core.domain import (
    DomainError,
    bit_bytes,
    check_bit,
    check_decimal_default,
    check_double,
    check_int,
    check_length,
    check_year,
    normalize_enum,
    normalize_set,
    to_float32,
)
from service.core.errors import InvalidDefaultError, InvalidOptionError
from service.core.mysql_types import MySQLType, TypeFamily
from service.core.options import BigintUnsignedHandlingMode, SchemaOptions, TicdcRelease
from service.core.table import Column, ColumnType
from service.core.temporal import TemporalFormatError, normalize_temporal

__all__ = ["avro_default", "release_default"]

_CURRENT = frozenset({
    "CURRENT_TIMESTAMP", "CURRENT_DATE", "CURRENT_TIME", "NOW()", "LOCALTIME", "LOCALTIMESTAMP",
})


# The origin default TiDB gives a NOT NULL column added without DEFAULT (the value it fills
# the existing rows with), as tiflow v8.3-v8.5.1 wrote it: checked against those encoders
# (tests/core/golden/ticdc/releases) for these families only.
_ORIGIN_DEFAULTS: dict[TypeFamily, str] = {
    TypeFamily.INTEGER: "0", TypeFamily.DECIMAL: "0", TypeFamily.TEXT: "",
}
_ORIGIN_TEMPORAL = {MySQLType.DATETIME: "0000-00-00 00:00:00"}


def release_default(column: Column, options: SchemaOptions) -> Column:
    """`column` as the targeted TiCDC release line takes its default: tiflow v8.3-v8.5.1 gave
    a NOT NULL column added without DEFAULT its origin default (`Column.added_without_default`).

    Raises:
        InvalidOptionError: that origin default is not known for the column's type.
    """
    if options.ticdc_release is not TicdcRelease.TIFLOW_V8_3 or not column.added_without_default:
        return column
    kind = column.type
    origin = (_ORIGIN_DEFAULTS.get(kind.family) if kind.family is not TypeFamily.TEMPORAL
              else _ORIGIN_TEMPORAL.get(kind.base))
    if kind.family is TypeFamily.ENUM and kind.elements:
        origin = kind.elements[0]
    if origin is None:
        raise InvalidOptionError(
            f"column `{column.name}` was added NOT NULL without a DEFAULT: ticdc_release "
            f"{options.ticdc_release.value} writes TiDB's origin default for it, which flatavro "
            f"knows for integers, DECIMAL, text, DATETIME and ENUM only, not "
            f"{_type_name(kind)}", option="ticdc_release", column=column.name)
    return Column(column.name, kind, column.nullable, origin)


def avro_default(column: Column, options: SchemaOptions) -> Any:
    """The Avro ``default`` of `column`'s field value, or None when the column has none.

    The default is validated even where TiCDC does not emit it (precise DECIMAL), so a table
    with an impossible default is refused whatever the options.

    Raises:
        InvalidDefaultError: the default is not a value of the column type.
    """
    if column.default is None:
        return None
    text = _as_text(column.default)
    try:
        if column.type.family is TypeFamily.INTEGER:
            return _integer(column.type, text, options=options)
        return _CONVERTERS[column.type.family](column.type, text)
    except (DomainError, TemporalFormatError, ValueError) as exc:
        raise InvalidDefaultError(
            f"column `{column.name}`: DEFAULT {column.default!r} is not a value of "
            f"{_type_name(column.type)}: {exc}",
            column=column.name,
        ) from exc


def _as_text(raw: str | int | float | bool) -> str:
    if isinstance(raw, bool):
        return "1" if raw else "0"
    if isinstance(raw, float) and raw.is_integer():
        return str(int(raw))
    return str(raw)


def _type_name(col_type: ColumnType) -> str:
    return col_type.base.value.upper() + (" UNSIGNED" if col_type.unsigned else "")


def _integer(col_type: ColumnType, text: str, *, options: SchemaOptions) -> int | str:
    value = check_int(col_type, _parse_int(text))
    if col_type.base is MySQLType.BIGINT and col_type.unsigned:
        if options.bigint_unsigned_handling_mode is BigintUnsignedHandlingMode.STRING:
            return text.strip()
        return value - (1 << 64) if value >= 1 << 63 else value
    return value


def _parse_int(text: str) -> int:
    stripped = text.strip()
    body = stripped[1:] if stripped[:1] in "+-" else stripped
    if not body.isdigit():
        raise DomainError(f"{text!r} is not an integer")
    return int(stripped)


def _float(col_type: ColumnType, text: str) -> float:
    return to_float32(float(text), repr(text))


def _double(col_type: ColumnType, text: str) -> float:
    return check_double(float(text), repr(text))


def _decimal(col_type: ColumnType, text: str) -> str:
    # TiDB stores a DECIMAL default as the literal's text, not converted to the column's scale
    # (pkg/ddl getDefaultValue), and TiCDC's string mode writes that text unchanged
    # (tiflow pkg/sink/codec/avro columnToAvroData: col.Value.(string)).
    check_decimal_default(col_type, text)
    return text


def _text(col_type: ColumnType, text: str) -> str:
    check_length(col_type, len(text))
    return text


def _blob(col_type: ColumnType, text: str) -> str:
    raw = text.encode("utf-8", errors="surrogateescape")
    check_length(col_type, len(raw))
    if col_type.base is MySQLType.BINARY and col_type.length:
        raw = raw.ljust(col_type.length, b"\x00")  # TiDB pads BINARY(n) defaults with NULs
    return base64.b64encode(raw).decode("ascii")


def _bit(col_type: ColumnType, text: str) -> str:
    value = check_bit(col_type, _parse_int(text))
    width = (col_type.bit_width + 7) // 8  # TiDB keeps BIT defaults at ceil(M/8) bytes
    return base64.b64encode(bit_bytes(value, width=width)).decode("ascii")


def _enum(col_type: ColumnType, text: str) -> str:
    return normalize_enum(col_type, text)


def _set(col_type: ColumnType, text: str) -> str:
    return normalize_set(col_type, text)


def _verbatim(col_type: ColumnType, text: str) -> str:
    return text


def _temporal(col_type: ColumnType, text: str) -> str:
    upper = text.strip().upper()
    if upper in _CURRENT or upper.startswith(("CURRENT_TIMESTAMP(", "NOW(")):
        # TiDB stores the function name, without its precision.
        return "CURRENT_DATE" if upper.startswith("CURRENT_DATE") else "CURRENT_TIMESTAMP"
    return normalize_temporal(text.strip(), col_type.base, fsp=col_type.fsp)


def _year(col_type: ColumnType, text: str) -> int:
    return check_year(_parse_int(text))


# Every family but INTEGER, whose BIGINT UNSIGNED default depends on the options.
_CONVERTERS: dict[TypeFamily, Callable[[ColumnType, str], Any]] = {
    TypeFamily.FLOAT: _float,
    TypeFamily.DOUBLE: _double,
    TypeFamily.DECIMAL: _decimal,
    TypeFamily.TEXT: _text,
    TypeFamily.BLOB: _blob,
    TypeFamily.BIT: _bit,
    TypeFamily.ENUM: _enum,
    TypeFamily.SET: _set,
    TypeFamily.JSON: _verbatim,
    TypeFamily.TEMPORAL: _temporal,
    TypeFamily.YEAR: _year,
    TypeFamily.VECTOR: _verbatim,
}
