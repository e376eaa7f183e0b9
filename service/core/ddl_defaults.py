"""A column's ``DEFAULT`` expression (sqlglot's tree) rendered as the text TiDB stores for it.

TiDB keeps a default as text (integers and BIT as numbers in TiCDC's TableSchema); the rules
here follow pkg/ddl getDefaultValue of TiDB v8. Whether the value fits the column's type is
checked later, on this text (`service.core.defaults`).
"""

from __future__ import annotations

import decimal
import math
import re
import sys

from sqlglot import exp
from sqlglot.dialects.mysql import MySQL

from service.core.errors import InvalidDefaultError, InvalidTableError
from service.core.mysql_types import MySQLType, TypeFamily

__all__ = ["default_text"]

_DIALECT = MySQL()
_NOW_FUNCTIONS = frozenset({"NOW", "LOCALTIME", "LOCALTIMESTAMP", "CURRENT_TIMESTAMP"})
_INT_LITERAL = re.compile(r"[0-9]+", re.ASCII)
_DECIMAL_LITERAL = re.compile(r"([0-9]*)\.([0-9]*)", re.ASCII)
_NUMERIC_FAMILIES = frozenset({TypeFamily.INTEGER, TypeFamily.DECIMAL, TypeFamily.FLOAT,
                               TypeFamily.DOUBLE, TypeFamily.YEAR})


def default_text(value: exp.Expression, *, base: MySQLType, column: str) -> str | int | None:
    """Render a DEFAULT expression as TiDB stores it: the literal's text, NULL as None.

    Raises:
        InvalidTableError: the default is an expression, not a literal.
        InvalidDefaultError: a numeric literal beyond DOUBLE's range.
    """
    if isinstance(value, exp.Null):
        return None
    if isinstance(value, exp.Paren):
        value = value.this
    if isinstance(value, exp.Literal):
        return _literal_text(value, base=base, column=column, negative=False)
    if isinstance(value, exp.Neg) and isinstance(value.this, exp.Literal):
        return _literal_text(value.this, base=base, column=column, negative=True)
    if isinstance(value, exp.Boolean):
        return "1" if value.this else "0"
    if _is_now(value):
        return "CURRENT_TIMESTAMP"
    if isinstance(value, exp.BitString):
        return _bits_text(int(value.this or "0", 2), base)
    if isinstance(value, exp.HexString):
        digits: str = value.this
        return _bits_text(int(digits or "0", 16), base, width=(len(digits) + 1) // 2)
    raise InvalidTableError(
        f"column `{column}`: DEFAULT {value.sql(dialect=_DIALECT)} is an expression; "
        "flat-avro needs a literal default",
        column=column,
    )


def _literal_text(literal: exp.Literal, *, base: MySQLType, column: str, negative: bool
                  ) -> str:
    """A (negated) string or number literal: a DECIMAL column's number as TiDB prints it,
    anything else as written."""
    text: str = literal.this
    if base.family is TypeFamily.DECIMAL and not literal.is_string:
        return _decimal_literal_text(text, negative=negative, column=column)
    return "-" + text if negative else text


def _is_now(value: exp.Expression) -> bool:
    """Whether the default is the current time (``CURRENT_TIMESTAMP``, ``NOW()``, ...)."""
    return isinstance(value, (exp.CurrentTimestamp, exp.CurrentDate, exp.CurrentTime)) or (
        isinstance(value, exp.Anonymous) and value.name.upper() in _NOW_FUNCTIONS
    )


def _decimal_literal_text(literal: str, *, negative: bool, column: str) -> str:
    """The text TiDB v8 stores for a numeric ``DEFAULT`` literal of a DECIMAL column.

    pkg/ddl getDefaultValue evaluates the literal (EvalSimpleAst) and keeps ``Datum.ToString()``
    of it; unlike integer and float columns it does not convert it to the column type first, so
    the scale is not applied (``3.14`` in DECIMAL(10,4) stays ``3.14``). The lexer makes
    ``3.140`` a MyDecimal (its written fractional digits kept, leading zeros dropped: ``3.140``,
    ``007.50`` -> ``7.50``, ``.5`` -> ``0.5``, ``5.`` -> ``5``), ``7`` an integer, and anything
    with an exponent a float64, printed by strconv.FormatFloat(f, 'f', -1, 64) (``1e2`` ->
    ``100``, ``1.5e-3`` -> ``0.0015``). A leading ``+`` is dropped by the rewriter (``+3.14`` ->
    ``3.14``); ``-`` negates the value, and a negated zero is zero (``-0`` -> ``0``,
    ``-0.00`` -> ``0.00``; types.DecimalNeg) except for a float (``-0e0`` -> ``-0``).
    Whether the value fits the column is checked later, on this text (defaults.py).

    Raises:
        InvalidDefaultError: a float literal beyond DOUBLE (``1e400``: TiDB's lexer refuses it).
    """
    sign = "-" if negative else ""
    if _INT_LITERAL.fullmatch(literal):
        digits = literal.lstrip("0") or "0"
        return digits if digits == "0" else sign + digits
    match = _DECIMAL_LITERAL.fullmatch(literal)
    if match is not None:
        whole, fraction = match[1].lstrip("0") or "0", match[2]
        text = whole + ("." + fraction if fraction else "")
        return text if not (whole + fraction).strip("0") else sign + text
    number = float(literal)
    if not math.isfinite(number):
        raise InvalidDefaultError(
            f"column `{column}`: DEFAULT {sign}{literal} is out of range for a numeric literal "
            f"(at most ±{sys.float_info.max})",
            column=column,
        )
    return _go_float_text(-number if negative else number)


def _go_float_text(number: float) -> str:
    """Go's strconv.FormatFloat(number, 'f', -1, 64): the shortest digits that read back as
    `number`, in plain notation, without a trailing ``.0``."""
    text = format(decimal.Decimal(repr(number)), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def _bits_text(number: int, base: MySQLType, *, width: int | None = None) -> str | int:
    """A ``b'...'`` / ``0x...`` literal as TiDB keeps it for the column's type.

    BIT columns: the number (TiCDC's TableSchema sends BIT defaults as integers); numeric
    columns: its decimal text; text and binary columns: the literal's big-endian bytes,
    carried as a str whose UTF-8 (surrogateescape) encoding gives those bytes back.
    """
    family = base.family
    if family is TypeFamily.BIT:
        return number
    if family in _NUMERIC_FAMILIES:
        return str(number)
    size = width if width is not None else max(1, (number.bit_length() + 7) // 8)
    return number.to_bytes(size, "big").decode("utf-8", errors="surrogateescape")
