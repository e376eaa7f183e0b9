"""The Canal-JSON decoder: one Kafka message (one JSON object) -> its events.

``isDdl: true`` is a DDL event; ``type: TIDB_WATERMARK`` a watermark (``_tidb.watermarkTs``);
otherwise ``type`` is INSERT, UPDATE or DELETE and every row of ``data`` is one change: an
UPDATE pairs ``data[i]`` with ``old[i]`` (which may hold only the changed columns: the others
are taken from ``data[i]``), a DELETE's row is ``data[i]``. The commit ts is
``_tidb.commitTs``; without the extension it is ``es << 18`` (the commit's physical
milliseconds, logical part 0).
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

from service.cdc.canal_json.columns import column_type, derive_definition
from service.cdc.canal_json.values import typed_row
from service.cdc.definition import TableDefinition
from service.cdc.errors import MessageFormatError, handle_key_only, json_object_value
from service.cdc.events import ChangeEvent, DecodedMessage, EventKind, SourceMessage
from service.core.table import ColumnType

__all__ = ["Decoder"]

_ROW_KINDS = {"INSERT": EventKind.INSERT, "UPDATE": EventKind.UPDATE,
              "DELETE": EventKind.DELETE}


class Decoder:
    """Decodes Canal-JSON messages (stateless)."""

    def __init__(self, *, schema_cache_size: int = 0) -> None:
        del schema_cache_size  # no state: every DML message carries its column types

    def decode(self, message: SourceMessage) -> DecodedMessage:
        """The events of one Canal-JSON message.

        Raises:
            MessageFormatError: malformed JSON, missing fields, unknown types, values that
                do not parse as their column type, ``old`` rows that do not pair with
                ``data``.
        """
        document = _document(message.value)
        extension = document.get("_tidb") or {}
        if not isinstance(extension, dict):
            raise MessageFormatError("`_tidb` must be an object", field="_tidb")
        if document.get("isDdl") is True:
            return DecodedMessage([ChangeEvent(
                EventKind.DDL, _text(document, "database") or None,
                _text(document, "table") or None, _commit_ts(document, extension),
                message.index, query=_text(document, "sql"))])
        kind = document.get("type")
        if not isinstance(kind, str):
            raise MessageFormatError("`type` must be a string", field="type")
        if kind == "TIDB_WATERMARK":
            return DecodedMessage([ChangeEvent(
                EventKind.WATERMARK, None, None, _tso(extension, "watermarkTs", where="_tidb"),
                message.index)])
        if kind not in _ROW_KINDS:
            raise MessageFormatError(f"unknown event type {kind!r}", field="type")
        if extension.get("onlyHandleKey"):
            rows = document.get("data")
            row = rows[0] if isinstance(rows, list) and rows and isinstance(rows[0], dict) \
                else {}
            raise handle_key_only((_text(document, "database"), _text(document, "table")),
                                  key=row, commit_ts=_commit_ts(document, extension),
                                  flag="onlyHandleKey", field="_tidb/onlyHandleKey")
        return DecodedMessage(_rows(document, kind=_ROW_KINDS[kind], index=message.index,
                                    commit_ts=_commit_ts(document, extension)))


def _document(value: bytes | None) -> dict[str, Any]:
    return json_object_value(value, "Canal-JSON")


def _text(document: dict[str, Any], field: str) -> str:
    value = document.get(field) or ""
    if not isinstance(value, str):
        raise MessageFormatError(f"`{field}` must be a string", field=field)
    return value


def _tso(document: dict[str, Any], field: str, *, where: str) -> int:
    value = document.get(field)
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 1 << 63:
        raise MessageFormatError(f"`{where}.{field}` must be a TSO (an integer >= 0)",
                                 field=f"{where}/{field}")
    return value


def _commit_ts(document: dict[str, Any], extension: dict[str, Any]) -> int:
    if "commitTs" in extension:
        return _tso(extension, "commitTs", where="_tidb")
    if document.get("es") is None:
        return 0
    return _tso(document, "es", where="message") << 18


def _rows(document: dict[str, Any], *, kind: EventKind, index: int, commit_ts: int
          ) -> list[ChangeEvent]:
    schema, table = _text(document, "database"), _text(document, "table")
    if not schema or not table:
        raise MessageFormatError("a DML message needs `database` and `table`",
                                 field="database" if not schema else "table")
    data = _row_list(document, "data")
    old = _row_list(document, "old") if kind is EventKind.UPDATE else []
    if kind is EventKind.UPDATE and len(old) != len(data):
        raise MessageFormatError(f"`old` has {len(old)} row(s) but `data` {len(data)}; an "
                                 f"UPDATE pairs them by position", field="old")
    mysql_types, sql_types = _mapping(document, "mysqlType"), document.get("sqlType") or {}
    pk_names = document.get("pkNames") or []
    if not isinstance(pk_names, list) or not all(isinstance(n, str) for n in pk_names):
        raise MessageFormatError("`pkNames` must be a list of column names", field="pkNames")
    events = []
    for position, row in enumerate(data):
        types, definition = _shape_of(schema, table, row=row, mysql_types=mysql_types,
                                      sql_types=sql_types, pk_names=pk_names)
        after = typed_row(row, types, where=f"data/{position}")
        if kind is EventKind.DELETE:
            events.append(ChangeEvent(kind, schema, table, commit_ts, index, old_row=after))
            continue
        before = None
        if kind is EventKind.UPDATE:
            before = _old_row(old[position], after, types=types, position=position)
        events.append(ChangeEvent(kind, schema, table, commit_ts, index, row=after,
                                  old_row=before, definition=definition))
    return events


def _row_list(document: dict[str, Any], field: str) -> list[dict[str, Any]]:
    rows = document.get(field)
    if not isinstance(rows, list) or not rows or not all(isinstance(r, dict) for r in rows):
        raise MessageFormatError(f"`{field}` must be a non-empty list of row objects",
                                 field=field)
    return rows


def _mapping(document: dict[str, Any], field: str) -> dict[str, Any]:
    value = document.get(field)
    if not isinstance(value, dict):
        raise MessageFormatError(f"a DML message needs `{field}`, an object by column",
                                 field=field)
    return value


class _Shape(NamedTuple):
    """What a row's column types and table definition derive from: its table, columns (in
    ``data`` order), ``mysqlType``, ``sqlType`` (its items; None when it is not an object)
    and ``pkNames``."""

    schema: str
    table: str
    columns: tuple[str, ...]
    mysql_types: tuple[tuple[str, Any], ...]
    sql_types: tuple[tuple[str, Any], ...] | None
    pk_names: tuple[str, ...]


_Derived = tuple[dict[str, ColumnType], TableDefinition]

# Per table, the last shape seen and what it derived: a table's messages repeat it, and
# comparing the message's own dicts with the last ones (equal strings, hashes already known)
# costs less than building and hashing the `_Shape` key of every row.
_LAST: dict[tuple[str, str], tuple[list[str], Any, Any, list[str], _Derived]] = {}


def _shape_of(schema: str, table: str, *, row: dict[str, Any], mysql_types: dict[str, Any],
              sql_types: Any, pk_names: list[str]) -> _Derived:
    """`_shape` of a row of `schema`.`table` (`sql_types`: the message's ``sqlType``, any
    JSON value)."""
    columns, last = list(row), _LAST.get((schema, table))
    if (last is not None and last[0] == columns and last[1] == mysql_types
            and last[2] == sql_types and last[3] == pk_names):
        return last[4]
    sql_items = tuple(sql_types.items()) if isinstance(sql_types, dict) else None
    derived = _shape(_Shape(schema, table, tuple(columns), tuple(mysql_types.items()),
                            sql_items, tuple(pk_names)))
    if len(_LAST) >= 1024:
        _LAST.clear()
    _LAST[(schema, table)] = (columns, mysql_types, sql_types, pk_names, derived)
    return derived


def _shape(shape: _Shape) -> _Derived:
    """The row's column types and the table definition they imply. A table's messages repeat
    the same columns, types and key, so these are derived once per distinct shape (the
    result is shared: never modified)."""
    try:
        return _cached_shape(shape)
    except TypeError:  # an unhashable type entry: not cached (and refused below)
        return _derive_shape(shape)


def _derive_shape(shape: _Shape) -> _Derived:
    sql_types = None if shape.sql_types is None else dict(shape.sql_types)
    types, missing = _types(shape.columns, mysql_types=dict(shape.mysql_types),
                            sql_types=sql_types)
    return types, derive_definition(shape.schema, shape.table, types=types, missing=missing,
                                    pk_names=list(shape.pk_names))


_cached_shape = functools.lru_cache(maxsize=1024)(_derive_shape)


def _types(columns: tuple[str, ...], *, mysql_types: dict[str, Any],
           sql_types: dict[str, Any] | None) -> tuple[dict[str, ColumnType], dict[str, str]]:
    types: dict[str, ColumnType] = {}
    missing: dict[str, str] = {}
    for column in columns:
        sql_type = None if sql_types is None else sql_types.get(column)
        types[column], fact = column_type(column, mysql_types.get(column), sql_type=sql_type)
        if fact is not None:
            missing[column] = fact
    return types, missing


def _old_row(old: dict[str, Any], after: dict[str, Any], *, types: dict[str, ColumnType],
             position: int) -> dict[str, Any]:
    unknown = [c for c in old if c not in types]
    if unknown:
        raise MessageFormatError(f"column `{unknown[0]}` is in `old` but not in `data`",
                                 column=unknown[0], field=f"old/{position}/{unknown[0]}")
    changed = typed_row(old, types, where=f"old/{position}")
    return {column: changed.get(column, value) if column in old else value
            for column, value in after.items()}
