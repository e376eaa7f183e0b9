"""One column type's converters: a plain-JSON value to its flat-avro datum and back.

Plain JSON (docs/flat-avro.md §5): integers as numbers (BIGINT UNSIGNED too), DECIMAL as an exact
string, binary/BLOB/BIT as base64, ENUM/SET/temporal/JSON as strings. Each encoder checks the
value against the column type's domain (`service.core.domain`) and raises `DomainError` or
`TemporalFormatError` with the reason; callers add the column name.
"""

from __future__ import annotations

import base64
import binascii
import decimal
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from service.core.avro_decimal import decimal_text, decimal_to_bytes, unscaled_value
from service.core.domain import (
    DomainError,
    bit_bytes,
    check_bit,
    check_double,
    check_int,
    check_length,
    check_year,
    decimal_from_text,
    fast_unscaled,
    int_range,
    length_limit,
    normalize_decimal,
    normalize_enum,
    normalize_set,
    to_float32,
)
from service.core.mysql_types import MySQLType, TypeFamily
from service.core.options import BigintUnsignedHandlingMode, DecimalHandlingMode, SchemaOptions
from service.core.table import ColumnType
from service.core.temporal import normalize_temporal

__all__ = ["ColumnCodec", "Decoder", "Encoder", "column_codec", "identity"]

Encoder = Callable[[Any], Any]
Decoder = Callable[[Any], Any]
_TWO_64 = 1 << 64


def identity(value: Any) -> Any:
    """The decoder of types whose Avro datum already is the plain-JSON value."""
    return value


@dataclass(frozen=True, slots=True)
class ColumnCodec:
    """The converters of one column type.

    Attributes:
        encode: plain-JSON value -> Avro datum (raises `DomainError`/`TemporalFormatError`).
        decode: Avro datum -> plain-JSON value (`identity` when they are the same).
        fast_check: a check the compiled writer may make instead of calling `encode`, for the
            common valid value: ``("int", low, high)`` (an int in the range, written as is)
            or ``("text", limit)`` (a str of at most `limit` characters); None: always call.
    """

    encode: Encoder
    decode: Decoder
    fast_check: tuple[Any, ...] | None = None


def column_codec(col_type: ColumnType, options: SchemaOptions) -> ColumnCodec:
    """Build the (plain -> Avro, Avro -> plain) converters of one column type."""
    family = col_type.family
    build = _BUILDERS.get(family)
    if build is not None:
        return build(col_type, options)
    simple: dict[TypeFamily, Encoder] = {
        TypeFamily.FLOAT: lambda v: to_float32(_require_number(v)),
        TypeFamily.DOUBLE: lambda v: check_double(_require_number(v)),
        TypeFamily.ENUM: lambda v: normalize_enum(col_type, _require_str(v)),
        TypeFamily.SET: lambda v: normalize_set(col_type, _require_str(v)),
        TypeFamily.JSON: _json_text,
        TypeFamily.YEAR: lambda v: check_year(_require_int(v)),
        TypeFamily.VECTOR: _require_str,
    }
    decoder = _float32_shortest if family is TypeFamily.FLOAT else identity
    return ColumnCodec(simple[family], decoder)


# --- JSON value checks ---------------------------------------------------------------------

def _type_error(expected: str, value: Any) -> DomainError:
    return DomainError(f"expected {expected}, got JSON {_json_kind(value)}")


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _require_int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, float) and abs(value) == float("inf"):
            raise DomainError(f"{value} is out of range (the number overflows)")
        if isinstance(value, float) and value == value:
            raise DomainError(f"{value} is not an integer (it has a fraction)")
        raise _type_error("an integer", value)
    return value


def _require_str(value: Any) -> str:
    if not isinstance(value, str):
        raise _type_error("a string", value)
    return value


def _require_number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _type_error("a number", value)
    return float(value)


def _b64(value: Any) -> bytes:
    text = _require_str(value)
    try:
        return base64.b64decode(text, validate=True)
    except binascii.Error as exc:
        raise DomainError(f"malformed base64 string ({exc})") from exc


def _json_text(value: Any) -> str:
    text = _require_str(value)
    try:
        orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise DomainError(f"not a JSON document (position {exc.pos}: {exc.msg})") from exc
    return text


def _float32_shortest(value: float) -> float:
    """The shortest decimal that reads back as the same float32 (3.140000104904175 -> 3.14)."""
    packed = struct.pack("<f", value)
    for digits in range(1, 10):
        candidate = float(f"{value:.{digits}g}")
        try:
            if struct.pack("<f", candidate) == packed:
                return candidate
        except OverflowError:  # rounding up past FLT_MAX: try more digits
            continue
    return value


