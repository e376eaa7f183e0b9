"""Column types of TiCDC's Debezium messages.

A row message's field schemas say less than the table: Debezium's ``int32`` is SMALLINT
UNSIGNED, MEDIUMINT or INT; ``double`` is DOUBLE or DECIMAL (whose value is then a JSON
double); ``string`` is text or binary (a binary value is base64 text); ``Timestamp`` and
``MicroTime`` do not say the fractional-second precision. TiCDC's ``tidb_type`` (with
``enable-tidb-extension``) names the base type and signedness, not DECIMAL's precision and
scale nor a fractional-second precision. A DDL event's ``tableChanges`` say everything
(``typeName``, ``length``, ``scale``, ``enumValues``). `Known` is a column as far as the
messages read so far tell it; what they do not tell is listed in ``unknown``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from service.cdc.errors import MessageFormatError
from service.core.errors import InvalidTableError
from service.core.mysql_types import MySQLType, TypeFamily, parse_type_string
from service.core.table import ColumnType

__all__ = ["FSP", "INTEGER_KIND", "NUMBER_KIND", "BINARY", "SCALE", "Known", "from_field",
           "from_table_change", "split_members"]

INTEGER_KIND = "the integer type (Debezium's {type} serves several TiDB integer types)"
NUMBER_KIND = "whether it is DOUBLE or DECIMAL (Debezium writes both as a JSON double)"
BINARY = "whether it is text or binary (Debezium writes both as a JSON string)"
SCALE = "DECIMAL precision and scale"
FSP = "the fractional-second precision"

_NAMED: dict[str, MySQLType] = {
    "io.debezium.data.Bits": MySQLType.BIT, "io.debezium.data.Enum": MySQLType.ENUM,
    "io.debezium.data.EnumSet": MySQLType.SET, "io.debezium.time.Date": MySQLType.DATE,
    "io.debezium.time.Timestamp": MySQLType.DATETIME,
    "io.debezium.time.MicroTimestamp": MySQLType.DATETIME,
    "io.debezium.time.ZonedTimestamp": MySQLType.TIMESTAMP,
    "io.debezium.time.MicroTime": MySQLType.TIME, "io.debezium.data.Json": MySQLType.JSON,
    "io.debezium.time.Year": MySQLType.YEAR,
    "io.debezium.data.TiDBVectorFloat32": MySQLType.VECTOR,
}
_PLAIN: dict[str, tuple[MySQLType, str | None]] = {
    "boolean": (MySQLType.BIT, None), "int16": (MySQLType.SMALLINT, INTEGER_KIND),
    "int32": (MySQLType.INT, INTEGER_KIND), "int64": (MySQLType.BIGINT, INTEGER_KIND),
    "float": (MySQLType.FLOAT, None), "double": (MySQLType.DOUBLE, NUMBER_KIND),
    "string": (MySQLType.VARCHAR, BINARY),
}
_MICROS = "io.debezium.time.MicroTimestamp"


@dataclass(frozen=True, slots=True)
class Known:
    """A column as the messages tell it: its type, whether it may be NULL (None: not said),
    the facts they do not tell (``unknown``), and for a DATETIME whether its values are
    microseconds (``MicroTimestamp``) rather than milliseconds."""

    type: ColumnType
    optional: bool | None = None
    unknown: frozenset[str] = frozenset()
    micros: bool = False


def split_members(allowed: str) -> tuple[str, ...]:
    """ENUM members from Debezium's ``allowed`` parameter: joined by ``,``, a ``,`` inside a
    member written ``\\,`` (TiCDC's `EscapeEnumAndSetOptions`)."""
    members, current, escaped = [], [], False
    for char in allowed:
        if escaped:
            current.append(char if char == "," else "\\" + char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == ",":
            members.append("".join(current))
            current = []
        else:
            current.append(char)
    members.append("".join(current) + ("\\" if escaped else ""))
    return tuple(members)


def from_field(field: dict[str, Any], *, where: str) -> Known:
    """The column a row message's field schema (``{"type", "optional", "name",
    "parameters", "field", "tidb_type"}``) describes.

    Raises:
        MessageFormatError: not an object, an unknown type, a ``tidb_type`` that does not
            parse.
    """
    try:
        return _from_field(_FieldKey.of(field))
    except MessageFormatError as exc:
        raise MessageFormatError(exc.message, field=where, **{
            k: v for k, v in exc.details.items() if k != "field"}) from exc


@dataclass(frozen=True, slots=True)
class _FieldKey:
    """The parts of a field schema a column's type derives from (hashable: cached)."""

    column: str
    type: Any
    name: Any
    optional: Any
    tidb_type: Any
    length: Any
    allowed: Any

    @classmethod
    def of(cls, field: Any) -> _FieldKey:
        if not isinstance(field, dict) or not isinstance(field.get("field"), str):
            raise MessageFormatError("a field schema must be an object with a `field` name")
        parameters = field.get("parameters") or {}
        if not isinstance(parameters, dict):
            raise MessageFormatError(f"column `{field['field']}`: `parameters` must be an "
                                     f"object", column=field["field"])
        return cls(field["field"], field.get("type"), field.get("name"), field.get("optional"),
                   field.get("tidb_type"), parameters.get("length"), parameters.get("allowed"))


@functools.lru_cache(maxsize=4096)
def _from_field(key: _FieldKey) -> Known:
    column = key.column
    optional = key.optional if isinstance(key.optional, bool) else None
    base, unknown = _base(key)
    unsigned = False
    if isinstance(key.tidb_type, str):
        try:
            parsed = parse_type_string(key.tidb_type, column=column)
        except InvalidTableError as exc:
            raise MessageFormatError(f"column `{column}`: {exc.message}", column=column) from exc
        base, unsigned, unknown = parsed.base, parsed.unsigned, set()
    length = decimal = None
    elements: tuple[str, ...] = ()
    if base is MySQLType.BIT:
        length = 1 if key.type == "boolean" else _int(key.length, column=column, what="length")
    elif base in (MySQLType.ENUM, MySQLType.SET):
        if not isinstance(key.allowed, str):
            raise MessageFormatError(f"column `{column}`: an {base.name} field needs the "
                                     f"`allowed` parameter", column=column)
        elements = (split_members(key.allowed) if base is MySQLType.ENUM
                    else tuple(key.allowed.split(",")))
    elif base is MySQLType.DECIMAL:
        unknown.add(SCALE)
    elif base in (MySQLType.DATETIME, MySQLType.TIME):
        unknown.add(FSP)
    column_type = ColumnType(base, unsigned=unsigned, length=length, decimal=decimal,
                             elements=elements)
    return Known(column_type, optional, frozenset(u.format(type=key.type) for u in unknown),
                 micros=key.name == _MICROS)


def _base(key: _FieldKey) -> tuple[MySQLType, set[str]]:
    if isinstance(key.name, str) and key.name in _NAMED:
        return _NAMED[key.name], set()
    if isinstance(key.type, str) and key.type in _PLAIN:
        base, unknown = _PLAIN[key.type]
        return base, {unknown} if unknown else set()
    raise MessageFormatError(f"column `{key.column}`: unknown Debezium field type "
                             f"{key.type!r} (name {key.name!r})", column=key.column)


def _int(value: Any, *, column: str, what: str) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise MessageFormatError(f"column `{column}`: `{what}` must be a number, not "
                                 f"{value!r}", column=column) from None


def _unquoted(member: Any) -> str:
    """An ``enumValues`` entry, which TiCDC writes quoted (``'a'``), without its quotes."""
    text = str(member)
    return text[1:-1] if len(text) >= 2 and text[0] == text[-1] == "'" else text


def from_table_change(column: dict[str, Any], *, where: str) -> tuple[str, Known]:
    """A column of a DDL event's ``tableChanges[].table.columns``: its name and exact type
    (``typeName`` such as ``INT UNSIGNED``, ``length``: DECIMAL precision, BIT and string
    widths, and the fractional-second precision of DATETIME, TIMESTAMP and TIME; ``scale``;
    ``enumValues``).

    Raises:
        MessageFormatError: a column without a name or a ``typeName`` that does not parse.
    """
    name, type_name = column.get("name"), column.get("typeName")
    if not isinstance(name, str) or not isinstance(type_name, str):
        raise MessageFormatError("a tableChanges column needs `name` and `typeName`",
                                 field=where)
    try:
        parsed = parse_type_string(type_name.lower(), column=name)
    except InvalidTableError as exc:
        raise MessageFormatError(f"column `{name}`: {exc.message}", column=name,
                                 field=where) from exc
    base, length, scale = parsed.base, column.get("length"), column.get("scale")
    size = length if isinstance(length, int) and length >= 0 else None
    column_type = ColumnType(
        base, unsigned=parsed.unsigned and base.family is TypeFamily.INTEGER,
        length=None if base in (MySQLType.DATETIME, MySQLType.TIMESTAMP, MySQLType.TIME)
        else size,
        decimal=(size or 0) if base in (MySQLType.DATETIME, MySQLType.TIMESTAMP,
                                        MySQLType.TIME)
        else int(scale) if base is MySQLType.DECIMAL and isinstance(scale, (int, float))
        and scale >= 0 else None,
        elements=tuple(_unquoted(v) for v in column.get("enumValues") or ()))
    optional = column.get("optional")
    return name, Known(column_type, optional if isinstance(optional, bool) else None,
                       micros=base is MySQLType.DATETIME and (size or 0) > 3)
