"""Debezium field values -> typed values (`service.cdc.events`).

TiCDC's Debezium encoder writes (pkg/sink/codec/debezium, ``writeDebeziumFieldValue``):
BIT(1) as a boolean, wider BITs as base64 of the little-endian bytes; integers as numbers
(BIGINT UNSIGNED as its int64 bit pattern); FLOAT/DOUBLE and DECIMAL as JSON doubles; text as
strings, binary strings as base64; ENUM/SET as member names; DATE as days since 1970-01-01;
DATETIME as UTC epoch milliseconds (fractional-second precision 0-3) or microseconds (4-6);
TIMESTAMP as ``YYYY-MM-DDTHH:MM:SS[.f]Z`` in UTC with exactly its precision's digits (taken
back to the changefeed's time zone, `zone`, which is where an ``avro`` changefeed writes it);
TIME as microseconds; YEAR as a number; JSON and VECTOR as text. A value whose column's facts
are unknown (`columns.Known.unknown`) and matter for it is refused, never guessed.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import functools
import zoneinfo
from collections.abc import Callable
from decimal import Context, Decimal, InvalidOperation
from typing import Any

from service.cdc.debezium.columns import BINARY, FSP, NUMBER_KIND, SCALE, Known
from service.cdc.errors import MessageFormatError
from service.core.errors import InvalidOptionError
from service.core.mysql_types import MySQLType, TypeFamily

__all__ = ["converter", "time_zone"]

_EPOCH = datetime.datetime(1970, 1, 1)
_DAY = datetime.date(1970, 1, 1)
_UNSIGNED_WRAP = 1 << 64
_WIDE = Context(prec=200)  # DECIMAL(65, 30) and a double's 309 digits fit


def time_zone(name: str) -> datetime.tzinfo:
    """The IANA time zone `name` (``UTC``, ``Asia/Shanghai``, ...).

    Raises:
        InvalidOptionError: no such zone (the option ``tz`` named).
    """
    try:
        return datetime.UTC if name.upper() == "UTC" else zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
        raise InvalidOptionError(
            f"option `tz` is {name!r}: not an IANA time zone (UTC, Asia/Shanghai, ...)",
            option="tz") from exc


def converter(known: Known, *, column: str, where: str,
              zone: datetime.tzinfo = datetime.UTC) -> Callable[[Any], Any]:
    """The function that types `column`'s values (`where`: its JSON path, for errors;
    `zone`: the changefeed's time zone, for TIMESTAMP); a column is converted the same way in
    every row of a table version, so this is made once per version.

    The function raises `MessageFormatError` for a value of the wrong JSON kind, bad base64,
    or a value that needs a fact the messages read so far do not give (naming the column and
    the fact).
    """
    column_type = known.type
    family = column_type.family
    missing = [fact for fact in _NEEDS.get(family, ()) if fact in known.unknown]
    convert = _CONVERT[family]
    if family is TypeFamily.TEMPORAL and zone is not datetime.UTC:
        convert = functools.partial(_temporal, zone=zone)

    def typed(value: Any) -> Any:
        if value is None:
            return None
        if missing:
            raise MessageFormatError(
                f"column `{column}`: the message does not say {missing[0]}, which its value "
                f"needs, and no DDL event of its table was read before it; read the topic "
                f"from the table's DDL event (TiCDC writes each table's DDL into its topic)",
                column=column, field=where)
        try:
            return convert(value, known)
        except (TypeError, ValueError, OverflowError, binascii.Error,
                InvalidOperation) as exc:
            raise MessageFormatError(f"column `{column}`: {column_type.base.value} value "
                                     f"{value!r} is not what TiCDC's Debezium encoder writes "
                                     f"({exc})", column=column, field=where) from None

    return typed if missing else _fast(known, typed)


def _fast(known: Known, typed: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """`typed`, with the common values of integer and text columns passed through first."""
    family, column_type = known.type.family, known.type
    if family in (TypeFamily.INTEGER, TypeFamily.YEAR) and not (
            column_type.unsigned and column_type.base is MySQLType.BIGINT):
        def integer(value: Any) -> Any:
            return value if type(value) is int or value is None else typed(value)
        return integer
    if family in (TypeFamily.ENUM, TypeFamily.SET, TypeFamily.JSON, TypeFamily.TEXT):
        def text(value: Any) -> Any:
            return value if type(value) is str or value is None else typed(value)
        return text
    return typed


def _integer(value: Any, known: Known) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("not an integer")
    if value < 0 and known.type.unsigned and known.type.base is MySQLType.BIGINT:
        return value + _UNSIGNED_WRAP  # the int64 bit pattern of a BIGINT UNSIGNED
    return value


def _bit(value: Any, known: Known) -> int:
    del known
    if isinstance(value, bool):
        return int(value)
    if not isinstance(value, str):
        raise TypeError("neither a boolean nor base64 text")
    return int.from_bytes(base64.b64decode(value, validate=True), "little")


def _number(value: Any, known: Known) -> float:
    del known
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError("not a number")
    return float(value)


def _decimal(value: Any, known: Known) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError("not a number")
    scale = known.type.decimal or 0
    exact = Decimal(repr(value) if isinstance(value, float) else value)
    return format(exact.quantize(Decimal(1).scaleb(-scale), context=_WIDE), "f")


def _string(value: Any, known: Known) -> str | bytes:
    if not isinstance(value, str):
        raise TypeError("not a string")
    if known.type.family is TypeFamily.BLOB:
        return base64.b64decode(value, validate=True)
    return value


def _temporal(value: Any, known: Known, *, zone: datetime.tzinfo = datetime.UTC) -> str:
    base = known.type.base
    if base is MySQLType.TIMESTAMP:
        if not isinstance(value, str) or not value.endswith("Z"):
            raise ValueError("not a UTC timestamp text")
        text = value[:-1].replace("T", " ", 1)
        if zone is datetime.UTC:
            return text
        instant = datetime.datetime.fromisoformat(text).replace(tzinfo=datetime.UTC)
        local = instant.astimezone(zone)
        digits = len(text) - 20 if "." in text else 0  # the precision's digits, kept
        return local.strftime("%Y-%m-%d %H:%M:%S") + _fraction(local.microsecond, digits)
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("not an integer")
    if base is MySQLType.DATE:
        return (_DAY + datetime.timedelta(days=value)).isoformat()
    fsp = known.type.decimal or 0
    if base is MySQLType.DATETIME:
        moment = _EPOCH + datetime.timedelta(microseconds=value if known.micros
                                             else value * 1000)
        return moment.strftime("%Y-%m-%d %H:%M:%S") + _fraction(moment.microsecond, fsp)
    sign, micros = ("-", -value) if value < 0 else ("", value)
    seconds, fraction = divmod(micros, 1_000_000)
    minutes, second = divmod(seconds, 60)
    hours, minute = divmod(minutes, 60)
    return f"{sign}{hours:02d}:{minute:02d}:{second:02d}" + _fraction(fraction, fsp)


def _fraction(micros: int, fsp: int) -> str:
    return f".{micros:06d}"[:1 + fsp] if fsp > 0 else ""


def _text(value: Any, known: Known) -> str:
    del known
    if not isinstance(value, str):
        raise TypeError("not a string")
    return value


_CONVERT = {
    TypeFamily.INTEGER: _integer, TypeFamily.YEAR: _integer, TypeFamily.BIT: _bit,
    TypeFamily.FLOAT: _number, TypeFamily.DOUBLE: _number, TypeFamily.DECIMAL: _decimal,
    TypeFamily.TEXT: _string, TypeFamily.BLOB: _string, TypeFamily.TEMPORAL: _temporal,
    TypeFamily.ENUM: _text, TypeFamily.SET: _text, TypeFamily.JSON: _text,
    TypeFamily.VECTOR: _text,
}
_NEEDS = {TypeFamily.DOUBLE: (NUMBER_KIND,), TypeFamily.DECIMAL: (SCALE,),
          TypeFamily.TEXT: (BINARY,), TypeFamily.BLOB: (BINARY,), TypeFamily.TEMPORAL: (FSP,)}
