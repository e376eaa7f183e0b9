"""Batch decode: Confluent- or AWS Glue-framed key/value messages -> plain-JSON rows.

Each part is ``0x00 | schema id (4 bytes BE) | Avro body`` (Confluent) or ``0x03 | compression
| schema version UUID (16 bytes) | Avro body`` (Glue, with a glue:// registry); the id is
resolved through the resolver's cache (a Glue part's schema id is its version's UUID).
A null value is a delete (a tombstone). Every problem of the batch is
reported with the message index, the part, the byte offset within that part's bytes and,
once the id is known, the schema id, the subject it is registered under and the field where
decoding stopped, in plain words.
"""

from __future__ import annotations

import binascii
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from service.codec.body import parse_json_body, text_decoder
from service.codec.errors import InvalidMessagesError, InvalidRequestError
from service.codec.offload import run_cpu
from service.codec.resolver import SchemaResolver
from service.core.errors import FramingError
from service.core.framing import unframe_any
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
    """Why one part does not decode: the reason, the byte offset and what is known of it."""

    def __init__(self, reason: str, offset: int | None, *, schema_id: int | str | None = None,
                 field: str | None = None) -> None:
        super().__init__(reason)
        self.offset, self.schema_id, self.field = offset, schema_id, field


_Failure = tuple[int, str, _PartError]
"""(message index, part, why) of one part that does not decode."""


async def decode_batch(resolver: SchemaResolver, body: bytes) -> DecodedBatch:
    """Decode a batch request body ``{"messages": [{"key", "value"}], "encoding"}``.

    Raises:
        InvalidRequestError: the body is not the expected JSON shape.
        InvalidMessagesError: one or more messages do not decode (all listed).
    """
    size = len(body)
    document = await run_cpu(size, parse_json_body, body)
    to_bytes = text_decoder(document)
    messages = document.get("messages")
    if not isinstance(messages, list):
        raise InvalidRequestError("`messages` must be a list of {key, value}",
                                  field="messages")
    frames, failures = await run_cpu(size, _frames_of, messages, to_bytes)
    codecs = await _codecs_for(resolver, frames)
    out, undecodable = await run_cpu(size, _decode_frames, frames, codecs)
    failures.extend(undecodable)
    if failures:
        failures.sort(key=lambda f: (f[0], f[1] != "key"))
        raise InvalidMessagesError(await _errors(resolver, failures))
    return await run_cpu(size, _decoded_batch, out)


def _decoded_batch(out: list[dict[str, Any]]) -> DecodedBatch:
    return DecodedBatch(orjson.dumps({"messages": out}), len(out))


def _decode_frames(frames: list[tuple[_Framed, _Framed]], codecs: _Codecs
                   ) -> tuple[list[dict[str, Any]], list[_Failure]]:
    """Decode every frame: the messages, and the parts that do not decode."""
    out = []
    failures: list[_Failure] = []
    for index, parts in enumerate(frames):
        decoded: dict[str, Any] = {}
        for part, framed in zip(("key", "value"), parts, strict=True):
            try:
                decoded[part], decoded[f"{part}_schema_id"] = _decode_frame(framed, codecs)
            except _PartError as exc:
                failures.append((index, part, exc))
        decoded["op"] = "delete" if parts[1] is None else "upsert"
        out.append(decoded)
    return out, failures


_Framed = tuple[int | uuid.UUID, bool, bytes, int] | _PartError | None
"""A part as (schema id or Glue version, is key, the bytes, the Avro body's offset in them),
or why it is not a frame, or None."""

_Codecs = dict[tuple[int | uuid.UUID, bool], tuple[int | str, RecordCodec] | _PartError]
"""Each (schema id or Glue version, is key) of a batch: (the id answers name, codec), or why
it does not resolve."""


def _frames_of(messages: list[Any], to_bytes: Callable[[str], bytes]
               ) -> tuple[list[tuple[_Framed, _Framed]], list[_Failure]]:
    frames: list[tuple[_Framed, _Framed]] = []
    failures: list[_Failure] = []
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            failures.append((index, "message",
                             _PartError("a message must be a JSON object", None)))
            frames.append((None, None))
            continue
        frames.append((_frame_of(message.get("key"), to_bytes, key=True),
                       _frame_of(message.get("value"), to_bytes, key=False)))
    return frames, failures


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
        parsed = unframe_any(raw)
    except FramingError as exc:
        return _PartError(exc.message, exc.details.get("offset"))
    return parsed.schema, key, parsed.data, parsed.start


