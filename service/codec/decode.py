"""Batch decode: Confluent-framed key/value messages -> plain-JSON rows.

Each part is ``0x00 | schema id (4 bytes BE) | Avro body``; the id is resolved through the
resolver's cache. A null value is a delete (a tombstone). Every problem of the batch is
reported with the message index, the part and the byte offset within that part's bytes.
"""

from __future__ import annotations

import binascii
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from service.codec.body import parse_json_body, text_decoder
from service.codec.errors import InvalidMessagesError, InvalidRequestError
from service.codec.resolver import SchemaResolver
from service.core.errors import FramingError
from service.core.framing import HEADER_SIZE, unframe
from service.core.record_codec import BodyDecodeError, RecordCodec
from service.core.record_schema import NotFlatAvroError
from service.registry.errors import SchemaNotFoundError

__all__ = ["DecodedBatch", "decode_batch", "decode_raw"]

@dataclass(frozen=True, slots=True)
class DecodedBatch:
    """The JSON response body and how many messages it holds."""

    body: bytes
    messages: int


class _PartError(ValueError):
    def __init__(self, message: str, offset: int | None) -> None:
        super().__init__(message)
        self.offset = offset


async def decode_batch(resolver: SchemaResolver, body: bytes) -> DecodedBatch:
    """Decode a batch request body ``{"messages": [{"key", "value"}], "encoding"}``.

    Raises:
        InvalidRequestError: the body is not the expected JSON shape.
        InvalidMessagesError: one or more messages do not decode (all listed).
    """
    document = parse_json_body(body)
    to_bytes = text_decoder(document)
    messages = document.get("messages")
    if not isinstance(messages, list):
        raise InvalidRequestError("`messages` must be a list of {key, value}",
                                  field="messages")
    frames, errors = _frames_of(messages, to_bytes)
    codecs = await _codecs_for(resolver, frames)
    out = []
    for index, parts in enumerate(frames):
        decoded: dict[str, Any] = {}
        for part, framed in zip(("key", "value"), parts, strict=True):
            try:
                decoded[part], decoded[f"{part}_schema_id"] = _decode_frame(framed, codecs)
            except _PartError as exc:
                errors.append(_error(index, part, str(exc), exc.offset))
        decoded["op"] = "delete" if parts[1] is None else "upsert"
        out.append(decoded)
    if errors:
        errors.sort(key=lambda e: (e["message_index"], e["part"] != "key"))
        raise InvalidMessagesError(errors)
    return DecodedBatch(orjson.dumps({"messages": out}), len(out))


_Framed = tuple[int, bool, bytes] | _PartError | None
"""A part as (schema id, is key, Avro body), or why it is not a frame, or None (absent)."""


def _frames_of(messages: list[Any], to_bytes: Callable[[str], bytes]
               ) -> tuple[list[tuple[_Framed, _Framed]], list[dict[str, Any]]]:
    frames: list[tuple[_Framed, _Framed]] = []
    errors: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            errors.append(_error(index, "message", "a message must be a JSON object", None))
            frames.append((None, None))
            continue
        frames.append((_frame_of(message.get("key"), to_bytes, key=True),
                       _frame_of(message.get("value"), to_bytes, key=False)))
    return frames, errors


def _frame_of(text: Any, to_bytes: Callable[[str], bytes], *, key: bool) -> _Framed:
    if text is None:
        return None
    try:
        raw = _bytes_of(text, to_bytes)
    except _PartError as exc:
        return exc
    return _frame_bytes(raw, key=key)


def _frame_bytes(raw: bytes, *, key: bool) -> _Framed:
    try:
        schema_id, body = unframe(raw)
    except FramingError as exc:
        return _PartError(exc.message, exc.details.get("offset"))
    return schema_id, key, body


async def _codecs_for(resolver: SchemaResolver, frames: list[tuple[_Framed, _Framed]]
                      ) -> dict[tuple[int, bool], RecordCodec | _PartError]:
    """Each distinct (schema id, key) of the batch resolved once."""
    wanted = {(f[0], f[1]) for parts in frames for f in parts if isinstance(f, tuple)}
    codecs: dict[tuple[int, bool], RecordCodec | _PartError] = {}
    for schema_id, key in wanted:
        try:
            codecs[schema_id, key] = await resolver.codec(schema_id, key=key)
        except SchemaNotFoundError:
            codecs[schema_id, key] = _PartError(
                f"schema id {schema_id} (at offset 1) is not in the registry", 1)
        except NotFlatAvroError as exc:
            codecs[schema_id, key] = _PartError(f"schema id {schema_id}: {exc.message}", 1)
    return codecs


def _decode_frame(framed: _Framed, codecs: dict[tuple[int, bool], RecordCodec | _PartError]
                  ) -> tuple[dict[str, Any] | None, int | None]:
    if framed is None:
        return None, None
    if isinstance(framed, _PartError):
        raise framed
    schema_id, key, body = framed
    codec = codecs[schema_id, key]
    if isinstance(codec, _PartError):
        raise codec
    try:
        return codec.decode(body), schema_id
    except BodyDecodeError as exc:
        raise _PartError(f"{exc} (at byte offset {exc.offset + HEADER_SIZE})",
                         exc.offset + HEADER_SIZE) from exc


async def decode_raw(resolver: SchemaResolver, raw: bytes, *, key: bool = False
                     ) -> DecodedBatch:
    """Decode one raw framed message (a value unless `key`), answered as a one-message batch.

    Raises:
        InvalidMessagesError: the message does not decode (offset named).
    """
    part = "key" if key else "value"
    framed = _frame_bytes(raw, key=key)
    try:
        row, schema_id = _decode_frame(framed, await _codecs_for(resolver, [(framed, None)]))
    except _PartError as exc:
        raise InvalidMessagesError([_error(0, part, str(exc), exc.offset)]) from exc
    message = {"key": None, "value": None, "key_schema_id": None, "value_schema_id": None,
               part: row, f"{part}_schema_id": schema_id, "op": "upsert"}
    return DecodedBatch(orjson.dumps({"messages": [message]}), 1)


def _bytes_of(text: Any, to_bytes: Callable[[str], bytes]) -> bytes:
    if not isinstance(text, str):
        raise _PartError("must be a string (or null)", None)
    try:
        return to_bytes(text)
    except (binascii.Error, ValueError) as exc:
        raise _PartError(f"is not valid text in the request's encoding ({exc})", None) from exc


def _error(index: int, part: str, reason: str, offset: int | None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": "invalid_message", "message_index": index, "part": part,
                             "message": f"message {index} {part}: {reason}", "reason": reason}
    if offset is not None:
        error["offset"] = offset
    return error
