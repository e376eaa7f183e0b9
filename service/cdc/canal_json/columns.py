"""Column types and a table definition derived from Canal-JSON ``mysqlType`` + ``pkNames``.

``mysqlType`` is ``int unsigned``, ``varbinary``, ``decimal`` by default, and carries the type
parameters with ``content-compatible=true`` (``decimal(10,4)``, ``enum('a','b')``,
``bit(64)``, ``datetime(3)``). ``sqlType`` 2004 (BLOB) marks a text-named type as binary.
Rules (docs/flat-avro.md §8): columns in ``data`` order; the key is
``pkNames`` (TiCDC lists the primary key only); key columns NOT NULL, the others nullable; no
column defaults. DECIMAL precision/scale, ENUM/SET members and BIT widths missing from the
type string are `MissingFact`s.
"""

from __future__ import annotations

import functools
from typing import Any

from service.cdc.definition import MissingFact, TableDefinition
from service.cdc.errors import MessageFormatError
from service.core.errors import InvalidTableError
from service.core.mysql_types import MySQLType, TypeFamily, parse_type_string
from service.core.table import Column, ColumnType

__all__ = ["SQL_TYPE_BLOB", "column_type", "derive_definition"]

SQL_TYPE_BLOB = 2004
SOURCE = "Canal-JSON message (mysqlType and pkNames)"
_BINARY_OF = {MySQLType.CHAR: MySQLType.BINARY, MySQLType.VARCHAR: MySQLType.VARBINARY,
              MySQLType.TINYTEXT: MySQLType.TINYBLOB, MySQLType.TEXT: MySQLType.BLOB,
              MySQLType.MEDIUMTEXT: MySQLType.MEDIUMBLOB,
              MySQLType.LONGTEXT: MySQLType.LONGBLOB}
_FACTS = {MySQLType.DECIMAL: "DECIMAL precision and scale", MySQLType.ENUM: "the ENUM members",
          MySQLType.SET: "the SET members", MySQLType.BIT: "the BIT width"}
_TEMPORAL_FSP = (MySQLType.TIME, MySQLType.DATETIME, MySQLType.TIMESTAMP)


def column_type(column: str, mysql_type: Any, *, sql_type: Any
                ) -> tuple[ColumnType, str | None]:
    """The column type a ``mysqlType`` string (and ``sqlType`` code) give, and the fact the
    string lacks, if any.

    Every message of a table repeats the same type strings, so the usual (string, int code)
    pairs are parsed once (the parse was half the bridge's CPU).

    Raises:
        MessageFormatError: the type string is missing, unparsable or unsupported.
    """
    if isinstance(mysql_type, str) and (sql_type is None or type(sql_type) is int):
        return _cached_column_type(column, mysql_type, sql_type=sql_type)
    return _column_type(column, mysql_type, sql_type=sql_type)


def _column_type(column: str, mysql_type: Any, *, sql_type: Any
                 ) -> tuple[ColumnType, str | None]:
    if not isinstance(mysql_type, str):
        raise MessageFormatError(f"column `{column}` has no `mysqlType` string",
                                 column=column, field=f"mysqlType/{column}")
    try:
        parsed = parse_type_string(mysql_type, column=column)
    except InvalidTableError as exc:
        raise MessageFormatError(exc.message, column=column,
                                 field=f"mysqlType/{column}") from exc
    base = parsed.base
    if sql_type == SQL_TYPE_BLOB and base in _BINARY_OF:
        base = _BINARY_OF[base]
    numbers, elements = parsed.numbers, parsed.elements or ()
    length = decimal = None
    if base is MySQLType.DECIMAL and numbers:
        length, decimal = numbers[0], numbers[1] if len(numbers) > 1 else 0
    elif base is MySQLType.BIT and numbers:
        length = numbers[0]
    elif base in _TEMPORAL_FSP and numbers:
        decimal = numbers[0]
    known = bool(elements) if base.family in (TypeFamily.ENUM, TypeFamily.SET) else \
        bool(numbers)
    fact = _FACTS.get(base) if not known else None
    unsigned = parsed.unsigned and base.family is TypeFamily.INTEGER
    return ColumnType(base, unsigned=unsigned, length=length, decimal=decimal,
                      elements=elements), fact


def derive_definition(schema: str, table: str, *, types: dict[str, ColumnType],
                      missing: dict[str, str], pk_names: list[str]) -> TableDefinition:
    """The definition implied by one DML message's columns (in ``data`` order). The decoder
    calls it once per distinct row shape (it caches the result)."""
    key = set(pk_names)
    columns = tuple(Column(name, t, nullable=name not in key) for name, t in types.items())
    return TableDefinition(
        schema, table, columns, tuple(n for n in types if n in key), exact=False,
        source=SOURCE, missing=tuple(MissingFact(c, f) for c, f in missing.items()))


_cached_column_type = functools.lru_cache(maxsize=4096)(_column_type)
