"""MySQL/TiDB column types: the closed set flat-avro maps, and the parser of type strings.

A type string is what TiCDC puts in ``mysqlType`` (``int``, ``int unsigned``, ``varbinary``,
and with Canal-JSON's content-compatible mode ``decimal(10,4)`` or ``enum('a','b')``).
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from service.core.errors import InvalidTableError, UnsupportedTypeError

__all__ = ["MySQLType", "TypeFamily", "ParsedType", "parse_type_string", "lookup_type"]


class TypeFamily(enum.Enum):
    """Groups of MySQL types that share one flat-avro mapping rule."""

    INTEGER = "integer"
    FLOAT = "float"
    DOUBLE = "double"
    DECIMAL = "decimal"
    TEXT = "text"
    BLOB = "blob"
    BIT = "bit"
    ENUM = "enum"
    SET = "set"
    JSON = "json"
    TEMPORAL = "temporal"
    YEAR = "year"
    VECTOR = "vector"


class MySQLType(enum.Enum):
    """Every base type flat-avro maps; the value is the canonical lower-case MySQL name."""

    TINYINT = "tinyint"
    SMALLINT = "smallint"
    MEDIUMINT = "mediumint"
    INT = "int"
    BIGINT = "bigint"
    FLOAT = "float"
    DOUBLE = "double"
    DECIMAL = "decimal"
    CHAR = "char"
    VARCHAR = "varchar"
    TINYTEXT = "tinytext"
    TEXT = "text"
    MEDIUMTEXT = "mediumtext"
    LONGTEXT = "longtext"
    BINARY = "binary"
    VARBINARY = "varbinary"
    TINYBLOB = "tinyblob"
    BLOB = "blob"
    MEDIUMBLOB = "mediumblob"
    LONGBLOB = "longblob"
    BIT = "bit"
    ENUM = "enum"
    SET = "set"
    JSON = "json"
    DATE = "date"
    DATETIME = "datetime"
    TIMESTAMP = "timestamp"
    TIME = "time"
    YEAR = "year"
    VECTOR = "vector"

    @property
    def family(self) -> TypeFamily:
        """The mapping family of this type."""
        return _FAMILY[self]


_FAMILY: dict[MySQLType, TypeFamily] = {
    **{t: TypeFamily.INTEGER for t in (MySQLType.TINYINT, MySQLType.SMALLINT,
                                       MySQLType.MEDIUMINT, MySQLType.INT, MySQLType.BIGINT)},
    MySQLType.FLOAT: TypeFamily.FLOAT,
    MySQLType.DOUBLE: TypeFamily.DOUBLE,
    MySQLType.DECIMAL: TypeFamily.DECIMAL,
    **{t: TypeFamily.TEXT for t in (MySQLType.CHAR, MySQLType.VARCHAR, MySQLType.TINYTEXT,
                                    MySQLType.TEXT, MySQLType.MEDIUMTEXT, MySQLType.LONGTEXT)},
    **{t: TypeFamily.BLOB for t in (MySQLType.BINARY, MySQLType.VARBINARY, MySQLType.TINYBLOB,
                                    MySQLType.BLOB, MySQLType.MEDIUMBLOB, MySQLType.LONGBLOB)},
    MySQLType.BIT: TypeFamily.BIT,
    MySQLType.ENUM: TypeFamily.ENUM,
    MySQLType.SET: TypeFamily.SET,
    MySQLType.JSON: TypeFamily.JSON,
    **{t: TypeFamily.TEMPORAL for t in (MySQLType.DATE, MySQLType.DATETIME,
                                        MySQLType.TIMESTAMP, MySQLType.TIME)},
    MySQLType.YEAR: TypeFamily.YEAR,
    MySQLType.VECTOR: TypeFamily.VECTOR,
}

# Synonyms MySQL/TiDB accept, and the names TiDB's TypeToStr prints for some types.
_ALIASES: dict[str, MySQLType] = {
    "bool": MySQLType.TINYINT,
    "boolean": MySQLType.TINYINT,
    "integer": MySQLType.INT,
    "int1": MySQLType.TINYINT,
    "int2": MySQLType.SMALLINT,
    "int3": MySQLType.MEDIUMINT,
    "int4": MySQLType.INT,
    "int8": MySQLType.BIGINT,
    "middleint": MySQLType.MEDIUMINT,
    "real": MySQLType.DOUBLE,
    "double precision": MySQLType.DOUBLE,
    "float4": MySQLType.FLOAT,
    "float8": MySQLType.DOUBLE,
    "numeric": MySQLType.DECIMAL,
    "dec": MySQLType.DECIMAL,
    "fixed": MySQLType.DECIMAL,
    "character": MySQLType.CHAR,
    "nchar": MySQLType.CHAR,
    "national char": MySQLType.CHAR,
    "character varying": MySQLType.VARCHAR,
    "nvarchar": MySQLType.VARCHAR,
    "national varchar": MySQLType.VARCHAR,
    "long": MySQLType.MEDIUMTEXT,
    "long varchar": MySQLType.MEDIUMTEXT,
    "var_string": MySQLType.VARCHAR,
    "tidb_vectorfloat32": MySQLType.VECTOR,
    "tidbvectorfloat32": MySQLType.VECTOR,
    "vector(float32)": MySQLType.VECTOR,
}

# Types MySQL/TiDB have that flat-avro cannot carry: named so the error can say so.
_UNSUPPORTED = frozenset({
    "geometry", "point", "linestring", "polygon", "multipoint", "multilinestring",
    "multipolygon", "geometrycollection", "geomcollection", "null", "unspecified",
})

_TYPE_STRING = re.compile(
    r"""^\s*(?P<name>[a-z_][a-z0-9_]*(?:\s+(?:precision|varying|char|varchar))?)\s*
        (?:\((?P<args>.*)\))?\s*
        (?P<flags>(?:\s*\b(?:unsigned|signed|zerofill)\b)*)\s*$""",
    re.IGNORECASE | re.VERBOSE | re.DOTALL,
)


@dataclass(frozen=True, slots=True)
class ParsedType:
    """A type string taken apart: base type, flags and the parenthesised arguments."""

    base: MySQLType
    unsigned: bool = False
    zerofill: bool = False
    numbers: tuple[int, ...] = ()
    elements: tuple[str, ...] | None = None


def lookup_type(name: str, *, column: str | None = None) -> MySQLType:
    """Resolve a bare type name (any case, MySQL synonyms allowed) to a `MySQLType`.

    Raises:
        UnsupportedTypeError: the name is unknown or has no flat-avro mapping.
    """
    key = " ".join(name.lower().split())
    try:
        return MySQLType(key)
    except ValueError:
        pass
    if key in _ALIASES:
        return _ALIASES[key]
    where = f"column `{column}`: " if column is not None else ""
    if key in _UNSUPPORTED:
        raise UnsupportedTypeError(
            f"{where}MySQL type {name.upper()} has no flat-avro mapping", column=column,
            mysql_type=name
        )
    raise UnsupportedTypeError(f"{where}unknown MySQL type {name!r}", column=column,
                               mysql_type=name)


def parse_type_string(text: str, *, column: str | None = None) -> ParsedType:
    """Parse a ``mysqlType`` string such as ``int unsigned`` or ``decimal(10, 4)``.

    Raises:
        UnsupportedTypeError: unknown or unsupported base type.
        InvalidTableError: the string is not of the form ``name[(args)] [unsigned] [zerofill]``.
    """
    match = _TYPE_STRING.match(text)
    if not match:
        where = f"column `{column}`: " if column is not None else ""
        raise InvalidTableError(
            f"{where}cannot parse the MySQL type {text!r}", column=column, mysql_type=text
        )
    base = lookup_type(match["name"], column=column)
    flags = match["flags"].lower().split()
    args = match["args"]
    numbers: tuple[int, ...] = ()
    elements: tuple[str, ...] | None = None
    if args is not None:
        if base.family in (TypeFamily.ENUM, TypeFamily.SET):
            elements = _parse_elements(args, column=column, text=text)
        elif base is MySQLType.VECTOR and not args.strip().isdigit():
            numbers = ()
        else:
            numbers = _parse_numbers(args, column=column, text=text)
    return ParsedType(
        base=base,
        unsigned="unsigned" in flags or "zerofill" in flags,
        zerofill="zerofill" in flags,
        numbers=numbers,
        elements=elements,
    )


def _parse_numbers(args: str, *, column: str | None, text: str) -> tuple[int, ...]:
    parts = [p.strip() for p in args.split(",")]
    if not all(p.isdigit() for p in parts) or len(parts) > 2:
        raise InvalidTableError(
            f"column `{column}`: bad type arguments in {text!r}", column=column, mysql_type=text
        )
    return tuple(int(p) for p in parts)


def _parse_elements(args: str, *, column: str | None, text: str) -> tuple[str, ...]:
    """Split ``'a','b''c','d\\,e'`` into members, undoing SQL quote and backslash escapes."""
    members: list[str] = []
    i, n = 0, len(args)
    while i < n:
        i = _skip_blanks(args, i)
        if i >= n or args[i] not in "'\"":
            raise InvalidTableError(
                f"column `{column}`: ENUM/SET members must be quoted strings in {text!r}",
                column=column,
                mysql_type=text,
            )
        member, i = _quoted_member(args, i, column=column, text=text)
        members.append(member)
        i = _skip_blanks(args, i)
        if i < n:
            if args[i] != ",":
                raise InvalidTableError(
                    f"column `{column}`: expected ',' between members in {text!r}",
                    column=column,
                    mysql_type=text,
                )
            i += 1
    return tuple(members)


def _skip_blanks(args: str, i: int) -> int:
    while i < len(args) and args[i] in " \t\r\n":
        i += 1
    return i


def _quoted_member(args: str, start: int, *, column: str | None, text: str) -> tuple[str, int]:
    """The member whose opening quote is at `start`, and the index after its closing quote."""
    quote, i, n = args[start], start + 1, len(args)
    buf: list[str] = []
    while i < n:
        ch = args[i]
        if ch == "\\" and i + 1 < n:
            buf.append(args[i + 1])
            i += 2
        elif ch == quote and i + 1 < n and args[i + 1] == quote:
            buf.append(quote)
            i += 2
        elif ch == quote:
            return "".join(buf), i + 1
        else:
            buf.append(ch)
            i += 1
    raise InvalidTableError(
        f"column `{column}`: unterminated member in {text!r}", column=column, mysql_type=text,
    )