# --- The families with more than a check ----------------------------------------------------

def _integer_codec(col_type: ColumnType, options: SchemaOptions) -> ColumnCodec:
    unsigned_bigint = col_type.base is MySQLType.BIGINT and col_type.unsigned
    if not unsigned_bigint:
        low, high = int_range(col_type)

        def encode_int(value: Any) -> int:
            if type(value) is int and low <= value <= high:  # fast path
                return value
            return check_int(col_type, _require_int(value))

        return ColumnCodec(encode_int, identity, fast_check=("int", low, high))
    if options.bigint_unsigned_handling_mode is BigintUnsignedHandlingMode.STRING:
        return ColumnCodec(lambda v: str(check_int(col_type, _require_int(v))),
                           _integer_text_decoder(col_type))

    def encode_long(value: Any) -> int:
        number = check_int(col_type, _require_int(value))
        return number - _TWO_64 if number >= 1 << 63 else number  # the int64 bit pattern

    return ColumnCodec(encode_long, lambda v: v + _TWO_64 if v < 0 else v)


def _integer_text_decoder(col_type: ColumnType) -> Decoder:
    def decode(text: str) -> int:
        if text.isascii() and text.isdigit():
            return check_int(col_type, int(text))
        raise DomainError(f"{text[:40]!r} is not an unsigned integer")

    return decode


def _decimal_codec(col_type: ColumnType, options: SchemaOptions) -> ColumnCodec:
    scale = col_type.scale

    def parse(value: Any) -> decimal.Decimal:
        if isinstance(value, str):
            return normalize_decimal(col_type, decimal_from_text(value))
        if isinstance(value, int) and not isinstance(value, bool):
            return normalize_decimal(col_type, decimal.Decimal(value))
        raise _type_error("a decimal string (numbers with a fraction lose digits in JSON)", value)

    if options.decimal_handling_mode is DecimalHandlingMode.STRING:
        return ColumnCodec(lambda v: format(parse(v), "f"), identity)

    def encode_precise(value: Any) -> bytes:
        if type(value) is str and (fast := fast_unscaled(col_type, value)) is not None:
            return decimal_to_bytes(fast)
        number = parse(value)
        return decimal_to_bytes(unscaled_value(number, scale))

    def decode_precise(value: Any) -> str:
        if isinstance(value, decimal.Decimal):
            return decimal_text(unscaled_value(value, scale), scale)
        return decimal_text(int.from_bytes(value, "big", signed=True), scale)

    return ColumnCodec(encode_precise, decode_precise)


def _bit_codec(col_type: ColumnType, options: SchemaOptions) -> ColumnCodec:
    width = (col_type.bit_width + 7) // 8

    def enc_bit(v: Any) -> bytes:
        number = v if isinstance(v, int) and not isinstance(v, bool) else \
            int.from_bytes(_b64(v), "big")
        return bit_bytes(check_bit(col_type, number))

    def dec_bit(v: bytes) -> str:
        number = check_bit(col_type, int.from_bytes(v, "big"))
        return base64.b64encode(bit_bytes(number, width=width)).decode()

    return ColumnCodec(enc_bit, dec_bit)


def _temporal_codec(col_type: ColumnType, options: SchemaOptions) -> ColumnCodec:
    base, fsp = col_type.base, col_type.fsp
    return ColumnCodec(lambda v: normalize_temporal(_require_str(v), base, fsp=fsp), identity)


def _text_codec(col_type: ColumnType, options: SchemaOptions) -> ColumnCodec:
    limit = length_limit(col_type)

    def encode(value: Any) -> str:
        if type(value) is str and len(value) <= limit:  # fast path: the common, valid case
            return value
        text = _require_str(value)
        check_length(col_type, len(text))
        return text

    return ColumnCodec(encode, identity, fast_check=("text", limit))


def _blob_codec(col_type: ColumnType, options: SchemaOptions) -> ColumnCodec:
    def encode(value: Any) -> bytes:
        raw = _b64(value)
        check_length(col_type, len(raw))
        return raw

    return ColumnCodec(encode, lambda v: base64.b64encode(v).decode("ascii"))


_BUILDERS: dict[TypeFamily, Callable[[ColumnType, SchemaOptions], ColumnCodec]] = {
    TypeFamily.INTEGER: _integer_codec,
    TypeFamily.DECIMAL: _decimal_codec,
    TypeFamily.BIT: _bit_codec,
    TypeFamily.TEMPORAL: _temporal_codec,
    TypeFamily.TEXT: _text_codec,
    TypeFamily.BLOB: _blob_codec,
}
