"""Columns of a registered flat-avro record schema: what encoding against the registry needs.

A registered schema is the truth for a topic (the table may have evolved since any DDL the
caller holds). It records each column's Avro type and ``connect.parameters.tidb_type``, the
DECIMAL precision and scale, ENUM/SET members and BIT widths, but not CHAR/VARCHAR lengths,
the exact integer width or the fractional-second digits of temporal columns. Rebuilt columns
therefore take the widest MySQL type their Avro type can carry (``INT UNSIGNED`` in an Avro
``int`` is a MEDIUMINT UNSIGNED, ``TEXT`` is LONGTEXT) and `fsp` None (fraction kept as
written), so every value the registered schema can hold is accepted and nothing else is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from service.core.errors import InvalidInputError
from service.core.mysql_types import MySQLType
from service.core.options import BigintUnsignedHandlingMode, DecimalHandlingMode, SchemaOptions
from service.core.schema import EXTENSION_FIELDS
from service.core.table import Column, ColumnType

__all__ = ["NotFlatAvroError", "RecordField", "RecordLayout", "record_layout"]

_EXTENSION_NAMES = tuple(f["name"] for f in EXTENSION_FIELDS)
_ALLOWED_SPLIT = re.compile(r"(?<!\\),")
_TEMPORAL = {t.value.upper(): t for t in (MySQLType.DATE, MySQLType.DATETIME,
                                          MySQLType.TIMESTAMP, MySQLType.TIME)}
_SIMPLE = {
    "FLOAT": MySQLType.FLOAT, "DOUBLE": MySQLType.DOUBLE, "TEXT": MySQLType.LONGTEXT,
    "BLOB": MySQLType.LONGBLOB, "JSON": MySQLType.JSON, "YEAR": MySQLType.YEAR,
    "TiDBVECTORFloat32": MySQLType.VECTOR,
}


class NotFlatAvroError(InvalidInputError):
    """A registered schema is not a flat-avro record (no ``tidb_type`` where one is needed)."""

    code = "not_flat_avro"


@dataclass(frozen=True, slots=True)
class RecordField:
    """One column field of a registered record.

    Attributes:
        column: the rebuilt column (Avro field name as its name; see the module docstring).
        avro_type: the field's Avro type without nullability (``int``, ``bytes``, ...).
        null_branch: the union index of ``null`` (0 or 1), or None for a NOT NULL field.
        options: the schema options this field was generated under (decimal/bigint modes).
    """

    column: Column
    avro_type: str
    null_branch: int | None
    options: SchemaOptions


@dataclass(frozen=True, slots=True)
class RecordLayout:
    """A registered flat-avro record: its column fields and whether it has extension fields."""

    name: str
    fields: tuple[RecordField, ...]
    extension: bool


def record_layout(schema: dict[str, Any]) -> RecordLayout:
    """Rebuild the columns of a flat-avro key or value record schema.

    Raises:
        NotFlatAvroError: the schema is not a record, or a field is not a flat-avro column
            (the error names the field).
    """
    if not isinstance(schema, dict) or schema.get("type") != "record":
        raise NotFlatAvroError("the registered schema is not an Avro record")
    fields = list(schema.get("fields", ()))
    names = [f.get("name") for f in fields]
    extension = names[-3:] == list(_EXTENSION_NAMES)
    if extension:
        fields = fields[:-3]
    return RecordLayout(str(schema.get("name")), tuple(_field(f) for f in fields), extension)


def _field(field: dict[str, Any]) -> RecordField:
    name = field.get("name")
    branches = field["type"] if isinstance(field.get("type"), list) else [field.get("type")]
    null_branch = branches.index("null") if "null" in branches else None
    value_types = [b for b in branches if b != "null"]
    if len(value_types) != 1 or not isinstance(value_types[0], dict):
        raise NotFlatAvroError(f"field `{name}` is not a flat-avro column", field=name)
    avro = value_types[0]
    tidb_type = (avro.get("connect.parameters") or {}).get("tidb_type")
    if not isinstance(tidb_type, str):
        raise NotFlatAvroError(f"field `{name}` has no connect.parameters.tidb_type",
                               field=name)
    col_type, options = _column_type(str(name), tidb_type=tidb_type, avro=avro)
    column = Column(name=str(name), type=col_type, nullable=null_branch is not None)
    return RecordField(column, avro["type"], null_branch, options)


def _column_type(name: str, *, tidb_type: str, avro: dict[str, Any]
                 ) -> tuple[ColumnType, SchemaOptions]:
    kind, params = avro["type"], avro.get("connect.parameters") or {}
    options = SchemaOptions()
    if tidb_type in ("INT", "INT UNSIGNED", "BIGINT", "BIGINT UNSIGNED"):
        unsigned = tidb_type.endswith("UNSIGNED")
        if tidb_type.startswith("BIGINT"):
            base = MySQLType.BIGINT
            if kind == "string":
                options = SchemaOptions(
                    bigint_unsigned_handling_mode=BigintUnsignedHandlingMode.STRING)
        elif kind == "long":
            base = MySQLType.INT  # INT UNSIGNED is the only INT family member in a long
        else:
            base = MySQLType.MEDIUMINT if unsigned else MySQLType.INT
        return ColumnType(base, unsigned=unsigned), options
    if tidb_type == "DECIMAL":
        if kind == "string":
            mode = SchemaOptions(decimal_handling_mode=DecimalHandlingMode.STRING)
            return ColumnType(MySQLType.DECIMAL), mode
        return ColumnType(MySQLType.DECIMAL, length=int(avro["precision"]),
                          decimal=int(avro.get("scale", 0))), options
    if tidb_type in ("ENUM", "SET"):
        members = tuple(m.replace("\\,", ",")
                        for m in _ALLOWED_SPLIT.split(params.get("allowed", "")))
        return ColumnType(MySQLType(tidb_type.lower()), elements=members), options
    if tidb_type == "BIT":
        return ColumnType(MySQLType.BIT, length=int(params.get("length", 64))), options
    other = _TEMPORAL.get(tidb_type) or _SIMPLE.get(tidb_type)
    if other is None:
        raise NotFlatAvroError(f"field `{name}` has an unknown tidb_type {tidb_type!r}",
                               field=name)
    return ColumnType(other), options
