"""flat-avro key/value schema generation, exactly as TiCDC's ``avro`` protocol builds them.

Dicts are built in the key order TiCDC's Go encoder writes (record: type, name, namespace,
fields; field: default, name, type; column type: type, connect.parameters, logicalType,
precision, scale), so `service.core.schema_text.schema_text` reproduces TiCDC's text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from service.core.defaults import avro_default, release_default
from service.core.domain import escape_enum_members
from service.core.errors import InvalidDefaultError, NameCollisionError
from service.core.mysql_types import MySQLType, TypeFamily
from service.core.naming import sanitize_name
from service.core.options import (
    BigintUnsignedHandlingMode,
    DecimalHandlingMode,
    SchemaOptions,
    TicdcRelease,
)
from service.core.table import Column, ColumnType, Table

__all__ = [
    "BigintUnsignedHandlingMode",
    "DecimalHandlingMode",
    "SchemaOptions",
    "TicdcRelease",
    "SchemaPair",
    "EXTENSION_FIELDS",
    "generate_schemas",
    "column_avro_type",
    "tidb_type",
    "record_namespace",
]

EXTENSION_FIELDS: tuple[dict[str, Any], ...] = (
    {"default": "", "name": "_tidb_op", "type": "string"},
    {"default": 0, "name": "_tidb_commit_ts", "type": "long"},
    {"default": 0, "name": "_tidb_commit_physical_time", "type": "long"},
)
"""The value-schema fields ``enable_tidb_extension`` appends after the columns."""

_TIDB_TYPE = {
    TypeFamily.INTEGER: "INT", TypeFamily.FLOAT: "FLOAT", TypeFamily.DOUBLE: "DOUBLE",
    TypeFamily.DECIMAL: "DECIMAL", TypeFamily.TEXT: "TEXT", TypeFamily.BLOB: "BLOB",
    TypeFamily.BIT: "BIT", TypeFamily.ENUM: "ENUM", TypeFamily.SET: "SET",
    TypeFamily.JSON: "JSON", TypeFamily.YEAR: "YEAR", TypeFamily.VECTOR: "TiDBVECTORFloat32",
}
_AVRO_PRIMITIVE = {
    TypeFamily.FLOAT: "float", TypeFamily.DOUBLE: "double", TypeFamily.TEXT: "string",
    TypeFamily.BLOB: "bytes", TypeFamily.BIT: "bytes", TypeFamily.ENUM: "string",
    TypeFamily.SET: "string", TypeFamily.JSON: "string", TypeFamily.TEMPORAL: "string",
    TypeFamily.YEAR: "int", TypeFamily.VECTOR: "string",
}


@dataclass(frozen=True, slots=True)
class SchemaPair:
    """The two schemas of one table under one set of options.

    Attributes:
        key_schema: the key record, or None when the table has no handle key.
        value_schema: the value record (all columns, then the extension fields if enabled).
        key_columns: names of the key columns, in table order.
    """

    key_schema: dict[str, Any] | None
    value_schema: dict[str, Any]
    key_columns: tuple[str, ...]


def tidb_type(col_type: ColumnType) -> str:
    """The ``tidb_type`` connect parameter: the base name, `` UNSIGNED`` for integers only."""
    family = col_type.family
    if family is TypeFamily.INTEGER:
        base = "BIGINT" if col_type.base is MySQLType.BIGINT else "INT"
        return base + " UNSIGNED" if col_type.unsigned else base
    if family is TypeFamily.TEMPORAL:
        return col_type.base.value.upper()
    return _TIDB_TYPE[family]


def column_avro_type(col_type: ColumnType, options: SchemaOptions) -> dict[str, Any]:
    """The Avro type object of one column (without nullability)."""
    family = col_type.family
    params: dict[str, str] = {}
    if family is TypeFamily.ENUM or family is TypeFamily.SET:
        params["allowed"] = escape_enum_members(col_type.elements)
    elif family is TypeFamily.BIT:
        params["length"] = str(col_type.bit_width)
    params["tidb_type"] = tidb_type(col_type)
    if family is TypeFamily.INTEGER:
        avro = _integer_avro_type(col_type, options)
    elif family is TypeFamily.DECIMAL:
        if options.decimal_handling_mode is DecimalHandlingMode.STRING:
            avro = "string"
        else:
            return {
                "type": "bytes", "connect.parameters": params, "logicalType": "decimal",
                "precision": col_type.precision, "scale": col_type.scale,
            }
    else:
        avro = _AVRO_PRIMITIVE[family]
    return {"type": avro, "connect.parameters": params}


def _integer_avro_type(col_type: ColumnType, options: SchemaOptions) -> str:
    if col_type.base is MySQLType.BIGINT:
        if (col_type.unsigned
                and options.bigint_unsigned_handling_mode is BigintUnsignedHandlingMode.STRING):
            return "string"
        return "long"
    if col_type.base is MySQLType.INT and col_type.unsigned:
        return "long"
    return "int"


def record_namespace(schema: str, options: SchemaOptions) -> str:
    """``sanitize(namespace).sanitize(schema)``, or just the first part for an empty schema."""
    first, second = sanitize_name(options.namespace), sanitize_name(schema)
    return f"{first}.{second}" if second else first


def _field(column: Column, options: SchemaOptions) -> dict[str, Any]:
    avro = column_avro_type(column.type, options)
    column = release_default(column, options)
    default = avro_default(column, options)  # validated even when not emitted
    name = sanitize_name(column.name)
    if "logicalType" in avro:  # precise DECIMAL never carries its default
        if column.nullable:
            return {"default": None, "name": name, "type": ["null", avro]}
        return {"name": name, "type": avro}
    if column.nullable:
        if default is None:
            return {"default": None, "name": name, "type": ["null", avro]}
        if default == "null" and options.ticdc_release is not TicdcRelease.NEWEST:
            return _null_text_default(column, avro=avro, options=options)
        return {"default": default, "name": name, "type": [avro, "null"]}
    if default is None:
        return {"name": name, "type": avro}
    return {"default": default, "name": name, "type": avro}


def _null_text_default(column: Column, *, avro: dict[str, Any], options: SchemaOptions
                       ) -> dict[str, Any]:
    """A nullable column whose default is the text ``'null'``, as the older release lines
    wrote it: tiflow v8.5.2-v8.5.7 put null first; v8.3-v8.5.1 could not encode it (goavro
    took the default ``"null"`` for a null, which ``[T, "null"]`` refuses: pingcap/tiflow#11994).

    Raises:
        InvalidDefaultError: the v8.3-v8.5.1 line, which refused such a table.
    """
    if options.ticdc_release is TicdcRelease.TIFLOW_V8_3:
        raise InvalidDefaultError(
            f"column `{column.name}`: a nullable column with the text default 'null' cannot be "
            f"encoded by the ticdc_release {options.ticdc_release.value} line (TiCDC refused "
            f"the table: pingcap/tiflow#11994); choose tiflow-v8.5.2 or newest",
            column=column.name)
    return {"default": "null", "name": sanitize_name(column.name), "type": ["null", avro]}


def _check_names(table: Table, options: SchemaOptions) -> None:
    seen: dict[str, str] = {}
    if options.enable_tidb_extension:
        seen.update({f["name"]: f"extension field {f['name']}" for f in EXTENSION_FIELDS})
    for column in table.columns:
        avro_name = sanitize_name(column.name)
        if avro_name in seen:
            other = seen[avro_name]
            other_text = other if other.startswith("extension") else f"column `{other}`"
            raise NameCollisionError(
                f"column `{column.name}` and {other_text} both become the Avro field "
                f"`{avro_name}`",
                column=column.name,
                other=other,
                avro_name=avro_name,
            )
        seen[avro_name] = column.name


def generate_schemas(table: Table, options: SchemaOptions | None = None) -> SchemaPair:
    """Generate the flat-avro key and value schemas of `table` (docs/flat-avro.md §2–§4).

    Raises:
        NameCollisionError: two columns (or a column and an extension field) sanitize to one
            Avro name.
        InvalidDefaultError: a column default is not a value of its type.
    """
    options = options or SchemaOptions()
    _check_names(table, options)
    name = sanitize_name(table.table)
    namespace = record_namespace(table.schema, options)
    value_fields = [_field(c, options) for c in table.columns]
    if options.enable_tidb_extension:
        value_fields.extend(dict(f) for f in EXTENSION_FIELDS)
    value = {"type": "record", "name": name, "namespace": namespace, "fields": value_fields}
    key_columns = table.key_columns()
    key = None
    if key_columns:
        key = {
            "type": "record", "name": name, "namespace": namespace,
            "fields": [_field(c, options) for c in key_columns],
        }
    return SchemaPair(
        key_schema=key, value_schema=value, key_columns=tuple(c.name for c in key_columns)
    )

