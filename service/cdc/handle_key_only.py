"""Handle-key-only messages (``large-message-handle-option=handle-key-only``) made whole from the
upstream TiDB's rows, as TiCDC's own consumer does (tiflow v9.0.0-beta.2.pre,
pkg/sink/codec/common/helper.go ``MustSnapshotQuery`` and the canal-json, open-protocol and
simple decoders): the row after the change is read at the message's commit ts (INSERT, the new
image of an UPDATE), the row before it at commit ts - 1 (DELETE, the old image of an UPDATE),
each by the handle key the message carries.

Pure: `lookups` says what to read, `completed` writes the message the changefeed would have
sent whole from what was read (`Column`: information_schema's description of each column at
that ts, `Row`: the values as MySQL's text protocol gives them: str, bytes for binary columns,
None). Reading is `service.codec.upstream`'s.

Column types: the integer, floating point, decimal, date and time (not TIMESTAMP in Simple),
char/varchar, text, blob, binary/varbinary (not in the Open Protocol) and JSON types. Other
types (ENUM, SET, BIT, VECTOR, spatial) are refused naming the column: their encodings (an
element's index, a bit literal) are not built.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

import orjson

from service.cdc.errors import MessageFormatError, handle_key_only, json_object_or_empty
from service.cdc.events import SourceMessage

__all__ = ["Column", "KeyOnly", "Lookup", "Row", "completed", "key_only", "lookups"]

Row = dict[str, "str | bytes | None"]

# information_schema DATA_TYPE -> (MySQL type code, Canal-JSON sqlType (java.sql.Types)).
_TYPES: dict[str, tuple[int, int]] = {
    "tinyint": (1, -6), "smallint": (2, 5), "mediumint": (9, 4), "int": (3, 4),
    "bigint": (8, -5), "float": (4, 7), "double": (5, 8), "decimal": (246, 3),
    "date": (10, 91), "datetime": (12, 93), "timestamp": (7, 93), "time": (11, 92),
    "year": (13, 12), "varchar": (15, 12), "char": (254, 1), "tinytext": (249, 2005),
    "text": (252, 2005), "mediumtext": (250, 2005), "longtext": (251, 2005),
    "tinyblob": (249, 2004), "blob": (252, 2004), "mediumblob": (250, 2004),
    "longblob": (251, 2004), "binary": (254, 2004), "varbinary": (15, 2004), "json": (245, 12),
}
_INTEGERS = frozenset({"tinyint", "smallint", "mediumint", "int", "bigint", "year"})
_FLOATS = frozenset({"float", "double"})
_BLOBS = frozenset({"tinytext", "text", "mediumtext", "longtext", "tinyblob", "blob",
                    "mediumblob", "longblob"})
_BINARY_STRINGS = frozenset({"tinyblob", "blob", "mediumblob", "longblob", "binary",
                             "varbinary"})
# TiCDC's column flags (pkg/sink/codec/... model.ColumnFlagType).
_BINARY, _HANDLE, _PRIMARY, _UNIQUE, _MULTIPLE, _NULLABLE, _UNSIGNED = 1, 2, 8, 16, 32, 64, 128


@dataclass(frozen=True, slots=True)
class Column:
    """A column as information_schema.COLUMNS describes it at the read ts."""

    name: str
    data_type: str  # DATA_TYPE: int, varchar, longtext, varbinary, ...
    column_type: str  # COLUMN_TYPE: int(11) unsigned, varchar(16), ...
    nullable: bool
    column_key: str  # PRI, UNI, MUL or ""
    charset: str | None

    @property
    def binary(self) -> bool:
        """Its values are bytes (binary charset: numbers, dates, binary strings, blobs)."""
        return self.charset in (None, "binary")


@dataclass(frozen=True, slots=True)
class Lookup:
    """One read: the row of `schema`.`table` whose key is `key`, at `ts`."""

    schema: str
    table: str
    key: dict[str, Any]
    ts: int


@dataclass(frozen=True, slots=True)
class KeyOnly:
    """A handle-key-only message: its protocol's document(s) and what to read."""

    protocol: str  # canal-json, open-protocol, simple
    kind: str  # insert, update, delete
    schema: str
    table: str
    commit_ts: int
    key: dict[str, Any]  # the new image's key (insert, update), else the old one's
    old_key: dict[str, Any] | None  # an update's old key
    document: dict[str, Any]  # Canal-JSON / Simple: the value; the Open Protocol: the value
    open_key: dict[str, Any] | None = None  # the Open Protocol's key JSON

    def refusal(self, reason: str, **details: Any) -> MessageFormatError:
        """This message refused naming its table, key and commit ts, and why."""
        flag = {"canal-json": "onlyHandleKey", "open-protocol": "ohk",
                "simple": "handleKeyOnly"}[self.protocol]
        shown = {name: value.decode("latin-1") if isinstance(value, bytes) else value
                 for name, value in self.key.items()}  # as the message writes it
        exc = handle_key_only((self.schema, self.table), key=shown,
                              commit_ts=self.commit_ts, flag=flag, **details)
        where = exc.message.split(": the message carries", 1)[0]
        return MessageFormatError(f"{where}: the message carries only the handle key and "
                                  f"the row could not be read from the upstream TiDB: "
                                  f"{reason}", **exc.details)


