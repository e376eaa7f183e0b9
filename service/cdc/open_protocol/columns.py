"""A table definition derived from Open Protocol column objects (type codes + flags).

Rules (docs/flat-avro.md §8): columns in message order (TiCDC writes them in
name order); the key is the columns with the handle-key flag (``f & 2``) or ``"h": true``;
NOT NULL unless the nullable flag (``f & 64``) is set, and, for messages without flags, the
key columns NOT NULL and the others nullable; UNSIGNED from ``f & 128``; binary CHAR/VARCHAR/
TEXT from ``f & 1``; no column defaults. The codes do not carry DECIMAL precision/scale,
ENUM/SET members or BIT widths, and messages without flags do not say whether a string
column is binary: those are `MissingFact`s.
"""

from __future__ import annotations

from typing import Any

from service.cdc.definition import MissingFact, TableDefinition
from service.cdc.errors import MessageFormatError
from service.cdc.open_protocol.values import BINARY_FLAG
from service.core.mysql_types import MySQLType
from service.core.table import Column, ColumnType

__all__ = ["HANDLE_KEY_FLAG", "NULLABLE_FLAG", "UNSIGNED_FLAG", "derive_definition"]

HANDLE_KEY_FLAG = 0x02
NULLABLE_FLAG = 0x40
UNSIGNED_FLAG = 0x80
SOURCE = "Open Protocol message (type codes and flags)"

_PLAIN: dict[int, MySQLType] = {
    1: MySQLType.TINYINT, 2: MySQLType.SMALLINT, 3: MySQLType.INT, 4: MySQLType.FLOAT,
    5: MySQLType.DOUBLE, 7: MySQLType.TIMESTAMP, 8: MySQLType.BIGINT, 9: MySQLType.MEDIUMINT,
    10: MySQLType.DATE, 11: MySQLType.TIME, 12: MySQLType.DATETIME, 13: MySQLType.YEAR,
    14: MySQLType.DATE, 16: MySQLType.BIT, 225: MySQLType.VECTOR, 245: MySQLType.JSON,
    246: MySQLType.DECIMAL, 247: MySQLType.ENUM, 248: MySQLType.SET,
}
_STRINGS: dict[int, tuple[MySQLType, MySQLType]] = {  # code -> (text type, binary type)
    15: (MySQLType.VARCHAR, MySQLType.VARBINARY), 253: (MySQLType.VARCHAR, MySQLType.VARBINARY),
    254: (MySQLType.CHAR, MySQLType.BINARY), 249: (MySQLType.TINYTEXT, MySQLType.TINYBLOB),
    250: (MySQLType.MEDIUMTEXT, MySQLType.MEDIUMBLOB),
    251: (MySQLType.LONGTEXT, MySQLType.LONGBLOB), 252: (MySQLType.TEXT, MySQLType.BLOB),
}
_UNKNOWN_PARAMETERS = {
    MySQLType.DECIMAL: "DECIMAL precision and scale",
    MySQLType.ENUM: "the ENUM members",
    MySQLType.SET: "the SET members",
    MySQLType.BIT: "the BIT width",
}
_INTEGERS = (MySQLType.TINYINT, MySQLType.SMALLINT, MySQLType.MEDIUMINT, MySQLType.INT,
             MySQLType.BIGINT)


def derive_definition(schema: str, table: str, *, columns: dict[str, dict[str, Any]]
                      ) -> TableDefinition:
    """The definition implied by a full row image (`columns`: name -> column object).

    Raises:
        MessageFormatError: a type code with no flat-avro mapping (NULL 6, GEOMETRY 255).
    """
    built: list[Column] = []
    key: list[str] = []
    missing: list[MissingFact] = []
    for name, obj in columns.items():
        flags = obj.get("f")
        handle = obj.get("h") is True or (flags is not None and bool(flags & HANDLE_KEY_FLAG))
        column_type, fact = _column_type(name, obj["t"], flags=flags)
        if fact is not None:
            missing.append(MissingFact(name, fact))
        nullable = not handle if flags is None else bool(flags & NULLABLE_FLAG)
        built.append(Column(name, column_type, nullable=nullable))
        if handle:
            key.append(name)
    return TableDefinition(schema, table, tuple(built), tuple(key), exact=False,
                           source=SOURCE, missing=tuple(missing))

def _column_type(name: str, code: int, *, flags: int | None) -> tuple[ColumnType, str | None]:
    unsigned = flags is not None and bool(flags & UNSIGNED_FLAG)
    if code in _STRINGS:
        text, binary = _STRINGS[code]
        if flags is None:
            return ColumnType(text), ("whether it is binary (messages without flags do not "
                                      "say)")
        return ColumnType(binary if flags & BINARY_FLAG else text), None
    base = _PLAIN.get(code)
    if base is None:
        raise MessageFormatError(
            f"column `{name}`: type code {code} has no flat-avro mapping", column=name,
            field=f"{name}/t")
    return (ColumnType(base, unsigned=unsigned and base in _INTEGERS),
            _UNKNOWN_PARAMETERS.get(base))
