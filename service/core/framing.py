"""Wire-format framing of one Avro datum: Confluent's and AWS Glue's.

Confluent: ``0x00 | schema id (4 bytes, big-endian, signed) | Avro body``.
AWS Glue Schema Registry (as TiCDC and AWS's own serializer write it): ``0x03 (header
version) | compression (0x00 none, 0x05 zlib) | schema version id (a UUID, 16 bytes) | Avro
body`` (zlib: the body deflated, with its zlib header). Key and value are framed separately,
each with the schema registered under its own subject (a Glue "schema").
"""

from __future__ import annotations

import struct
import uuid
import zlib
from typing import NamedTuple

from service.core.errors import FramingError

__all__ = ["MAGIC_BYTE", "HEADER_SIZE", "Frame", "frame", "unframe", "GLUE_HEADER_VERSION",
           "GLUE_HEADER_SIZE", "GLUE_UNCOMPRESSED", "GLUE_ZLIB", "AnyFrame", "glue_frame",
           "unframe_any"]

MAGIC_BYTE = 0
"""The first byte of every Confluent-framed message."""

HEADER_SIZE = 5
"""Magic byte (1) + schema id (4): the offset at which the Avro body starts."""

_HEADER = struct.Struct(">bi")


class Frame(NamedTuple):
    """A parsed frame: the registry schema id and the Avro binary body after the header."""

    schema_id: int
    body: bytes


def frame(schema_id: int, body: bytes) -> bytes:
    """Prefix an Avro binary body with the Confluent header.

    Args:
        schema_id: the registry's global id, 0 <= id <= 2**31 - 1.
        body: the Avro binary encoding of one datum.

    Raises:
        FramingError: the id does not fit the 4-byte signed field.
    """
    if not 0 <= schema_id <= 0x7FFFFFFF:
        raise FramingError(
            f"schema id {schema_id} does not fit the 4-byte signed id field", schema_id=schema_id
        )
    return _HEADER.pack(MAGIC_BYTE, schema_id) + body


def unframe(message: bytes) -> Frame:
    """Split a Confluent-framed message into its schema id and Avro body.

    Raises:
        FramingError: fewer than 5 bytes (offset = bytes present) or a magic byte other than
            0x00 (offset 0). The body itself is not checked here.
    """
    if len(message) < HEADER_SIZE:
        raise FramingError(
            f"truncated Confluent header: {len(message)} byte(s), expected at least {HEADER_SIZE}",
            offset=len(message),
        )
    magic, schema_id = _HEADER.unpack_from(message)
    if magic != MAGIC_BYTE:
        raise FramingError(
            f"unknown magic byte 0x{message[0]:02x} at offset 0, expected 0x00", offset=0
        )
    if schema_id < 0:
        raise FramingError(f"negative schema id {schema_id} at offset 1", offset=1)
    return Frame(schema_id, bytes(message[HEADER_SIZE:]))


GLUE_HEADER_VERSION = 3
"""The first byte of every Glue-framed message."""

GLUE_UNCOMPRESSED, GLUE_ZLIB = 0, 5
"""Glue's compression byte: none (what TiCDC writes), or zlib (AWS's serializer, optional)."""

GLUE_HEADER_SIZE = 18
"""Header version (1) + compression (1) + schema version id (16)."""


class AnyFrame(NamedTuple):
    """A parsed frame of either format: `schema` is the Confluent id (an int) or the Glue
    schema version id (a UUID); the Avro body is ``data[start:]``: `data` is the message and
    `start` the header's size, or, for a zlib-compressed Glue body, `data` the inflated body
    and `start` 0 (offsets into it then count in the inflated body)."""

    schema: int | uuid.UUID
    data: bytes
    start: int


def glue_frame(version_id: uuid.UUID, body: bytes) -> bytes:
    """Prefix an Avro binary body with the Glue header (uncompressed, as TiCDC writes)."""
    return bytes((GLUE_HEADER_VERSION, GLUE_UNCOMPRESSED)) + version_id.bytes + body


def unframe_any(message: bytes) -> AnyFrame:
    """Split a Confluent- or Glue-framed message (told apart by the first byte).

    Raises:
        FramingError: an empty message, a first byte that is neither 0x00 nor 0x03, a header
            cut short, an unknown Glue compression byte (offset 1), or a zlib body that does
            not inflate (offset 18).
    """
    if message[:1] != bytes((GLUE_HEADER_VERSION,)):
        if not message or message[0] == MAGIC_BYTE:
            confluent = unframe(message)
            return AnyFrame(confluent.schema_id, bytes(message), HEADER_SIZE)
        raise FramingError(
            f"unknown magic byte 0x{message[0]:02x} at offset 0, expected 0x00 (Confluent) or "
            f"0x03 (AWS Glue)", offset=0)
    if len(message) < GLUE_HEADER_SIZE:
        raise FramingError(
            f"truncated AWS Glue header: {len(message)} byte(s), expected at least "
            f"{GLUE_HEADER_SIZE}", offset=len(message))
    version_id = uuid.UUID(bytes=bytes(message[2:GLUE_HEADER_SIZE]))
    compression = message[1]
    if compression == GLUE_UNCOMPRESSED:
        return AnyFrame(version_id, bytes(message), GLUE_HEADER_SIZE)
    if compression != GLUE_ZLIB:
        raise FramingError(
            f"unknown AWS Glue compression byte 0x{compression:02x} at offset 1, expected 0x00 "
            f"(none) or 0x05 (zlib)", offset=1)
    try:
        return AnyFrame(version_id, zlib.decompress(message[GLUE_HEADER_SIZE:]), 0)
    except zlib.error as exc:
        raise FramingError(f"the zlib-compressed AWS Glue body at offset {GLUE_HEADER_SIZE} "
                           f"does not inflate ({exc})", offset=GLUE_HEADER_SIZE) from exc
