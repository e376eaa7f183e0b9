"""Simple protocol table definitions: ``tableSchema`` objects, cached by (schema, table,
version).

A ``TableSchema`` is exact (the canonical flat-avro input, docs/flat-avro.md §1). DML messages
carry only ``schemaVersion``, so the definitions seen in BOOTSTRAP and DDL messages are kept
in a bounded LRU cache; TiCDC re-sends BOOTSTRAP periodically, so an evicted or never-seen
version comes back.
"""

from __future__ import annotations

from typing import Any

from service.cdc.definition import TableDefinition
from service.cdc.errors import MessageFormatError
from service.core.errors import InvalidTableError
from service.core.lru import LRU
from service.core.table_json import table_from_json

__all__ = ["SchemaCache", "parse_table_schema"]

SOURCE = "Simple protocol tableSchema"


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

    def get(self, schema: str, table: str, version: int) -> TableDefinition | None:
        """The definition of that version of the table, if known."""
        found: TableDefinition | None = self._lru.get((schema, table, version))
        return found
