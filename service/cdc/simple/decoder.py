"""The Simple protocol decoder (``encoding-format=json`` and ``avro``), with its table-schema
cache.

TiCDC writes a Simple-Avro message value (``encoding-format=avro``) as a bare Avro datum (no
magic byte, no registry id, no container; the key is empty) of the schema in ``message.avsc``
beside this module: a verbatim copy of pingcap/tiflow ``pkg/sink/codec/simple/message.json``
at tag v8.3.0 (Apache-2.0; the same blob from v8.1.0 through v8.5.x and master). That schema
is a top-level union of named records and every message is its ``Message`` branch (index
11), so a Simple-Avro value starts with the byte ``0x16`` (zig-zag varint 11) where a
Simple-JSON value starts with ``{``: `is_avro` tells them apart, message by message. The datum
is read with fastavro into the document its JSON form would be (`avro_document`; table
schemas by `columns.avro_table_schema`, values tagged for `values.avro_value`, ``data``/``old``
sorted by column name as Go's JSON encoder sorts them: goavro writes maps in random order),
then both encodings take the same path. A value that is not a datum of the schema is a
`MessageFormatError` naming the byte offset, the field and why (fastavro says neither where
nor what: on failure the datum is walked again by `_Walker`).

BOOTSTRAP and DDL messages carry ``tableSchema`` (DDL also ``preTableSchema``): both are
cached by (schema, table, version). A DML message (INSERT ``data``; UPDATE ``data`` + ``old``;
DELETE ``old``) names ``database``, ``table`` and ``schemaVersion``; when that version is not
cached the row is returned as pending, with the reason, never dropped or guessed.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import fastavro
import orjson

from service.cdc.definition import TableDefinition
from service.cdc.errors import MessageFormatError, json_object_value
from service.cdc.events import ChangeEvent, DecodedMessage, EventKind, Pending, SourceMessage
from service.cdc.simple.columns import (
    AVRO_MESSAGE,
    SchemaCache,
    avro_table_schema,
    parse_table_schema,
)
from service.cdc.simple.values import AvroValue, avro_value, typed_value

__all__ = ["Decoder", "PROTOCOL_VERSION", "SCHEMA_FILE", "MESSAGE_BRANCH", "avro_document",
           "is_avro"]

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
            return DecodedMessage([self._schema_event(message.index, kind, document,
                                                      commit_ts)])
        if kind not in _DML:
            raise MessageFormatError(f"unknown message type {kind!r}", field="type")
        return self._dml(message.index, _DML[kind], document, commit_ts)

    def _schema_event(self, index: int, kind: str, document: dict[str, Any],
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

    def _dml(self, index: int, kind: EventKind, document: dict[str, Any], commit_ts: int
             ) -> DecodedMessage:
        schema, table = _name(document, "database"), _name(document, "table")
        version = _tso(document, "schemaVersion")
        if document.get("handleKeyOnly") or document.get("claimCheckLocation"):
            raise MessageFormatError(
                "the message carries only the handle key (large-message handling "
                "`handleKeyOnly`/`claimCheckLocation`); the row is not in it and cannot be "
                "converted", field="handleKeyOnly")
        definition = self._cache.get(schema, table, version)
        if definition is None:
            return DecodedMessage(pending=Pending(
                index, schema, table, version,
                f"table `{schema}`.`{table}` schema version {version} is not known yet: "
                f"send its BOOTSTRAP or DDL message first (TiCDC re-sends BOOTSTRAP "
                f"periodically), then this message again"))
        after = before = None
        if kind is not EventKind.DELETE:
            after = _typed(document, "data", definition)
        if kind is not EventKind.INSERT:
            before = _typed(document, "old", definition)
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


def _typed(document: dict[str, Any], field: str, definition: TableDefinition
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
        out[column] = typed_value(column, column_type, value, f"{field}/{column}")
    return out

# --- The Avro encoding ---------------------------------------------------------------------

SCHEMA_FILE = Path(__file__).with_name("message.avsc")
_NS = "com.pingcap.simple.avro."
_U64 = 1 << 64


def _reading_schema() -> list[Any]:
    """TiCDC's schema with ``ColumnSchema.default`` read as ``["null", "bytes"]`` (the same
    bytes on the wire as ``["null", "string"]``; a BIT default need not be UTF-8)."""
    schema: list[Any] = orjson.loads(SCHEMA_FILE.read_bytes())
    for named in schema:
        if named["name"] == "ColumnSchema":
            for field in named["fields"]:
                if field["name"] == "default":
                    field["type"] = ["null", "bytes"]
    return schema


_READING = _reading_schema()
_PARSED = fastavro.parse_schema(_reading_schema())
MESSAGE_BRANCH = next(i for i, t in enumerate(_READING) if t["name"] == "Message")
_FIRST_BYTE = bytes([MESSAGE_BRANCH << 1])  # zig-zag varint of the branch index (< 64)
_JSON_SPACE = frozenset(b" \t\n\r")


def is_avro(value: bytes | None) -> bool:
    """True when `value` is to be read as a Simple-Avro datum: it starts with the Message
    branch's union index (``0x16``) or another control byte, which no JSON text starts with
    (so a damaged datum is explained as Avro; Simple-JSON starts with ``{``)."""
    if not value:
        return False
    first = value[0]
    return first == _FIRST_BYTE[0] or (first < 0x20 and first not in _JSON_SPACE)


def avro_document(value: bytes) -> dict[str, Any]:
    """The Simple-JSON document of a Simple-Avro message value.

    Raises:
        MessageFormatError: not a datum of TiCDC's schema (names the byte offset and field),
            a non-Message branch, bytes after the datum, a default that is not UTF-8.
    """
    stream = io.BytesIO(value)
    try:
        name, message = fastavro.schemaless_reader(stream, _PARSED, None,
                                                   return_record_name=True)
    except Exception as exc:  # fastavro raises EOFError, IndexError, ValueError, ...
        raise _diagnose(value, exc) from exc
    if name != _NS + "Message":
        raise _diagnose(value, None)
    end = stream.tell()
    if end != len(value):
        extra = len(value) - end
        raise MessageFormatError(
            f"{AVRO_MESSAGE}{extra} byte{'s' if extra > 1 else ''} after the datum's end at "
            f"byte {end}", part="value", offset=end)
    branch, payload = message["payload"]
    kind = message["type"]
    if branch != _NS + _PAYLOAD[kind]:
        raise MessageFormatError(
            f"{AVRO_MESSAGE}the message type {kind} carries a "
            f"{branch.rsplit('.', 1)[-1]} payload", part="value", field="payload")
    return _CONVERT[kind](payload)


def _watermark(payload: dict[str, Any]) -> dict[str, Any]:
    return {"version": payload["version"], "type": "WATERMARK",
            "commitTs": payload["commitTs"], "buildTs": payload["buildTs"]}


def _bootstrap(payload: dict[str, Any]) -> dict[str, Any]:
    return {"version": payload["version"], "type": "BOOTSTRAP", "commitTs": 0,
            "buildTs": payload["buildTs"],
            "tableSchema": avro_table_schema(payload["tableSchema"], "tableSchema")}


def _ddl(payload: dict[str, Any]) -> dict[str, Any]:
    out = {"version": payload["version"], "type": payload["type"], "sql": payload["sql"],
           "commitTs": payload["commitTs"], "buildTs": payload["buildTs"]}
    for field in ("tableSchema", "preTableSchema"):
        if payload[field] is not None:
            out[field] = avro_table_schema(payload[field][1], field)
    return out


def _dml(payload: dict[str, Any]) -> dict[str, Any]:
    out = {key: payload[key] for key in ("version", "database", "table", "tableID", "type",
                                         "commitTs", "buildTs", "schemaVersion")}
    if payload["claimCheckLocation"] is not None:
        out["claimCheckLocation"] = payload["claimCheckLocation"]
    if payload["handleKeyOnly"]:
        out["handleKeyOnly"] = True
    if payload["checksum"] is not None:
        out["checksum"] = payload["checksum"][1]
    for field in ("data", "old"):
        if payload[field] is not None:
            out[field] = {column: _tagged(payload[field][column])
                          for column in sorted(payload[field])}
    return out


_PAYLOAD = {"WATERMARK": "Watermark", "BOOTSTRAP": "Bootstrap", "DDL": "DDL", "DML": "DML"}
_CONVERT = {"WATERMARK": _watermark, "BOOTSTRAP": _bootstrap, "DDL": _ddl, "DML": _dml}


def _tagged(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, tuple):  # a named record: Timestamp or UnsignedBigint
        name, record = value
        if name == _NS + "UnsignedBigint":
            return AvroValue(record["value"] % _U64)
        return {"location": record["location"], "value": record["value"]}
    return AvroValue(value)


# --- Diagnosis: where and why a value is not a datum of the schema -------------------------

_MAX_VARINT = {"int": 5, "long": 10}
_WHAT = {"bytes": "binary value", "string": "string value"}


class _Stop(Exception):
    def __init__(self, offset: int, path: str, reason: str) -> None:
        super().__init__(reason)
        self.offset, self.path, self.reason = offset, path, reason


class _Walker:
    """Reads a datum against the writer schema, noting offsets: only to explain a failure."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0
        self.named: dict[str, Any] = {}
        for named in _READING:
            self._register(named)

    def _register(self, schema: Any) -> None:
        if isinstance(schema, dict):
            if schema.get("type") in ("record", "enum", "fixed"):
                self.named[schema["name"]] = schema
                self.named[f"{schema.get('namespace', _NS[:-1])}.{schema['name']}"] = schema
            for field in schema.get("fields", ()):
                self._register(field["type"])
            for key in ("items", "values"):
                if key in schema:
                    self._register(schema[key])
        elif isinstance(schema, list):
            for branch in schema:
                self._register(branch)

    def varint(self, kind: str, path: str) -> int:
        begin, shift, raw = self.pos, 0, 0
        while True:
            if self.pos >= len(self.data):
                where = (f"where {'an' if kind == 'int' else 'a'} {kind} is due"
                         if begin == self.pos else
                         f"inside the {kind} that starts at byte {begin}")
                raise _Stop(len(self.data), path,
                            f"the value ends at byte {len(self.data)}, {where}")
            byte = self.data[self.pos]
            self.pos += 1
            raw |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
            if self.pos - begin >= _MAX_VARINT[kind]:
                raise _Stop(begin, path, f"the {kind} at byte {begin} is a varint longer than "
                                         f"{_MAX_VARINT[kind]} bytes")
        value = (raw >> 1) ^ -(raw & 1)
        if kind == "int" and not -(1 << 31) <= value < 1 << 31:
            raise _Stop(begin, path, f"the int at byte {begin} ({value}) is outside 32 bits")
        if not -(1 << 63) <= value < 1 << 63:
            raise _Stop(begin, path, f"the long at byte {begin} is outside 64 bits")
        return value

    def take(self, size: int, what: str, path: str, begin: int) -> bytes:
        if self.pos + size > len(self.data):
            raise _Stop(len(self.data), path,
                        f"the value ends at byte {len(self.data)}, inside the {size}-byte "
                        f"{_WHAT.get(what, what)} that starts at byte {begin}")
        chunk = self.data[self.pos:self.pos + size]
        self.pos += size
        return chunk

    def length(self, what: str, path: str) -> tuple[int, int]:
        begin = self.pos
        size = self.varint("long", path)
        if size < 0:
            raise _Stop(begin, path, f"the {what} at byte {begin} has a negative length {size}")
        return begin, size

    def read(self, schema: Any, path: str) -> Any:
        if isinstance(schema, list):
            begin = self.pos
            index = self.varint("long", path)
            if not 0 <= index < len(schema):
                raise _Stop(begin, path, f"union branch {index} at byte {begin} is not one of "
                                         f"its {len(schema)} branches")
            return self.read(schema[index], path)
        if isinstance(schema, str):
            if schema in self.named:
                return self.read(self.named[schema], path)
            return self.primitive(schema, path)
        kind = schema["type"]
        if kind == "record":
            out = {}
            for field in schema["fields"]:
                name = field["name"]
                out[name] = self.read(field["type"], f"{path}/{name}" if path else name)
            return out
        if kind == "enum":
            begin = self.pos
            index = self.varint("int", path)
            if not 0 <= index < len(schema["symbols"]):
                raise _Stop(begin, path, f"enum index {index} at byte {begin} is not one of "
                                         f"its {len(schema['symbols'])} symbols")
            return schema["symbols"][index]
        if kind in ("array", "map"):
            count = 0
            while True:
                block = self.varint("long", path)
                if block == 0:
                    return count
                if block < 0:
                    block = -block
                    self.varint("long", path)  # the block's size in bytes
                for _ in range(block):
                    key = self.read("string", path) if kind == "map" else str(count)
                    self.read(schema["items" if kind == "array" else "values"],
                              f"{path}/{key}")
                    count += 1
        return self.read(kind, path)

    def primitive(self, kind: str, path: str) -> Any:
        begin = self.pos
        if kind == "null":
            return None
        if kind == "boolean":
            byte = self.take(1, "boolean", path, begin)[0]
            if byte > 1:
                raise _Stop(begin, path, f"the boolean at byte {begin} is {byte:#04x}, "
                                         f"neither 0 nor 1")
            return bool(byte)
        if kind in ("int", "long"):
            return self.varint(kind, path)
        if kind in ("float", "double"):
            return self.take(4 if kind == "float" else 8, kind, path, begin)
        if kind in ("string", "bytes"):
            start, size = self.length(kind, path)
            raw = self.take(size, kind, path, start)
            if kind == "string":
                try:
                    return raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise _Stop(start, path, f"the string at byte {start} is not UTF-8 "
                                             f"({exc.reason} at its byte {exc.start})") from exc
            return raw
        raise _Stop(begin, path, f"unknown Avro type {kind}")  # pragma: no cover


def _diagnose(value: bytes, exc: Exception | None) -> MessageFormatError:
    walker = _Walker(value)
    begin = 0
    try:
        index = walker.varint("long", "")
        if index != MESSAGE_BRANCH:
            name = _READING[index]["name"] if 0 <= index < len(_READING) else None
            raise _Stop(begin, "", f"the value starts with union branch {index}"
                                   f"{f' ({name})' if name else ''}, not {MESSAGE_BRANCH} "
                                   f"(Message)")
        walker.read(_READING[MESSAGE_BRANCH], "")
    except _Stop as stop:
        where = f" (field `{stop.path}`)" if stop.path else ""
        return MessageFormatError(f"{AVRO_MESSAGE}{stop.reason}{where}", part="value",
                                  offset=stop.offset, **({"field": stop.path} if stop.path
                                                         else {}))
    return MessageFormatError(f"{AVRO_MESSAGE}{exc}", part="value")  # pragma: no cover