def key_only(message: SourceMessage, *, framed: bool) -> KeyOnly | None:
    """The handle-key-only message `message` is, else None (`framed`: the Open Protocol;
    only a single-event Open Protocol message, as TiCDC sends a large one)."""
    if framed:
        return _open_key_only(message)
    value = message.value or b""
    if b"onlyHandleKey" not in value and b"handleKeyOnly" not in value:
        return None
    document = json_object_or_empty(value)
    extension = document.get("_tidb")
    if isinstance(extension, dict) and extension.get("onlyHandleKey"):
        kind = str(document.get("type", "")).lower()
        types = _object(document.get("mysqlType"))
        data, old = (_canal_key(_first(document.get(f)), types) for f in ("data", "old"))
        return KeyOnly("canal-json", kind, str(document.get("database") or ""),
                       str(document.get("table") or ""), _int(extension.get("commitTs")),
                       data, old if kind == "update" else None, document)
    if document.get("handleKeyOnly"):
        kind = str(document.get("type", "")).lower()
        data = _object(document.get("data"))
        old = _object(document.get("old"))
        return KeyOnly("simple", kind, str(document.get("database") or ""),
                       str(document.get("table") or ""), _int(document.get("commitTs")),
                       old if kind == "delete" else data,
                       old if kind == "update" else None, document)
    return None


def lookups(message: KeyOnly) -> list[Lookup]:
    """The reads that make `message` whole, in `completed`'s order: the new image at the commit
    ts (insert, update), the old one at commit ts - 1 (update, delete)."""
    reads = []
    if message.kind in ("insert", "update"):
        reads.append(Lookup(message.schema, message.table, message.key, message.commit_ts))
    if message.kind in ("update", "delete"):
        old = message.key if message.old_key is None else message.old_key
        reads.append(Lookup(message.schema, message.table, old, message.commit_ts - 1))
    return reads


def completed(message: KeyOnly, *, columns: list[Column], rows: list[Row]
              ) -> tuple[bytes | None, bytes]:
    """The message (key, value) the changefeed would have sent whole: `rows` read as
    `lookups` says, with `columns` describing them.

    Raises:
        MessageFormatError: a column of a type whose encoding is not built (naming it).
    """
    for column in columns:
        if column.data_type not in _TYPES or (
                message.protocol == "open-protocol" and column.data_type in ("binary",
                                                                              "varbinary")) or (
                message.protocol == "simple" and column.data_type == "timestamp"):
            raise message.refusal(
                f"column `{column.name}` is {column.column_type}: making a "
                f"{message.protocol} message whole with that type is not built",
                column=column.name)
    if message.protocol == "canal-json":
        return _canal(message, columns=columns, rows=rows)
    if message.protocol == "simple":
        return _simple(message, columns=columns, rows=rows)
    return _open(message, columns=columns, rows=rows)


def _canal(message: KeyOnly, *, columns: list[Column], rows: list[Row]
          ) -> tuple[bytes | None, bytes]:
    document = dict(message.document)
    texts = [{c.name: _canal_text(row[c.name], c) for c in columns} for row in rows]
    if message.kind == "update":
        document["data"], document["old"] = [texts[0]], [texts[1]]
    else:
        document["data"], document["old"] = [texts[0]], None
    document["sqlType"] = {c.name: _TYPES[c.data_type][1] for c in columns}
    document["mysqlType"] = {c.name: _canal_mysql_type(c) for c in columns}
    extension = dict(document["_tidb"])
    extension.pop("onlyHandleKey", None)
    document["_tidb"] = extension
    return None, orjson.dumps(document)


def _canal_key(row: dict[str, Any], types: dict[str, Any]) -> dict[str, Any]:
    """A Canal-JSON key with its binary values as bytes (TiCDC writes them as ISO-8859-1)."""
    return {name: value.encode("latin-1") if isinstance(value, str) and any(
        word in str(types.get(name, "")) for word in ("binary", "blob")) else value
        for name, value in row.items()}


