"""The Simple protocol decoder (``encoding-format=json`` and ``avro``), with its table-schema
cache.

Each message is told apart as JSON or Avro by its first byte (`avro.is_avro`); an Avro value is
read into the document its JSON form would be (`avro.avro_document`), then both encodings take
the same path.

BOOTSTRAP and DDL messages carry ``tableSchema`` (DDL also ``preTableSchema``): both are
cached by (schema, table, version). A DML message (INSERT ``data``; UPDATE ``data`` + ``old``;
DELETE ``old``) names ``database``, ``table`` and ``schemaVersion``; when that version is not
cached the row is returned as pending, with the reason, never dropped or guessed.
"""

from __future__ import annotations

from typing import Any

from service.cdc.definition import TableDefinition
from service.cdc.errors import MessageFormatError, handle_key_only, json_object_value
from service.cdc.events import ChangeEvent, DecodedMessage, EventKind, Pending, SourceMessage
from service.cdc.simple.avro import avro_document, is_avro
from service.cdc.simple.columns import SchemaCache, parse_table_schema
from service.cdc.simple.values import AvroValue, avro_value, typed_value

__all__ = ["Decoder", "PROTOCOL_VERSION"]

PROTOCOL_VERSION = 1
_DML = {"INSERT": EventKind.INSERT, "UPDATE": EventKind.UPDATE, "DELETE": EventKind.DELETE}
_DDL = frozenset({"CREATE", "RENAME", "CINDEX", "DINDEX", "ERASE", "TRUNCATE", "ALTER",
                  "QUERY"})


class Decoder:
    """Decodes Simple protocol messages (JSON or Avro, detected per message), remembering the
    table schemas it has seen."""

    def __init__(self, *, schema_cache_size: int = 1024) -> None:
        self._cache = SchemaCache(schema_cache_size)

    def decode(self, message: SourceMessage) -> DecodedMessage:
        """The event of one message (or the pending DML).

        Raises:
            MessageFormatError: malformed JSON, a value that is not a datum of TiCDC's Avro
                schema (with the byte offset), a version other than 1, an unknown type, a
                bad tableSchema, values that do not parse as their column type, columns
                that are not in the table.
        """
        document = _document(message.value)
        kind = document.get("type")
        if not isinstance(kind, str):
            raise MessageFormatError("`type` must be a string", field="type")
        commit_ts = _tso(document, "commitTs")
        if kind == "WATERMARK":
            return DecodedMessage([ChangeEvent(EventKind.WATERMARK, None, None, commit_ts,
                                               message.index)])
        if kind == "BOOTSTRAP" or kind in _DDL:
            return DecodedMessage([self._schema_event(document, kind=kind, index=message.index,
                                                      commit_ts=commit_ts)])
        if kind not in _DML:
            raise MessageFormatError(f"unknown message type {kind!r}", field="type")
        return self._dml(document, kind=_DML[kind], index=message.index, commit_ts=commit_ts)

    def _schema_event(self, document: dict[str, Any], *, kind: str, index: int,
                      commit_ts: int) -> ChangeEvent:
        definition = None
        for field in ("preTableSchema", "tableSchema"):
            if document.get(field) is not None:
                definition = parse_table_schema(document[field], field)
                self._cache.put(definition)
        if kind == "BOOTSTRAP":
            if definition is None:
                raise MessageFormatError("a BOOTSTRAP message needs `tableSchema`",
                                         field="tableSchema")
            return ChangeEvent(EventKind.BOOTSTRAP, definition.schema, definition.table,
                               commit_ts, index, definition=definition)
        sql = document.get("sql")
        return ChangeEvent(EventKind.DDL, definition.schema if definition else None,
                           definition.table if definition else None, commit_ts, index,
                           query=sql if isinstance(sql, str) else None,
                           definition=definition)

    def _dml(self, document: dict[str, Any], *, kind: EventKind, index: int, commit_ts: int
             ) -> DecodedMessage:
        schema, table = _name(document, "database"), _name(document, "table")
        version = _tso(document, "schemaVersion")
        if document.get("handleKeyOnly"):
            data = document.get("data") or document.get("old")
            raise handle_key_only((schema, table), key=data if isinstance(data, dict) else {},
                                  commit_ts=commit_ts, flag="handleKeyOnly",
                                  field="handleKeyOnly")
        definition = self._cache.get(schema, table, version=version)
        if definition is None:
            return DecodedMessage(pending=Pending(
                index, schema, table, version,
                f"table `{schema}`.`{table}` schema version {version} is not known yet: "
                f"send its BOOTSTRAP or DDL message first (TiCDC re-sends BOOTSTRAP "
                f"periodically), then this message again"))
        after = before = None
        if kind is not EventKind.DELETE:
            after = _typed(document, "data", definition=definition)
        if kind is not EventKind.INSERT:
            before = _typed(document, "old", definition=definition)
        return DecodedMessage([ChangeEvent(kind, schema, table, commit_ts, index, row=after,
                                           old_row=before, definition=definition)])


def _document(value: bytes | None) -> dict[str, Any]:
    if value is not None and is_avro(value):
        document = avro_document(value)
    else:
        document = json_object_value(value, "Simple protocol")
    if document.get("version") != PROTOCOL_VERSION:
        raise MessageFormatError(f"protocol version {document.get('version')!r}; only 1 is "
                                 f"defined", field="version")
    return document


def _tso(document: dict[str, Any], field: str) -> int:
    value = document.get(field)
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 1 << 63:
        raise MessageFormatError(f"`{field}` must be an integer >= 0", field=field)
    return value


def _name(document: dict[str, Any], field: str) -> str:
    value = document.get(field)
    if not isinstance(value, str) or not value:
        raise MessageFormatError(f"a DML message needs `{field}`", field=field)
    return value


def _typed(document: dict[str, Any], field: str, *, definition: TableDefinition
           ) -> dict[str, Any]:
    row = document.get(field)
    if not isinstance(row, dict):
        raise MessageFormatError(f"`{field}` must be an object of column values", field=field)
    out = {}
    for column, value in row.items():
        column_type = definition.column_type(column)
        if column_type is None:
            raise MessageFormatError(
                f"column `{column}` is not in table `{definition.schema}`."
                f"`{definition.table}` version {definition.version}", column=column,
                field=f"{field}/{column}")
        if isinstance(value, AvroValue):
            value = avro_value(column_type, value)
        out[column] = typed_value(column, column_type, value=value, field=f"{field}/{column}")
    return out
