"""Test-side Simple-Avro writer: a Simple-JSON message written as TiCDC's ``avro`` encoding
would write it, with fastavro's writer and TiCDC's schema (service/cdc/simple/message.avsc).

This is *ours*, not TiCDC's: it follows pkg/sink/codec/simple/avro.go and message.go
(``newTableSchemaMap``, ``encodeValue4Avro``) at tiflow v8.3.0. The vectors TiCDC's own
encoder wrote are in golden/simple_avro/ (see its README).
"""

from __future__ import annotations

import base64
import io
from typing import Any

import fastavro
import orjson

from service.cdc.simple.avro import SCHEMA_FILE
from service.cdc.simple.columns import parse_table_schema
from service.core.mysql_types import MySQLType, TypeFamily
from service.core.table import ColumnType

NS = "com.pingcap.simple.avro."


def _schema() -> Any:
    """TiCDC's schema, ``ColumnSchema.default`` written as bytes (the same wire as its
    ``string``: goavro writes TiDB's raw BIT default, which need not be UTF-8)."""
    schema = orjson.loads(SCHEMA_FILE.read_bytes())
    column = next(t for t in schema if t["name"] == "ColumnSchema")
    next(f for f in column["fields"] if f["name"] == "default")["type"] = ["null", "bytes"]
    return fastavro.parse_schema(schema)


_PARSED = _schema()
_NUMERIC = {"tinyint", "smallint", "mediumint", "int", "bigint", "float", "double", "bit",
            "year"}
_U64 = 1 << 64


def _signed(value: int) -> int:
    return value - _U64 if value >= 1 << 63 else value


class SimpleAvroWriter:
    """Writes Simple-JSON documents as Simple-Avro values, remembering table schemas (the
    DML values' Avro branches depend on the column types)."""

    def __init__(self) -> None:
        self._types: dict[tuple[str, str, int], dict[str, ColumnType]] = {}

    def write(self, document: dict[str, Any]) -> bytes:
        """The Avro datum of one Simple-JSON message."""
        kind = document["type"]
        if kind == "WATERMARK":
            branch, payload = "Watermark", {"version": document["version"],
                                            "commitTs": document["commitTs"],
                                            "buildTs": document["buildTs"]}
            kind = "WATERMARK"
        elif kind == "BOOTSTRAP":
            branch, payload = "Bootstrap", {"version": document["version"],
                                            "buildTs": document["buildTs"],
                                            "tableSchema": self._schema(document["tableSchema"])}
        elif kind in ("INSERT", "UPDATE", "DELETE"):
            branch, payload, kind = "DML", self._dml(document), "DML"
        else:
            branch, kind = "DDL", "DDL"
            payload = {"version": document["version"], "type": document["type"],
                       "sql": document["sql"], "commitTs": document["commitTs"],
                       "buildTs": document["buildTs"]}
            for field in ("tableSchema", "preTableSchema"):
                if document.get(field) is not None:
                    payload[field] = (NS + "TableSchema", self._schema(document[field]))
        out = io.BytesIO()
        fastavro.schemaless_writer(out, _PARSED,
                                   (NS + "Message", {"type": kind,
                                                     "payload": (NS + branch, payload)}))
        return out.getvalue()

    def learn(self, table: dict[str, Any]) -> None:
        """Know a table schema version (for DML messages whose BOOTSTRAP is not written)."""
        definition = parse_table_schema(table, "tableSchema")
        self._types[(definition.schema, definition.table, int(table["version"]))] = {
            c.name: c.type for c in definition.columns}

    def _schema(self, table: dict[str, Any]) -> dict[str, Any]:
        self.learn(table)
        return {"database": table["schema"], "table": table["table"],
                "tableID": table["tableID"], "version": table["version"],
                "columns": [self._column(c) for c in table["columns"]],
                "indexes": table["indexes"]}

    @staticmethod
    def _column(column: dict[str, Any]) -> dict[str, Any]:
        dt = column["dataType"]
        mysql_type = dt["mysqlType"]
        data_type: dict[str, Any] = {"mysqlType": mysql_type, "charset": dt["charset"],
                                     "collate": dt["collate"], "length": dt.get("length", 0)}
        if mysql_type in _NUMERIC or mysql_type == "decimal":
            data_type["unsigned"] = bool(dt.get("unsigned"))
            data_type["zerofill"] = bool(dt.get("zerofill"))
        if mysql_type == "decimal":
            data_type["decimal"] = dt.get("decimal", 0)
        if mysql_type in ("enum", "set"):
            data_type["elements"] = dt.get("elements") or []
        default = column["default"]
        if default is not None:
            if mysql_type == "bit":  # TiDB's bit string: the number's big-endian bytes
                number = int(default)
                default = number.to_bytes(max(1, (number.bit_length() + 7) // 8), "big")
            else:
                default = str(default).encode()
        return {"name": column["name"], "dataType": data_type,
                "nullable": column["nullable"], "default": default}

    def _dml(self, document: dict[str, Any]) -> dict[str, Any]:
        types = self._types[(document["database"], document["table"],
                             int(document["schemaVersion"]))]
        payload = {key: document[key] for key in ("version", "database", "table", "tableID",
                                                  "type", "commitTs", "buildTs",
                                                  "schemaVersion")}
        for field in ("data", "old"):
            row = document.get(field)
            if row is not None:
                payload[field] = {name: _value(types[name], value)
                                  for name, value in reversed(list(row.items()))}
        return payload


def _value(column_type: ColumnType, value: Any) -> Any:
    """``encodeValue4Avro``: the union branch TiCDC picks for a JSON-form value."""
    if value is None:
        return None
    family = column_type.family
    if column_type.base is MySQLType.TIMESTAMP:
        return (NS + "Timestamp", {"location": value["location"], "value": value["value"]})
    if family is TypeFamily.INTEGER and column_type.base is MySQLType.BIGINT and \
            column_type.unsigned:
        return (NS + "UnsignedBigint", {"value": _signed(int(value))})
    if family in (TypeFamily.INTEGER, TypeFamily.YEAR, TypeFamily.BIT, TypeFamily.ENUM,
                  TypeFamily.SET):
        return ("long", _signed(int(value)))
    if family is TypeFamily.FLOAT:
        return ("float", float(value))
    if family is TypeFamily.DOUBLE:
        return ("double", float(value))
    if family is TypeFamily.BLOB:
        return ("bytes", base64.b64decode(value))
    return ("string", str(value))