async def _codecs_for(resolver: SchemaResolver, frames: list[tuple[_Framed, _Framed]]
                      ) -> _Codecs:
    """Each distinct (schema id or Glue version, key) of the batch resolved once."""
    wanted = {(f[0], f[1]) for parts in frames for f in parts if isinstance(f, tuple)}
    codecs: _Codecs = {}
    for schema, key in wanted:
        named = schema if isinstance(schema, int) else str(schema)
        what, offset = ((f"schema id {schema}", 1) if isinstance(schema, int) else
                        (f"AWS Glue schema version {schema}", 2))
        try:
            if isinstance(schema, int):
                codecs[schema, key] = named, await resolver.codec(schema, key=key)
            else:
                codecs[schema, key] = named, (await resolver.glue_codec(schema, key=key))[1]
        except SchemaNotFoundError as exc:
            reason = exc.message if isinstance(schema, uuid.UUID) else "is not in the registry"
            codecs[schema, key] = _PartError(f"{what} (at offset {offset}) {reason}", offset,
                                             schema_id=named)
        except NotFlatAvroError as exc:
            codecs[schema, key] = _PartError(f"{what}: {exc.message}", offset, schema_id=named)
    return codecs


def _decode_frame(framed: _Framed, codecs: _Codecs
                  ) -> tuple[dict[str, Any] | None, int | str | None]:
    if framed is None:
        return None, None
    if isinstance(framed, _PartError):
        raise framed
    schema, key, data, start = framed
    resolved = codecs[schema, key]
    if isinstance(resolved, _PartError):
        raise resolved
    schema_id, codec = resolved
    try:
        return codec.decode(data, start), schema_id
    except BodyDecodeError as exc:  # offsets count from the message's first byte
        raise _PartError(str(exc), exc.offset, schema_id=schema_id, field=exc.field) from exc


async def decode_raw(resolver: SchemaResolver, raw: bytes, *, key: bool = False
                     ) -> DecodedBatch:
    """Decode one raw framed message (a value unless `key`), answered as a one-message batch.

    Raises:
        InvalidMessagesError: the message does not decode (offset, schema id, subject and
            field named).
    """
    part = "key" if key else "value"
    framed = _frame_bytes(raw, key=key)
    try:
        row, schema_id = _decode_frame(framed, await _codecs_for(resolver, [(framed, None)]))
    except _PartError as exc:
        raise InvalidMessagesError(await _errors(resolver, [(0, part, exc)])) from exc
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


async def _errors(resolver: SchemaResolver, failures: list[_Failure]) -> list[dict[str, Any]]:
    """The error entries, each schema id named with its subject (asked once per id)."""
    ids = {f[2].schema_id for f in failures if isinstance(f[2].schema_id, int)}
    subjects: dict[int | str | None, list[str]] = {
        schema_id: await resolver.subjects_of(schema_id) for schema_id in ids}
    return [_error(failure, subjects.get(failure[2].schema_id, [])) for failure in failures]


def _error(failure: _Failure, subjects: list[str]) -> dict[str, Any]:
    index, part, exc = failure
    # An id may be registered under several subjects: prefer the one of this part's kind.
    subject = next((s for s in subjects if s.endswith(f"-{part}")),
                   subjects[0] if subjects else None)
    where = f"message {index} {part}"
    if exc.schema_id is not None:
        named = f"schema id {exc.schema_id}" + ("" if subject is None else
                                                f", subject {subject}")
        where = f"{where} ({named})"
    error: dict[str, Any] = {"code": "invalid_message", "message_index": index, "part": part,
                             "message": f"{where}: {exc}", "reason": str(exc)}
    facts = {"offset": exc.offset, "schema_id": exc.schema_id, "subject": subject,
             "field": exc.field}
    error.update((k, v) for k, v in facts.items() if v is not None)
    return error
