"""Simple protocol table definitions: ``tableSchema`` objects, cached by (schema, table,
version).

A ``TableSchema`` is exact (the canonical flat-avro input, docs/flat-avro.md §1). DML messages
carry only ``schemaVersion``, so the definitions seen in BOOTSTRAP and DDL messages are kept
in a bounded LRU cache; TiCDC re-sends BOOTSTRAP periodically, so an evicted or never-seen
version comes back.

The Avro encoding's table schema (``TableSchema`` of TiCDC's ``message.avsc``) is read into the
JSON form's object by `avro_table_schema`: ``database`` is the JSON form's ``schema``; the
fields the JSON form leaves out when empty (``length`` 0, ``decimal`` 0, false
``unsigned``/``zerofill``, no ``elements``) are left out; DATETIME/TIMESTAMP/TIME carry no
``decimal`` in Avro, so their fractional-second digits come from ``length`` as TiDB sets it
(19, or 20 + fsp; TIME 10, or 11 + fsp), which is the JSON form's ``decimal``; a default is
read as bytes (goavro writes a BIT default, TiDB's raw bit string, into the ``string``
branch: it need not be UTF-8), a BIT default becoming its number as in the JSON form.
"""

from __future__ import annotations

from typing import Any

from service.cdc.definition import TableDefinition
from service.cdc.errors import MessageFormatError
from service.core.errors import InvalidTableError
from service.core.lru import LRU
from service.core.mysql_types import MySQLType
from service.core.table_json import table_from_json

__all__ = ["SchemaCache", "parse_table_schema", "avro_table_schema"]

SOURCE = "Simple protocol tableSchema"
AVRO_MESSAGE = "not a Simple-protocol Avro message: "


def parse_table_schema(document: Any, field: str) -> TableDefinition:
    """The exact definition of a ``tableSchema``/``preTableSchema`` object.

    Raises:
        MessageFormatError: not a valid TableSchema (the error names the field inside it).
    """
    try:
        table = table_from_json(document)
    except InvalidTableError as exc:
        inner = exc.details.get("field") or exc.details.get("column")
        raise MessageFormatError(f"`{field}`: {exc.message}",
                                 field=f"{field}/{inner}" if inner else field,
                                 column=exc.details.get("column")) from exc
    if table.version is None:
        raise MessageFormatError(f"`{field}` has no `version`", field=f"{field}/version")
    return TableDefinition.of_table(table, SOURCE)


class SchemaCache:
    """Table definitions by (schema, table, version), least recently used evicted first."""

    def __init__(self, size: int) -> None:
        self._lru = LRU(size)

    def put(self, definition: TableDefinition) -> None:
        """Remember a definition under its (schema, table, version)."""
        self._lru.put((definition.schema, definition.table, definition.version), definition)

    def get(self, schema: str, table: str, *, version: int) -> TableDefinition | None:
        """The definition of that version of the table, if known."""
        found: TableDefinition | None = self._lru.get((schema, table, version))
        return found


_FSP_BASE = {"datetime": 19, "timestamp": 19, "time": 10}
"""TiDB's flen of DATETIME/TIMESTAMP/TIME without a fraction; with fsp digits it is this
+ 1 + fsp (the Avro form's ``length``; its ``decimal`` is only sent for DECIMAL)."""


def avro_table_schema(raw: dict[str, Any], field: str) -> dict[str, Any]:
    """The JSON form of an Avro ``TableSchema`` record (see the module's docstring).

    Raises:
        MessageFormatError: a non-BIT default that is not UTF-8 text.
    """
    return {"schema": raw["database"], "table": raw["table"], "tableID": raw["tableID"],
            "version": raw["version"],
            "columns": [_avro_column(c, f"{field}/columns/{i}")
                        for i, c in enumerate(raw["columns"])],
            "indexes": raw["indexes"]}


def _avro_column(raw: dict[str, Any], field: str) -> dict[str, Any]:
    dt = raw["dataType"]
    mysql_type = dt["mysqlType"]
    data_type: dict[str, Any] = {"mysqlType": mysql_type, "charset": dt["charset"],
                                 "collate": dt["collate"]}
    if dt["length"]:
        data_type["length"] = dt["length"]
    decimal = dt["decimal"]
    base = _FSP_BASE.get(mysql_type)
    if decimal is None and base is not None and base + 1 < dt["length"] <= base + 7:
        decimal = dt["length"] - base - 1
    if decimal:
        data_type["decimal"] = decimal
    if dt["elements"]:
        data_type["elements"] = dt["elements"]
    for flag in ("unsigned", "zerofill"):
        if dt[flag]:
            data_type[flag] = True
    default = raw["default"]
    if default is not None:
        if mysql_type == MySQLType.BIT.value:
            default = int.from_bytes(default, "big")
        else:
            try:
                default = default.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise MessageFormatError(
                    f"{AVRO_MESSAGE}the default of column `{raw['name']}` is not UTF-8 text "
                    f"({exc.reason} at its byte {exc.start})", part="value",
                    field=f"{field}/default", column=raw["name"]) from exc
    return {"name": raw["name"], "dataType": data_type, "nullable": raw["nullable"],
            "default": default}
