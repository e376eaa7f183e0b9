"""A flat-avro schema read back as a table: each field's TiDB column facts and the Spark SQL
type that Spark's ``from_avro`` gives it (the console's column <-> field map).

Pure: a parsed schema (JSON) in, rows out. The reading follows docs/flat-avro.md: the TiDB type
is in ``connect.parameters.tidb_type``, ENUM/SET members in ``connect.parameters.allowed``
(commas inside a member escaped as ``\\,``), a nullable column is a union with ``null``, and
DECIMAL is ``bytes`` with the ``decimal`` logical type (precise mode) or a string.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["FieldRow", "field_rows", "spark_sql_type", "record_name"]

_UNESCAPED_COMMA = re.compile(r"(?<!\\),")
_SPARK_PRIMITIVES = {"null": "VOID", "boolean": "BOOLEAN", "int": "INT", "long": "BIGINT",
                     "float": "FLOAT", "double": "DOUBLE", "bytes": "BINARY",
                     "string": "STRING"}
"""spark-avro's reading of Avro's primitive types (Spark SQL names)."""
_SPARK_LOGICAL = {"date": "DATE", "timestamp-millis": "TIMESTAMP",
                  "timestamp-micros": "TIMESTAMP", "local-timestamp-millis": "TIMESTAMP_NTZ",
                  "local-timestamp-micros": "TIMESTAMP_NTZ"}


@dataclass(frozen=True)
class FieldRow:
    """One field of a flat-avro record: the column it carries and how readers see it."""

    name: str
    tidb_type: str | None
    avro_type: str
    nullable: bool
    default: str | None
    """The default as JSON text (``null`` for a null default); None: the field has none."""
    precision: int | None
    scale: int | None
    members: tuple[str, ...]
    """ENUM/SET members, in order (empty for other types)."""
    spark_type: str


def record_name(schema: Any) -> str:
    """A record schema's full name (``namespace.name``); its type for other schemas."""
    if not isinstance(schema, dict):
        return str(schema)
    name, namespace = str(schema.get("name", "")), schema.get("namespace")
    return f"{namespace}.{name}" if namespace and "." not in name else name


def field_rows(schema: Any) -> list[FieldRow]:
    """The fields of a record schema as rows; a schema that is no record has none."""
    if not isinstance(schema, dict) or not isinstance(schema.get("fields"), list):
        return []
    return [_row(f) for f in schema["fields"] if isinstance(f, dict)]


def spark_sql_type(avro_type: Any) -> str:
    """The Spark SQL type spark-avro reads an Avro type as (``DECIMAL(12,2)``, ``STRING``...);
    a union of ``null`` and one type reads as that type, nullable."""
    if isinstance(avro_type, list):
        rest = [b for b in avro_type if b != "null"]
        if len(rest) == 1:
            return spark_sql_type(rest[0])
        return "STRUCT<" + ", ".join(f"member{i}: {spark_sql_type(b)}"
                                     for i, b in enumerate(rest)) + ">"
    if isinstance(avro_type, str):
        return _SPARK_PRIMITIVES.get(avro_type, avro_type)
    if not isinstance(avro_type, dict):
        return str(avro_type)
    return _spark_named(avro_type)


def _spark_named(avro_type: dict[str, Any]) -> str:
    logical, base = avro_type.get("logicalType"), avro_type.get("type")
    if logical == "decimal" and base in ("bytes", "fixed"):
        return f"DECIMAL({avro_type.get('precision')},{avro_type.get('scale', 0)})"
    if logical in _SPARK_LOGICAL:
        return _SPARK_LOGICAL[logical]
    if base == "array":
        return f"ARRAY<{spark_sql_type(avro_type.get('items'))}>"
    if base == "map":
        return f"MAP<STRING, {spark_sql_type(avro_type.get('values'))}>"
    if base == "record":
        return "STRUCT<" + ", ".join(f"{r.name}: {r.spark_type}"
                                     for r in field_rows(avro_type)) + ">"
    return {"enum": "STRING", "fixed": "BINARY"}.get(str(base)) or spark_sql_type(base)


def _row(field: dict[str, Any]) -> FieldRow:
    declared = field.get("type")
    nullable = isinstance(declared, list) and "null" in declared
    branch = declared
    if isinstance(declared, list):
        rest = [b for b in declared if b != "null"]
        branch = rest[0] if len(rest) == 1 else rest
    props = branch if isinstance(branch, dict) else {}
    parameters = props.get("connect.parameters")
    parameters = parameters if isinstance(parameters, dict) else {}
    allowed = parameters.get("allowed")
    members = tuple(m.replace("\\,", ",") for m in _UNESCAPED_COMMA.split(allowed)) \
        if isinstance(allowed, str) else ()
    precision, scale = props.get("precision"), props.get("scale")
    return FieldRow(
        name=str(field.get("name")),
        tidb_type=str(parameters["tidb_type"]) if "tidb_type" in parameters else None,
        avro_type=_avro_text(declared), nullable=nullable,
        default=json.dumps(field["default"], ensure_ascii=False) if "default" in field
        else None,
        precision=precision if isinstance(precision, int) else None,
        scale=(scale if isinstance(scale, int) else 0) if isinstance(precision, int) else None,
        members=members, spark_type=spark_sql_type(declared))


def _avro_text(avro_type: Any) -> str:
    """The Avro type without its TiCDC parameters: ``["null", "long"]``, ``bytes (decimal)``."""
    if isinstance(avro_type, list):
        return " | ".join(_avro_text(b) for b in avro_type)
    if not isinstance(avro_type, dict):
        return str(avro_type)
    base = avro_type.get("type")
    logical = avro_type.get("logicalType")
    text = _avro_text(base) if not isinstance(base, str) else base
    return f"{text} ({logical})" if logical else text
