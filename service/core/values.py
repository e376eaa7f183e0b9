"""Row values: plain-JSON rows to flat-avro datums and back (docs/flat-avro.md §5).

Plain JSON (docs/flat-avro.md §5): integers as numbers (BIGINT UNSIGNED too), DECIMAL as an exact
string, binary/BLOB/BIT as base64, ENUM/SET/temporal/JSON as strings, null for SQL NULL.
A `RowCodec` is compiled once per record schema (a table's key or value columns under one set
of options) and then converts rows with one dispatch per column.
"""

from __future__ import annotations

import base64
import binascii
import decimal
import struct
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import orjson

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
from service.core.errors import InvalidValueError, RowValidationError
from service.core.mysql_types import MySQLType, TypeFamily
from service.core.naming import sanitize_name
from service.core.options import BigintUnsignedHandlingMode, DecimalHandlingMode, SchemaOptions
from service.core.table import Column, ColumnType, Table
from service.core.temporal import TemporalFormatError, normalize_temporal

__all__ = [
    "RowCodec",
    "column_codec",
    "identity",
    "Encoder",
    "Decoder",
    "decimal_to_bytes",
    "decimal_from_bytes",
    "decimal_text",
    "unscaled_value",
    "extension_values",
    "commit_physical_time",
]

Encoder = Callable[[Any], Any]
Decoder = Callable[[Any], Any]
_TWO_64 = 1 << 64


def decimal_to_bytes(unscaled: int) -> bytes:
    """Minimal big-endian two's complement of an unscaled decimal (``-128`` -> ``80``)."""
    size = ((unscaled if unscaled >= 0 else ~unscaled).bit_length() + 8) // 8
    return unscaled.to_bytes(size, "big", signed=True)


def decimal_from_bytes(raw: bytes, scale: int) -> decimal.Decimal:
    """The decimal whose unscaled value is the big-endian two's complement `raw` (exact)."""
    unscaled = int.from_bytes(raw, "big", signed=True)
    digits = tuple(int(d) for d in str(abs(unscaled)))
    return decimal.Decimal((1 if unscaled < 0 else 0, digits, -scale))


def decimal_text(unscaled: int, scale: int) -> str:
    """The plain text (``-0.05``) of ``unscaled * 10**-scale``, exact, with `scale` digits."""
    digits = str(abs(unscaled)).rjust(scale + 1, "0")
    text = f"{digits[:-scale]}.{digits[-scale:]}" if scale else digits
    return "-" + text if unscaled < 0 else text


def unscaled_value(number: decimal.Decimal, scale: int) -> int:
    """The integer ``number * 10**scale`` computed exactly (no context rounding)."""
    sign, digits, exponent = number.as_tuple()
    assert isinstance(exponent, int)
    magnitude = int("".join(map(str, digits)) or "0")
    shift = exponent + scale
    magnitude = magnitude * 10**shift if shift >= 0 else magnitude // 10**-shift
    return -magnitude if sign else magnitude


def commit_physical_time(commit_ts: int) -> int:
    """The physical part of a TiDB TSO in milliseconds: ``commit_ts >> 18``."""
    return commit_ts >> 18


def extension_values(*, update: bool, commit_ts: int) -> dict[str, Any]:
    """The values of the three extension fields for an INSERT (``c``) or UPDATE (``u``)."""
    return {
        "_tidb_op": "u" if update else "c",
        "_tidb_commit_ts": commit_ts,
        "_tidb_commit_physical_time": commit_physical_time(commit_ts),
    }


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


def _b64(value: Any) -> bytes:
    text = _require_str(value)
    try:
        return base64.b64decode(text, validate=True)
    except binascii.Error as exc:
        raise DomainError(f"malformed base64 string ({exc})") from exc


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


def column_codec(col_type: ColumnType, options: SchemaOptions) -> tuple[Encoder, Decoder]:
    """Build the (plain -> Avro, Avro -> plain) converters of one column type."""
    family = col_type.family
    if family is TypeFamily.INTEGER:
        return _integer_codec(col_type, options)
    if family is TypeFamily.DECIMAL:
        return _decimal_codec(col_type, options)
    if family is TypeFamily.BIT:
        width = (col_type.bit_width + 7) // 8

        def enc_bit(v: Any) -> bytes:
            number = v if isinstance(v, int) and not isinstance(v, bool) else \
                int.from_bytes(_b64(v), "big")
            return bit_bytes(check_bit(col_type, number))

        def dec_bit(v: bytes) -> str:
            number = check_bit(col_type, int.from_bytes(v, "big"))
            return base64.b64encode(bit_bytes(number, width=width)).decode()

        return enc_bit, dec_bit
    if family is TypeFamily.TEMPORAL:
        base, fsp = col_type.base, col_type.fsp
        return (lambda v: normalize_temporal(_require_str(v), base, fsp)), identity
    if family is TypeFamily.TEXT:
        return _text_encoder(col_type), identity
    if family is TypeFamily.BLOB:
        return _blob_encoder(col_type), (lambda v: base64.b64encode(v).decode("ascii"))
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
    return simple[family], decoder


def identity(value: Any) -> Any:
    """The decoder of types whose Avro datum already is the plain-JSON value."""
    return value


def _require_number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _type_error("a number", value)
    return float(value)


def _json_text(value: Any) -> str:
    text = _require_str(value)
    try:
        orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise DomainError(f"not a JSON document (position {exc.pos}: {exc.msg})") from exc
    return text


