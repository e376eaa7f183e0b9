"""Avro binary encoding of the primitive types flat-avro uses, one compiled writer per type.

Byte layout (Avro 1.12 spec, "Binary Encoding"): ``int``/``long`` are zig-zag varints
(``(n << 1) ^ (n >> 63)``, 7 bits per byte, low group first, high bit = more follows);
``float``/``double`` are 4/8-byte IEEE 754 little-endian; ``string``/``bytes`` are a ``long``
length then the (UTF-8) bytes; a union value is the ``long`` branch index then the value; a
record is its fields' encodings concatenated, nothing else.

Hand-written instead of calling fastavro per record: `bench/bench_avro_writer.py` measures
these writers against fastavro's ``schemaless_writer`` on the same datums, and the tests
compare their bytes with fastavro's for every golden row.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

__all__ = ["Writer", "varint", "long_bytes", "writer_for", "union_prefix"]

Writer = Callable[[Any], bytes]
_SMALL_LIMIT = 1 << 14


def varint(n: int) -> bytes:
    """The unsigned varint of `n` >= 0 (7 bits per byte, low group first)."""
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


_SMALL = tuple(varint(n) for n in range(_SMALL_LIMIT))


def long_bytes(n: int) -> bytes:
    """The Avro ``long`` (zig-zag varint) of a signed 64-bit `n`."""
    z = (n << 1) ^ (n >> 63)
    return _SMALL[z] if z < _SMALL_LIMIT else varint(z)


def _text(value: str) -> bytes:
    raw = value.encode("utf-8")
    return long_bytes(len(raw)) + raw


def _raw(value: bytes) -> bytes:
    return long_bytes(len(value)) + value


_WRITERS: dict[str, Writer] = {
    "int": long_bytes,
    "long": long_bytes,
    "string": _text,
    "bytes": _raw,
    "float": struct.Struct("<f").pack,
    "double": struct.Struct("<d").pack,
}


def writer_for(avro_type: str) -> Writer:
    """The writer of one primitive Avro type (``int``, ``long``, ``string``, ``bytes``,
    ``float``, ``double``); its input is the Avro datum (int, str, bytes, float)."""
    return _WRITERS[avro_type]


def union_prefix(branch: int) -> bytes:
    """The bytes that select union branch `branch`."""
    return long_bytes(branch)
