"""Where and why a flat Avro record body does not decode: the field, byte offset and reason.

Only the error path uses this (fastavro's reader is the fast path, and its exceptions say
neither where nor which field): the body is read again field by field, noting where each value
starts, and the first failure is put in plain words.
Offsets count from the start of the data given (the whole framed message when the caller
passes it with the body's start), so they are the positions a person sees in a hex dump.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

__all__ = ["FieldSpec", "Diagnosis", "diagnose", "field_offset"]

_MAX_VARINT = 10
"""Bytes of the longest zig-zag varint of a 64-bit ``long``."""


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """One field of a flat record: its name, Avro type without null (``int``, ``long``,
    ``float``, ``double``, ``string``, ``bytes``) and null's union branch (None: NOT NULL)."""

    name: str
    avro_type: str
    null_branch: int | None


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """Why a body does not decode: the field at fault (None for bytes after the record), the
    byte offset where reading stopped and the reason, in words that name both."""

    field: str | None
    offset: int
    reason: str


class _Stop(Exception):
    def __init__(self, offset: int, reason: str) -> None:
        super().__init__(reason)
        self.offset, self.reason = offset, reason


class _Reader:
    """Reads Avro primitives from `data` at `start`, raising `_Stop` with plain reasons."""

    def __init__(self, data: bytes | memoryview, start: int) -> None:
        self._stream = io.BytesIO(data)
        self._stream.seek(start)
        self.size = len(data)

    @property
    def position(self) -> int:
        return self._stream.tell()

    def ran_out(self, what: str, begin: int) -> _Stop:
        return _Stop(self.size, f"ran out of bytes at byte {self.size} reading the {what} "
                                f"that starts at byte {begin} (message is {self.size} bytes)")

    def long(self, what: str) -> int:
        """A zig-zag varint: 7 bits per byte, low group first, high bit set = more follow."""
        begin = self.position
        raw, shift, more = 0, 0, True
        while more:
            byte = self._stream.read(1)
            if not byte:
                raise self.ran_out(what, begin)
            raw |= (byte[0] & 0x7F) << shift
            shift += 7
            more = bool(byte[0] & 0x80)
        if self.position - begin > _MAX_VARINT:
            raise _Stop(begin, f"the {what} at byte {begin} is a varint longer than "
                               f"{_MAX_VARINT} bytes")
        return (raw >> 1) ^ -(raw & 1)

    def fixed(self, size: int, what: str) -> bytes:
        begin = self.position
        raw = self._stream.read(size)
        if len(raw) < size:
            raise self.ran_out(f"{size}-byte {what}", begin)
        return raw

    def sized(self, what: str) -> tuple[int, bytes]:
        """(where the payload starts, the payload) of a ``bytes`` or ``string``."""
        begin = self.position
        size = self.long(f"length of the {what}")
        if size < 0:
            raise _Stop(begin, f"negative length {size} for the {what} at byte {begin}")
        left = self.size - self.position
        if size > left:
            raise _Stop(self.size, f"ran out of bytes at byte {self.size}: the {what} at "
                                   f"byte {begin} says {size} byte(s), {left} are left "
                                   f"(message is {self.size} bytes)")
        return self.position, self._stream.read(size)


def _string(reader: _Reader) -> None:
    begin, raw = reader.sized("string")
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        at = begin + exc.start
        raise _Stop(at, f"string is not valid UTF-8 at byte {at}") from exc


_VALUE_READERS: dict[str, Callable[[_Reader], object]] = {
    "int": lambda r: r.long("int"),
    "long": lambda r: r.long("long"),
    "float": lambda r: r.fixed(4, "float"),
    "double": lambda r: r.fixed(8, "double"),
    "bytes": lambda r: r.sized("bytes value"),
    "string": _string,
}


def _read_field(reader: _Reader, field: FieldSpec) -> None:
    if field.null_branch is not None:
        begin = reader.position
        branch = reader.long("union branch")
        if branch == field.null_branch:
            return
        if branch != 1 - field.null_branch:
            raise _Stop(begin, f"union branch {branch} at byte {begin} does not exist (the "
                               f"field is null or {field.avro_type}: branch 0 or 1)")
    _VALUE_READERS[field.avro_type](reader)


def _walk(reader: _Reader, fields: Sequence[FieldSpec]) -> Iterator[tuple[FieldSpec, int]]:
    """Each field with the offset where it starts, read once the caller has it in hand."""
    for field in fields:
        yield field, reader.position
        _read_field(reader, field)


def diagnose(data: bytes | memoryview, start: int, *, fields: Sequence[FieldSpec]
             ) -> Diagnosis | None:
    """Why the record at `start` of `data` does not decode, or None if it reads well.

    The reason names the field (``field `sku`: string is not valid UTF-8 at byte 14``), or
    says how many bytes are left over after the record.
    """
    reader = _Reader(data, start)
    current: FieldSpec | None = None
    try:
        for field, _ in _walk(reader, fields):
            current = field  # the field being read when _walk stops
    except _Stop as stop:
        assert current is not None  # _walk names a field before reading it
        return Diagnosis(current.name, stop.offset, f"field `{current.name}`: {stop.reason}")
    end = reader.position
    if end != reader.size:
        return Diagnosis(None, end, f"{reader.size - end} byte(s) left over after the record "
                                    f"(it ends at byte {end}, message is {reader.size} bytes)")
    return None


def field_offset(data: bytes | memoryview, start: int, *, fields: Sequence[FieldSpec],
                 name: str) -> int | None:
    """The offset where field `name` starts, or None when the body does not get that far."""
    try:
        for field, offset in _walk(_Reader(data, start), fields):
            if field.name == name:
                return offset
    except _Stop:
        return None
    return None