def _canal_mysql_type(column: Column) -> str:
    result = column.data_type
    if "unsigned" in column.column_type:
        result += " unsigned"
    if "zerofill" in column.column_type:
        result += " zerofill"
    return result


def _canal_text(value: str | bytes | None, column: Column) -> str | None:
    if value is None:
        return None
    if isinstance(value, bytes):
        # TiCDC writes a binary value's bytes as ISO-8859-1 characters.
        return value.decode("latin-1") if column.data_type in _BINARY_STRINGS \
            else value.decode()
    return value


def _simple(message: KeyOnly, *, columns: list[Column], rows: list[Row]
          ) -> tuple[bytes | None, bytes]:
    document = dict(message.document)
    document.pop("handleKeyOnly", None)
    images = [{c.name: _simple_text(row[c.name], c) for c in columns} for row in rows]
    if message.kind == "insert":
        document["data"] = images[0]
    elif message.kind == "update":
        document["data"], document["old"] = images
    else:
        document["old"] = images[0]
    return None, orjson.dumps(document)


def _simple_text(value: str | bytes | None, column: Column) -> str | None:
    if value is None:
        return None
    if isinstance(value, bytes):
        return base64.b64encode(value).decode() if column.data_type in _BINARY_STRINGS \
            else value.decode()
    return value


def _open_key_only(message: SourceMessage) -> KeyOnly | None:
    key, value = message.key or b"", message.value or b""
    if b'"ohk"' not in key or len(key) < 16 or len(value) < 8:
        return None
    head = json_object_or_empty(key[16:16 + int.from_bytes(key[8:16], "big")])
    if not head.get("ohk") or len(key) != 16 + int.from_bytes(key[8:16], "big"):
        return None
    body = json_object_or_empty(value[8:8 + int.from_bytes(value[:8], "big")])
    if "d" in body:
        kind, new, old = "delete", None, body.get("d")
    elif "p" in body:
        kind, new, old = "update", body.get("u"), body.get("p")
    else:
        kind, new, old = "insert", body.get("u"), None
    values = [{name: c.get("v") for name, c in image.items() if isinstance(c, dict)}
              if isinstance(image, dict) else {} for image in (new, old)]
    return KeyOnly("open-protocol", kind, str(head.get("scm") or ""),
                   str(head.get("tbl") or ""), _int(head.get("ts")),
                   values[1] if kind == "delete" else values[0],
                   values[1] if kind == "update" else None, body, open_key=head)


def _open(message: KeyOnly, *, columns: list[Column], rows: list[Row]
          ) -> tuple[bytes | None, bytes]:
    head = dict(message.open_key or {})
    head.pop("ohk", None)
    handles = {name for image in ("u", "p", "d")
               for name, c in (message.document.get(image) or {}).items()
               if isinstance(c, dict) and c.get("h")}
    images = [{c.name: _open_column(row[c.name], c, handle=c.name in handles)
               for c in sorted(columns, key=lambda c: c.name)} for row in rows]
    if message.kind == "insert":
        body = {"u": images[0]}
    elif message.kind == "update":
        body = {"u": images[0], "p": images[1]}
    else:
        body = {"d": images[0]}
    key_json, value_json = orjson.dumps(head), orjson.dumps(body)
    key = (1).to_bytes(8, "big") + len(key_json).to_bytes(8, "big") + key_json
    return key, len(value_json).to_bytes(8, "big") + value_json


def _open_column(value: str | bytes | None, column: Column, *, handle: bool
                 ) -> dict[str, Any]:
    flag = (_BINARY if column.binary else 0) | (_HANDLE if handle else 0) | (
        _NULLABLE if column.nullable else 0) | (
        _UNSIGNED if "unsigned" in column.column_type else 0) | {
        "PRI": _PRIMARY, "UNI": _UNIQUE, "MUL": _MULTIPLE}.get(column.column_key, 0)
    out: dict[str, Any] = {"t": _TYPES[column.data_type][0]}
    if handle:
        out["h"] = True
    out["f"] = flag
    out["v"] = _open_value(value, column)
    return out


def _open_value(value: str | bytes | None, column: Column) -> Any:
    if value is None:
        return None
    if column.data_type in _BLOBS:
        raw = value if isinstance(value, bytes) else value.encode()
        return base64.b64encode(raw).decode()
    text = value.decode() if isinstance(value, bytes) else value
    if column.data_type in _INTEGERS:
        return int(text)
    if column.data_type in _FLOATS:
        return float(text)
    return text


def _first(rows: Any) -> dict[str, Any]:
    return rows[0] if isinstance(rows, list) and rows and isinstance(rows[0], dict) else {}


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
