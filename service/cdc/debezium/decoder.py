"""The Debezium decoder: one Kafka message of a ``protocol=debezium`` changefeed -> its events.

The value is ``{"payload": ..., "schema": ...}`` (``schema`` absent with
``debezium-disable-schema``). ``payload.op`` is ``c`` (insert), ``u`` (update: ``after``, and
``before`` when the changefeed outputs old values), ``d`` (delete: ``before``), ``r`` (read,
taken as an insert) or ``m`` (TiCDC's watermark); a payload with ``ddl`` and no ``op`` is a DDL
event. The commit ts is TiCDC's ``payload.source.commit_ts``. The key (``{"payload": {handle
key columns}}``) names the handle key.

Column types come from the DDL events read before a row (their ``tableChanges`` say every
type exactly; the decoder keeps the last `HISTORY` versions per table, so a row read again
after an ALTER gets the types current at its commit ts), else from the row's field schemas
(and TiCDC's ``tidb_type``), which do not say everything (`columns`): a value that needs a
fact they lack is refused, and the definition the row implies lists what it lacks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from service.cdc.debezium.columns import Known, from_field, from_table_change
from service.cdc.debezium.values import converter, time_zone
from service.cdc.definition import MissingFact, TableDefinition
from service.cdc.errors import MessageFormatError, json_object_value
from service.cdc.events import ChangeEvent, DecodedMessage, EventKind, SourceMessage
from service.core.table import Column

__all__ = ["Decoder", "HISTORY"]

HISTORY = 32
"""Versions of a table's column types kept, for rows read again after their table changed."""

SOURCE = "Debezium message (field schemas and tidb_type)"
_ROW_KINDS = {"c": EventKind.INSERT, "r": EventKind.INSERT, "u": EventKind.UPDATE,
              "d": EventKind.DELETE}
_SCHEMA_FACTS = ("the integer type", "whether it is DOUBLE or DECIMAL",
                 "whether it is text or binary", "DECIMAL precision and scale")

_Types = dict[str, Known]


@dataclass(frozen=True, slots=True)
class _Shape:
    """What the rows of one table version share: each column's type and value converter, and
    the definition they imply."""

    types: _Types
    convert: dict[str, Callable[[Any], Any]]
    definition: TableDefinition


