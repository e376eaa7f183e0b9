"""The set of legal values of each column type: range, precision, membership and width checks.

Shared by default conversion and row conversion, so a default and a row value are judged by
the same rules. Each check raises `DomainError` with a reason; callers add the column name.
"""

from __future__ import annotations

import decimal
import math
import re
import struct
import sys

from service.core.mysql_types import MySQLType
from service.core.table import ColumnType

__all__ = [
    "DomainError",
    "int_range",
    "check_int",
    "to_float32",
    "check_double",
    "normalize_decimal",
    "decimal_from_text",
    "check_decimal_default",
    "normalize_enum",
    "normalize_set",
    "check_bit",
    "bit_bytes",
    "check_length",
    "length_limit",
    "check_year",
    "escape_enum_members",
]

_SIGNED_BITS = {
    MySQLType.TINYINT: 8, MySQLType.SMALLINT: 16, MySQLType.MEDIUMINT: 24,
    MySQLType.INT: 32, MySQLType.BIGINT: 64,
}


# Quantizing in this context raises instead of rounding; 200 digits hold any DECIMAL(65,30).
_EXACT = decimal.Context(prec=200, traps=[decimal.Inexact, decimal.InvalidOperation])
_QUANTUM = tuple(decimal.Decimal(1).scaleb(-s) for s in range(31))
_FLT_MAX = 3.4028234663852886e38


class DomainError(ValueError):
    """A value outside its column type's domain; the message says why, without the column."""


def int_range(col_type: ColumnType) -> tuple[int, int]:
    """The inclusive range of an integer column type (signed or unsigned)."""
    bits = _SIGNED_BITS[col_type.base]
    if col_type.unsigned:
        return 0, (1 << bits) - 1
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def check_int(col_type: ColumnType, value: int) -> int:
    """Return `value` if it lies in the integer column's range."""
    low, high = int_range(col_type)
    if not low <= value <= high:
        unsigned = " UNSIGNED" if col_type.unsigned else ""
        raise DomainError(
            f"{value} is out of range for {col_type.base.value.upper()}{unsigned} "
            f"[{low}, {high}]"
        )
    return value


def to_float32(value: float, written: object = None) -> float:
    """Round `value` to the nearest float32 and return it widened back to a Python float.

    `written` is how the caller's input spelled the number (``'1e400'``), for the message.
    """
    try:
        packed = struct.pack("<f", value)
    except OverflowError as exc:  # beyond what rounds to +/-FLT_MAX
        raise _not_held(value, written, type_name="FLOAT", largest=_FLT_MAX) from exc
    if not math.isfinite(value):
        raise _not_held(value, written, type_name="FLOAT", largest=_FLT_MAX)
    widened: float = struct.unpack("<f", packed)[0]
    return widened


def check_double(value: float, written: object = None) -> float:
    """Return `value` if a DOUBLE holds it: a number that overflowed to infinity (``1e400``)
    is out of range, not infinite. `written` is the input's spelling, for the message."""
    if math.isfinite(value):
        return value
    raise _not_held(value, written, type_name="DOUBLE", largest=sys.float_info.max)


def _not_held(value: float, written: object, *, type_name: str, largest: float
              ) -> DomainError:
    shown = value if written is None else written
    if math.isnan(value):
        return DomainError(f"{shown} is not a number")
    return DomainError(f"{shown} is out of range for {type_name} (at most ±{largest})")


def decimal_from_text(text: str) -> decimal.Decimal:
    """Parse a decimal literal exactly (no exponent tricks, no NaN/Infinity)."""
    try:
        number = decimal.Decimal(text.strip())
    except decimal.InvalidOperation as exc:
        raise DomainError(f"{text!r} is not a decimal number") from exc
    if not number.is_finite():
        raise DomainError(f"{text!r} is not a finite decimal number")
    return number


def fast_unscaled(col_type: ColumnType, text: str) -> int | None:
    """The unscaled value of a plain decimal literal (``-12.5``) that fits the column, or None
    when the text needs the full parser (exponents, spaces, errors to report)."""
    negative = text.startswith("-")
    whole, _, fraction = (text[1:] if negative else text).partition(".")
    scale = col_type.scale
    if not (whole.isascii() and whole.isdigit()) or len(fraction) > scale:
        return None
    if fraction and not (fraction.isascii() and fraction.isdigit()):
        return None
    if len(whole.lstrip("0")) > col_type.precision - scale or (negative and col_type.unsigned):
        return None
    magnitude = int(whole + fraction.ljust(scale, "0"))
    return -magnitude if negative else magnitude


