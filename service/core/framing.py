"""Confluent wire-format framing: ``0x00 | schema id (4 bytes, big-endian, signed) | Avro body``.

Key and value are framed separately, each with the id registered under its own subject.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from service.core.errors import FramingError

__all__ = ["MAGIC_BYTE", "HEADER_SIZE", "Frame", "frame", "unframe"]

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