class Decoder:
    """Decodes Debezium messages; remembers each table's column types from its DDL events."""

    def __init__(self, *, schema_cache_size: int = 0, tz: str = "UTC") -> None:
        """`tz`: the changefeed's time zone (TiCDC's consumers' ``--tz``), where its
        TIMESTAMP values are written back to from the Debezium message's UTC.

        Raises:
            InvalidOptionError: `tz` is not an IANA time zone.
        """
        del schema_cache_size
        self._zone = time_zone(tz)
        self._tables: dict[tuple[str, str], list[tuple[int, _Types | None]]] = {}
        # per table, the last row shape: its field schemas, followed types and key, compared
        # with the next row's (equal dicts) instead of rebuilt (most of the decoding's time)
        self._last: dict[tuple[str, str], tuple[Any, _Types | None, tuple[str, ...], _Shape]] = {}

    def decode(self, message: SourceMessage) -> DecodedMessage:
        """The events of one Debezium message.

        Raises:
            MessageFormatError: malformed JSON or envelope, unknown ``op`` or field types,
                values that are not what TiCDC writes, values that need a fact no message
                gave yet.
        """
        document = json_object_value(message.value, "Debezium")
        payload = _object(document, "payload", where="")
        source = _object(payload, "source", where="payload")
        commit_ts = _tso(source)
        op = payload.get("op")
        if op is None and "ddl" in payload:
            return DecodedMessage([self._ddl(payload, source, commit_ts=commit_ts,
                                             index=message.index)])
        if op == "m":
            return DecodedMessage([ChangeEvent(EventKind.WATERMARK, None, None, commit_ts,
                                               message.index)])
        if op not in _ROW_KINDS:
            raise MessageFormatError(f"unknown `op` {op!r} (TiCDC writes c, u, d and m)",
                                     field="payload/op")
        return DecodedMessage([self._row(document, payload, source=source, key=message.key,
                                         kind=_ROW_KINDS[op], commit_ts=commit_ts,
                                         index=message.index)])

    def _ddl(self, payload: dict[str, Any], source: dict[str, Any], *, commit_ts: int,
             index: int) -> ChangeEvent:
        query = payload.get("ddl")
        if not isinstance(query, str):
            raise MessageFormatError("`ddl` must be a string", field="payload/ddl")
        schema = payload.get("databaseName") or source.get("db") or None
        table = source.get("table") or None
        changes = payload.get("tableChanges") or []
        if not isinstance(changes, list):
            raise MessageFormatError("`tableChanges` must be a list",
                                     field="payload/tableChanges")
        for position, change in enumerate(changes):
            self._follow(change, schema=schema or "", table=table or "", commit_ts=commit_ts,
                         where=f"payload/tableChanges/{position}")
        return ChangeEvent(EventKind.DDL, schema, table, commit_ts, index, query=query)

    def _follow(self, change: Any, *, schema: str, table: str, commit_ts: int,
                where: str) -> None:
        if not isinstance(change, dict):
            raise MessageFormatError("a table change must be an object", field=where)
        versions = self._tables.setdefault((schema, table), [])
        if versions and commit_ts <= versions[-1][0]:
            return  # read again: already followed
        types: _Types | None = None
        if change.get("type") != "DROP":
            body = change.get("table")
            columns = body.get("columns") if isinstance(body, dict) else None
            if not isinstance(columns, list):
                raise MessageFormatError("a CREATE or ALTER table change needs "
                                         "`table.columns`", field=f"{where}/table")
            types = dict(from_table_change(c, where=f"{where}/table/columns/{i}")
                         if isinstance(c, dict) else _not_object(f"{where}/table/columns/{i}")
                         for i, c in enumerate(columns))
        versions.append((commit_ts, types))
        del versions[:-HISTORY]

    def _followed(self, schema: str, table: str, *, commit_ts: int) -> _Types | None:
        for made, types in reversed(self._tables.get((schema, table), ())):
            if made < commit_ts:
                return types
        return None

    def _row(self, document: dict[str, Any], payload: dict[str, Any], *,
             source: dict[str, Any], key: bytes | None, kind: EventKind, commit_ts: int,
             index: int) -> ChangeEvent:
        schema, table = source.get("db"), source.get("table")
        if not isinstance(schema, str) or not schema or not isinstance(table, str) or not table:
            raise MessageFormatError("a row change needs `source.db` and `source.table`",
                                     field="payload/source")
        shape = self._shape(schema, table, fields=document.get("schema"), key=_key_columns(key),
                            followed=self._followed(schema, table, commit_ts=commit_ts))
        images = {}
        for image in ("before", "after"):
            row = payload.get(image)
            if row is not None:
                images[image] = _typed_row(row, shape.convert, where=f"payload/{image}")
        wanted = "before" if kind is EventKind.DELETE else "after"
        if wanted not in images:
            raise MessageFormatError(f"an op `{payload['op']}` message needs `{wanted}`",
                                     field=f"payload/{wanted}")
        definition = shape.definition
        if kind is EventKind.DELETE:
            return ChangeEvent(kind, schema, table, commit_ts, index, old_row=images["before"],
                               definition=definition)
        return ChangeEvent(kind, schema, table, commit_ts, index, row=images["after"],
                           old_row=images.get("before"), definition=definition)


    def _shape(self, schema: str, table: str, *, fields: Any, key: tuple[str, ...],
               followed: _Types | None) -> _Shape:
        last = self._last.get((schema, table))
        if last is not None and last[1] is followed and last[2] == key and last[0] == fields:
            return last[3]
        types = _types(fields, followed=followed)
        shape = _Shape(types, {name: converter(known, column=name, where=f"payload/{{}}/{name}",
                                               zone=self._zone)
                               for name, known in types.items()},
                       _definition(schema, table, types=types, key=key))
        if len(self._last) >= 1024:
            self._last.clear()
        self._last[(schema, table)] = (fields, followed, key, shape)
        return shape