# TiDB's MyDecimal.FromString (pkg/types/mydecimal.go): leading blanks, a sign, digits with an
# optional point, an optional exponent (`e`, then an integer that may be blank-padded), trailing
# blanks. Anything else is a truncation, which TiDB's DDL refuses.
_MYDECIMAL_TEXT = re.compile(
    r"[ \t]*(?P<sign>[+-]?)(?P<int>[0-9]*)(?:\.(?P<frac>[0-9]*))?"
    r"(?:[eE]\s*(?P<exp>[+-]?[0-9]+))?\s*",
    re.ASCII,
)
_MYDECIMAL_WORDS = 9  # a MyDecimal holds 9 words of 9 digits
_MAX_EXPONENT = 1000  # beyond this any non-zero mantissa overflows or truncates the 81 digits
_HALF_INT32 = (2**31 - 1) // 2  # FromString refuses exponents beyond +-MaxInt32/2, even for 0
_ROUND_HALF_UP = decimal.Context(prec=400, rounding=decimal.ROUND_HALF_UP)


def _words(digits: int) -> int:
    return (digits + 8) // 9


def check_decimal_default(col_type: ColumnType, text: str) -> None:
    """Refuse a DECIMAL column default text exactly when TiDB v8's DDL does.

    TiDB keeps the default as text and checks it by casting it to the column type with
    truncation as an error (pkg/ddl checkDefaultValue -> pkg/table getColDefaultValue ->
    Datum.ConvertTo -> convertToMysqlDecimal / ProduceDecWithSpecifiedTp):

    - the text must parse as a MyDecimal (``FromString``): no other characters, at most 81
      digits (9 words of 9), an exponent whose shifted digits still fit;
    - it is rounded half-up to the column's scale; more fractional digits than the scale is
      only a warning (``3.14159`` in DECIMAL(10,4) is accepted, and stays the stored text);
    - the rounded value may have at most precision - scale integer digits (``ErrOverflow``):
      ``123.45`` or ``99.995`` in DECIMAL(4,2) is refused;
    - a negative value for DECIMAL UNSIGNED is clamped to 0 without an error, so it is kept.

    Raises:
        DomainError: TiDB refuses the text (``Invalid default value``).
    """
    match = _MYDECIMAL_TEXT.fullmatch(text)
    if match is None or not (match["int"] or match["frac"]):
        raise DomainError(f"{text!r} is not a decimal number")
    whole, fraction = match["int"], match["frac"] or ""
    if _words(len(whole)) + _words(len(fraction)) > _MYDECIMAL_WORDS:
        raise DomainError(f"{text!r} has more digits than a decimal holds (81)")
    exponent = int(match["exp"] or 0)
    digits = whole + fraction
    if not -_HALF_INT32 - 1 <= exponent <= _HALF_INT32:
        raise DomainError(f"{text!r} is out of range for a decimal")
    if not digits.strip("0"):
        return  # zero, whatever its exponent
    if exponent:
        if abs(exponent) > _MAX_EXPONENT:
            raise DomainError(f"{text!r} is out of range for a decimal")
        # MyDecimal.Shift: the significant digits must still fit in 81 after the shift.
        first = len(digits) - len(digits.lstrip("0"))
        end = len(digits.rstrip("0"))
        point = len(whole) + exponent
        if _words(max(0, point - first)) + _words(max(0, end - point)) > _MYDECIMAL_WORDS:
            raise DomainError(f"{text!r} has more digits than a decimal holds (81)")
    number = decimal.Decimal(f"{match['sign']}{whole or '0'}.{fraction or '0'}")
    number = number.scaleb(exponent, context=_ROUND_HALF_UP)
    p, s = col_type.precision, col_type.scale
    rounded = number.quantize(_QUANTUM[s], context=_ROUND_HALF_UP)
    integer_digits = max(0, rounded.adjusted() + 1) if rounded else 0
    if integer_digits > p - s:
        raise DomainError(
            f"{text} is out of range for DECIMAL({p},{s}): at most {p - s} integer digits "
            f"(it has {integer_digits} once rounded to {s} fractional digits)"
        )


