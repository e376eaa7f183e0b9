"""The Open Protocol decoder: one Kafka message -> the events of its batch.

Byte layout (big-endian int64 lengths)::

    key   = version(8) = 1 | len(8) | key JSON 1 | len(8) | key JSON 2 | ...
    value =                len(8) | value 1    | len(8) | value 2    | ...

Key i pairs with value i. Key JSON: ``ts``, ``scm``, ``tbl``, ``t`` (1 row, 2 DDL, 3
resolved), optionally ``rid``, ``ptn``, ``ohk``, ``ccl``. Row values: ``u`` (after image;
INSERT, or UPDATE with ``p``, the before image), ``d`` (DELETE). DDL values: ``q``, ``t``.
A resolved event's value is empty.
"""

from __future__ import annotations

from typing import Any

import orjson

from service.cdc.definition import TableDefinition
from service.cdc.errors import MessageFormatError, handle_key_only
from service.cdc.events import ChangeEvent, DecodedMessage, EventKind, SourceMessage
from service.cdc.open_protocol.columns import derive_definition
from service.cdc.open_protocol.values import typed_value

__all__ = ["Decoder", "PROTOCOL_VERSION"]

PROTOCOL_VERSION = 1
_LENGTH = 8


class Decoder:
    """Decodes Open Protocol messages (stateless)."""

    def __init__(self, *, schema_cache_size: int = 0) -> None:
        del schema_cache_size  # no state: every message carries its types

    def decode(self, message: SourceMessage) -> DecodedMessage:
        """The events of one batch message (see the module docstring for the layout).

        Raises:
            MessageFormatError: bad framing (with the byte offset), a version other than 1,
                unpaired keys and values, malformed JSON, unknown type codes, bad values.
        """
        if message.key is None:
            raise MessageFormatError("an Open Protocol message needs a key", part="key")
        if len(message.key) < _LENGTH:
            raise MessageFormatError(f"the key is {len(message.key)} byte(s), shorter than "
                                     f"its 8-byte protocol version", part="key", offset=0)
        version = int.from_bytes(message.key[:_LENGTH], "big", signed=True)
        if version != PROTOCOL_VERSION:
            raise MessageFormatError(
                f"the key starts with protocol version {version}; only 1 is defined",
                part="key", offset=0)
        keys = _entries(message.key, _LENGTH, part="key")
        values = _entries(message.value or b"", 0, part="value")
        if values and len(values) != len(keys):
            raise MessageFormatError(
                f"the key holds {len(keys)} event key(s) but the value {len(values)} event "
                f"value(s); they pair by position", part="value")
        decoded = DecodedMessage()
        for position, key in enumerate(keys):
            value = values[position] if values else None
            decoded.events.append(_event(key, value, index=message.index, position=position))
        return decoded


def _entries(data: bytes, start: int, *, part: str) -> list[tuple[int, bytes]]:
    """The length-prefixed entries of `data` from `start`, each with its payload's offset."""
    entries: list[tuple[int, bytes]] = []
    offset = start
    while offset < len(data):
        if offset + _LENGTH > len(data):
            raise MessageFormatError(
                f"a length field at byte {offset} of the {part} is cut off "
                f"({len(data) - offset} of 8 bytes)", part=part, offset=offset)
        length = int.from_bytes(data[offset:offset + _LENGTH], "big", signed=True)
        end = offset + _LENGTH + length
        if length < 0 or end > len(data):
            raise MessageFormatError(
                f"the length {length} at byte {offset} of the {part} runs past its "
                f"{len(data)} bytes", part=part, offset=offset)
        entries.append((offset + _LENGTH, data[offset + _LENGTH:end]))
        offset = end
    return entries


def _json(raw: bytes, *, part: str, offset: int, position: int) -> dict[str, Any]:
    try:
        document = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise MessageFormatError(
            f"event {position}: the {part} JSON at byte {offset} is malformed "
            f"({exc.msg} at character {exc.pos})", part=part, offset=offset + exc.pos,
            event=position) from exc
    if not isinstance(document, dict):
        raise MessageFormatError(f"event {position}: the {part} at byte {offset} is not a "
                                 f"JSON object", part=part, offset=offset, event=position)
    return document