def _not_object(where: str) -> tuple[str, Known]:
    raise MessageFormatError("a tableChanges column must be an object", field=where)


def _object(document: dict[str, Any], name: str, *, where: str) -> dict[str, Any]:
    value = document.get(name)
    if not isinstance(value, dict):
        path = f"{where}/{name}" if where else name
        raise MessageFormatError(f"`{path.replace('/', '.')}` must be an object", field=path)
    return value


def _tso(source: dict[str, Any]) -> int:
    value = source.get("commit_ts")
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 1 << 64:
        raise MessageFormatError("`payload.source.commit_ts` must be a TSO (an integer >= 0; "
                                 "TiCDC writes it in every message)",
                                 field="payload/source/commit_ts")
    return value


def _types(schema: Any, *, followed: _Types | None) -> _Types:
    """Each column's type: the row's field schemas (``schema.fields``' ``after``, else
    ``before``), each refined by the followed DDL's type of that column; without field
    schemas, the followed DDL's columns."""
    fields = _row_fields(schema)
    if fields is None:
        if followed is None:
            raise MessageFormatError(
                "the message has no `schema` (debezium-disable-schema) and no DDL event of "
                "its table was read before it: its column types are unknown", field="schema")
        return followed
    types: _Types = {}
    for position, field in enumerate(fields):
        known = from_field(field, where=f"schema/fields/after/fields/{position}")
        name = field["field"]
        exact = None if followed is None else followed.get(name)
        if exact is not None:
            known = Known(exact.type, known.optional if known.optional is not None
                          else exact.optional, micros=known.micros)
        types[name] = known
    return types


def _row_fields(schema: Any) -> list[Any] | None:
    if schema is None:
        return None
    fields = schema.get("fields") if isinstance(schema, dict) else None
    if not isinstance(fields, list):
        raise MessageFormatError("`schema.fields` must be a list", field="schema/fields")
    images = {f.get("field"): f for f in fields if isinstance(f, dict)}
    image = images.get("after") or images.get("before")
    if image is None or not isinstance(image.get("fields"), list):
        raise MessageFormatError("`schema.fields` has no `after` or `before` struct",
                                 field="schema/fields")
    return image["fields"]


def _typed_row(row: Any, convert: dict[str, Callable[[Any], Any]], *, where: str
               ) -> dict[str, Any]:
    if not isinstance(row, dict):
        raise MessageFormatError(f"`{where.replace('/', '.')}` must be an object or null",
                                 field=where)
    try:
        return {column: convert[column](value) for column, value in row.items()}
    except KeyError:
        column = next(c for c in row if c not in convert)
        raise MessageFormatError(f"column `{column}` is in the row but not in its schema",
                                 column=column, field=f"{where}/{column}") from None
    except MessageFormatError as exc:
        image = where.rsplit("/", 1)[-1]
        field = str(exc.details.get("field", "")).replace("{}", image)
        raise MessageFormatError(exc.message, **{**exc.details, "field": field}) from None


def _key_columns(key: bytes | None) -> tuple[str, ...]:
    """The handle key's column names: the key message's payload fields (none: keyless)."""
    if not key:
        return ()
    try:
        document = orjson.loads(key)
    except orjson.JSONDecodeError as exc:
        raise MessageFormatError(f"the key is not JSON ({exc.msg} at character {exc.pos})",
                                 part="key", position=exc.pos) from exc
    payload = document.get("payload") if isinstance(document, dict) else None
    if not isinstance(payload, dict):
        raise MessageFormatError("the key must be a JSON object with a `payload` object",
                                 part="key", field="payload")
    return tuple(payload)


def _definition(schema: str, table: str, *, types: _Types, key: tuple[str, ...]
                ) -> TableDefinition:
    missing: list[MissingFact] = []
    for name, known in types.items():
        missing.extend(MissingFact(name, fact) for fact in sorted(known.unknown)
                       if fact.startswith(_SCHEMA_FACTS))
    columns = tuple(Column(name, known.type, nullable=known.optional
                           if known.optional is not None else name not in key)
                    for name, known in types.items())
    return TableDefinition(schema, table, columns, key, exact=False, source=SOURCE,
                           missing=tuple(missing))