def normalize_decimal(col_type: ColumnType, number: decimal.Decimal) -> decimal.Decimal:
    """Return `number` with exactly the column's scale, refusing any loss of digits.

    Raises:
        DomainError: more fractional digits than the scale (non-zero ones), or more integer
            digits than precision - scale.
    """
    p, s = col_type.precision, col_type.scale
    # Integer digits first: 1e400 is out of range, even though quantizing it also fails.
    integer_digits = number.adjusted() + 1 if number else 0
    if integer_digits > p - s:
        raise DomainError(
            f"{number} is out of range for DECIMAL({p},{s}): at most {p - s} integer digits "
            f"(it has {integer_digits})"
        )
    try:
        scaled = number.quantize(_QUANTUM[s], context=_EXACT)
    except (decimal.Inexact, decimal.InvalidOperation) as exc:
        raise DomainError(
            f"{number} has more fractional digits than DECIMAL({p},{s}) keeps ({s}); "
            "it would be rounded"
        ) from exc
    if col_type.unsigned and scaled < 0:
        raise DomainError(f"{number} is negative; the column is DECIMAL UNSIGNED")
    return scaled


def normalize_enum(col_type: ColumnType, value: str) -> str:
    """Return `value` if it is one of the ENUM's members."""
    if value not in col_type.elements:
        raise DomainError(f"{value!r} is not a member of ENUM({_members(col_type)})")
    return value


def normalize_set(col_type: ColumnType, value: str) -> str:
    """Return the SET value with its members in definition order (``""`` is the empty set)."""
    if value == "":
        return ""
    chosen = value.split(",")
    unknown = [m for m in chosen if m not in col_type.elements]
    if unknown:
        raise DomainError(f"{unknown[0]!r} is not a member of SET({_members(col_type)})")
    wanted = set(chosen)
    return ",".join(m for m in col_type.elements if m in wanted)


def check_bit(col_type: ColumnType, value: int) -> int:
    """Return `value` if it fits in BIT(n)."""
    width = col_type.bit_width
    if value < 0 or value.bit_length() > width:
        raise DomainError(f"{value} does not fit in BIT({width})")
    return value


def bit_bytes(value: int, *, width: int | None = None) -> bytes:
    """Big-endian bytes of a BIT value: ``width`` bytes, or trimmed to at least one byte."""
    size = width if width is not None else max(1, (value.bit_length() + 7) // 8)
    return value.to_bytes(size, "big")


_LENGTH_LIMITED = {
    MySQLType.CHAR: "characters", MySQLType.VARCHAR: "characters",
    MySQLType.BINARY: "bytes", MySQLType.VARBINARY: "bytes",
}


def length_limit(col_type: ColumnType) -> float:
    """The most characters/bytes a value of the column may hold (infinity when unchecked)."""
    limit = col_type.length
    if col_type.base in _LENGTH_LIMITED and limit is not None and limit >= 0:
        return limit
    return math.inf


def check_length(col_type: ColumnType, size: int) -> None:
    """Refuse a CHAR/VARCHAR (characters) or BINARY/VARBINARY (bytes) value over its length."""
    unit = _LENGTH_LIMITED.get(col_type.base)
    limit = col_type.length
    if unit is not None and limit is not None and limit >= 0 and size > limit:
        raise DomainError(
            f"{size} {unit} exceed {col_type.base.value.upper()}({limit})"
        )


def check_year(value: int) -> int:
    """Return `value` if it is a YEAR (0 or 1901..2155)."""
    if value != 0 and not 1901 <= value <= 2155:
        raise DomainError(f"{value} is not a YEAR (0 or 1901..2155)")
    return value


def escape_enum_members(elements: tuple[str, ...]) -> str:
    """TiCDC's ``allowed`` parameter: members joined by ``,``, a ``,`` inside one as ``\\,``.

    TiCDC also turns ``\\'`` and ``''`` into ``'`` (in that order) after escaping commas.
    """
    escaped = (m.replace(",", "\\,").replace("\\'", "'").replace("''", "'") for m in elements)
    return ",".join(escaped)


def _members(col_type: ColumnType) -> str:
    shown = ",".join(repr(m) for m in col_type.elements[:10])
    return shown + (",..." if len(col_type.elements) > 10 else "")