def _event(key_entry: tuple[int, bytes], value: tuple[int, bytes] | None, *, index: int,
           position: int) -> ChangeEvent:
    """The event of one (key, value) pair: each entry is (its payload's offset, payload)."""
    key_offset, key_bytes = key_entry
    key = _json(key_bytes, part="key", offset=key_offset, position=position)
    ts, kind = key.get("ts"), key.get("t")
    if not isinstance(ts, int) or isinstance(ts, bool) or ts < 0:
        raise MessageFormatError(f"event {position}: `ts` must be a TSO (an integer)",
                                 part="key", offset=key_offset, field="ts", event=position)
    if kind == 3:
        return ChangeEvent(EventKind.WATERMARK, None, None, ts, index)
    if kind not in (1, 2):
        raise MessageFormatError(f"event {position}: unknown event type t={kind!r}",
                                 part="key", offset=key_offset, field="t", event=position)
    schema = _name(key, "scm", position=position, offset=key_offset)
    table = _name(key, "tbl", position=position, offset=key_offset)
    if value is None or not value[1]:
        raise MessageFormatError(f"event {position}: a row or DDL event needs a value",
                                 part="value", event=position)
    body = _json(value[1], part="value", offset=value[0], position=position)
    if kind == 2:
        query = body.get("q")
        if not isinstance(query, str):
            raise MessageFormatError(f"event {position}: a DDL value needs `q`, the query",
                                     part="value", offset=value[0], field="q", event=position)
        return ChangeEvent(EventKind.DDL, schema or None, table or None, ts, index,
                           query=query)
    if key.get("ohk"):
        columns = body.get("u") or body.get("d") or {}
        raise handle_key_only((schema, table), key={
            name: column.get("v") for name, column in columns.items()
            if isinstance(column, dict)} if isinstance(columns, dict) else {},
            commit_ts=ts, flag="ohk", part="key", offset=key_offset, field="ohk",
            event=position)
    return _row_event(body, index=index, position=position, offset=value[0], ts=ts,
                      schema=schema, table=table)


def _name(key: dict[str, Any], field: str, *, position: int, offset: int) -> str:
    name = key.get(field, "")
    if not isinstance(name, str):
        raise MessageFormatError(f"event {position}: `{field}` must be a string",
                                 part="key", offset=offset, field=field, event=position)
    return name


def _row_event(body: dict[str, Any], *, index: int, position: int, offset: int, ts: int,
               schema: str, table: str) -> ChangeEvent:
    if not schema or not table:
        raise MessageFormatError(f"event {position}: a row event needs `scm` and `tbl`",
                                 part="key", event=position)
    images = {name: _image(body[name], name, position=position, offset=offset)
              for name in ("u", "p", "d") if name in body}
    if "d" in images:
        return ChangeEvent(EventKind.DELETE, schema, table, ts, index,
                           old_row=_typed(images["d"], position=position, offset=offset))
    if "u" not in images:
        raise MessageFormatError(f"event {position}: a row value needs `u` or `d`",
                                 part="value", offset=offset, event=position)
    after = images["u"]
    row = _typed(after, position=position, offset=offset)
    before = _typed(images["p"], position=position, offset=offset) if "p" in images else None
    return ChangeEvent(
        EventKind.UPDATE if "p" in images else EventKind.INSERT, schema, table, ts, index,
        row=row, old_row=before,
        definition=_definition(after, schema=schema, table=table, position=position,
                               offset=offset))


def _image(columns: Any, name: str, *, position: int, offset: int
           ) -> dict[str, dict[str, Any]]:
    if not isinstance(columns, dict):
        raise MessageFormatError(f"event {position}: `{name}` must be an object of columns",
                                 part="value", offset=offset, field=name, event=position)
    for column, obj in columns.items():
        if not isinstance(obj, dict) or "t" not in obj:
            raise MessageFormatError(
                f"event {position}: column `{column}` is not a column object with `t`",
                part="value", offset=offset, column=column, field=f"{name}/{column}",
                event=position)
        code, flags = obj["t"], obj.get("f")
        if not isinstance(code, int) or isinstance(code, bool) or (
                flags is not None and (not isinstance(flags, int) or isinstance(flags, bool))):
            raise MessageFormatError(
                f"event {position}: column `{column}` needs integer `t` and `f`",
                part="value", offset=offset, column=column, field=f"{name}/{column}",
                event=position)
    return columns


def _typed(columns: dict[str, dict[str, Any]], *, position: int, offset: int
           ) -> dict[str, Any]:
    try:
        return {name: typed_value(name, obj["t"], flags=obj.get("f"), value=obj.get("v"))
                for name, obj in columns.items()}
    except MessageFormatError as exc:
        exc.details.update(part="value", offset=offset, event=position)
        raise


def _definition(columns: dict[str, dict[str, Any]], *, schema: str, table: str,
                position: int, offset: int) -> TableDefinition:
    try:
        return derive_definition(schema, table, columns=columns)
    except MessageFormatError as exc:
        exc.details.update(part="value", offset=offset, event=position)
        raise