def _text_encoder(col_type: ColumnType) -> Encoder:
    limit = length_limit(col_type)

    def encode(value: Any) -> str:
        if type(value) is str and len(value) <= limit:  # fast path: the common, valid case
            return value
        text = _require_str(value)
        check_length(col_type, len(text))
        return text

    encode.fast_check = ("text", limit)  # type: ignore[attr-defined]  # its fast path, for C
    return encode


def _blob_encoder(col_type: ColumnType) -> Encoder:
    def encode(value: Any) -> bytes:
        raw = _b64(value)
        check_length(col_type, len(raw))
        return raw

    return encode


def _integer_codec(col_type: ColumnType, options: SchemaOptions) -> tuple[Encoder, Decoder]:
    unsigned_bigint = col_type.base is MySQLType.BIGINT and col_type.unsigned
    if not unsigned_bigint:
        low, high = int_range(col_type)

        def encode_int(value: Any) -> int:
            if type(value) is int and low <= value <= high:  # fast path
                return value
            return check_int(col_type, _require_int(value))

        encode_int.fast_check = ("int", low, high)  # type: ignore[attr-defined]  # for C
        return encode_int, identity
    if options.bigint_unsigned_handling_mode is BigintUnsignedHandlingMode.STRING:
        return (lambda v: str(check_int(col_type, _require_int(v)))), _integer_text_decoder(
            col_type)

    def encode_long(value: Any) -> int:
        number = check_int(col_type, _require_int(value))
        return number - _TWO_64 if number >= 1 << 63 else number  # the int64 bit pattern

    return encode_long, (lambda v: v + _TWO_64 if v < 0 else v)


def _integer_text_decoder(col_type: ColumnType) -> Decoder:
    def decode(text: str) -> int:
        if text.isascii() and text.isdigit():
            return check_int(col_type, int(text))
        raise DomainError(f"{text[:40]!r} is not an unsigned integer")

    return decode


def _decimal_codec(col_type: ColumnType, options: SchemaOptions) -> tuple[Encoder, Decoder]:
    scale = col_type.scale

    def parse(value: Any) -> decimal.Decimal:
        if isinstance(value, str):
            return normalize_decimal(col_type, decimal_from_text(value))
        if isinstance(value, int) and not isinstance(value, bool):
            return normalize_decimal(col_type, decimal.Decimal(value))
        raise _type_error("a decimal string (numbers with a fraction lose digits in JSON)", value)

    if options.decimal_handling_mode is DecimalHandlingMode.STRING:
        return (lambda v: format(parse(v), "f")), identity

    def encode_precise(value: Any) -> bytes:
        if type(value) is str and (fast := fast_unscaled(col_type, value)) is not None:
            return decimal_to_bytes(fast)
        number = parse(value)
        return decimal_to_bytes(unscaled_value(number, scale))

    def decode_precise(value: Any) -> str:
        if isinstance(value, decimal.Decimal):
            return decimal_text(unscaled_value(value, scale), scale)
        return decimal_text(int.from_bytes(value, "big", signed=True), scale)

    return encode_precise, decode_precise


class RowCodec:
    """Converts rows of one record (a table's key or value columns) to Avro datums and back."""

    __slots__ = ("_fields", "_names", "_allow_extra")

    def __init__(
        self, columns: Sequence[Column], options: SchemaOptions, *, allow_extra: bool = False
    ) -> None:
        """Compile the converters.

        Args:
            columns: the record's columns, in schema order.
            options: the schema options the record was generated with.
            allow_extra: accept rows holding columns outside `columns` (a key codec reads
                full rows); otherwise such a column is an error, never silently dropped.
        """
        self._fields = tuple(
            (c.name, sanitize_name(c.name), c.nullable, *column_codec(c.type, options))
            for c in columns
        )
        self._names = frozenset(c.name for c in columns)
        self._allow_extra = allow_extra

    @classmethod
    def for_value(cls, table: Table, options: SchemaOptions) -> RowCodec:
        """The codec of the table's value record (all columns; no extension fields)."""
        return cls(table.columns, options)

    @classmethod
    def for_key(cls, table: Table, options: SchemaOptions) -> RowCodec | None:
        """The codec of the table's key record, or None when the table has no key."""
        key = table.key_columns()
        return cls(key, options, allow_extra=True) if key else None

    def to_datum(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """Convert a plain-JSON row (column name -> value) into an Avro datum.

        Raises:
            RowValidationError: listing every invalid column: missing NOT NULL columns, wrong
                JSON types, out-of-range values, unknown columns.
        """
        datum: dict[str, Any] = {}
        errors: list[InvalidValueError] = []
        for name, avro_name, nullable, encode, _ in self._fields:
            value = row.get(name)
            if value is None:
                if not nullable:
                    reason = "is NOT NULL" if name in row else "is missing and NOT NULL"
                    errors.append(InvalidValueError(f"column `{name}` {reason}", column=name,
                                                    reason=reason))
                datum[avro_name] = None
                continue
            try:
                datum[avro_name] = encode(value)
            except (DomainError, TemporalFormatError) as exc:
                errors.append(InvalidValueError(f"column `{name}`: {exc}", column=name,
                                                reason=str(exc)))
        if not self._allow_extra:
            for name in sorted(row.keys() - self._names):
                errors.append(InvalidValueError(f"column `{name}` is not in the table",
                                                column=name, reason="unknown column"))
        if errors:
            raise RowValidationError(errors)
        return datum

    def from_datum(self, datum: Mapping[str, Any]) -> dict[str, Any]:
        """Convert an Avro datum of this record back into a plain-JSON row."""
        row: dict[str, Any] = {}
        for name, avro_name, _, _, decode in self._fields:
            value = datum.get(avro_name)
            row[name] = None if value is None else decode(value)
        return row
