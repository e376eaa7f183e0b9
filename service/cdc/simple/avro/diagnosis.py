"""Where and why a Simple-Avro value is not a datum of TiCDC's schema: the byte offset, the
field and the reason, for the error of a value fastavro refused.

Only the error path uses this: the value is walked again against the writer schema, noting
where each value starts, and the first thing that is wrong is put in plain words.
"""

from __future__ import annotations

from typing import Any

from service.cdc.errors import MessageFormatError
from service.cdc.simple.avro.schema import MESSAGE_BRANCH, NAMESPACE, READING
from service.cdc.simple.columns import AVRO_MESSAGE

__all__ = ["diagnose"]

_MAX_VARINT = {"int": 5, "long": 10}
_WHAT = {"bytes": "binary value", "string": "string value"}


def diagnose(value: bytes, exc: Exception | None) -> MessageFormatError:
    """The error of a value that is not a Message datum (`exc`: fastavro's, if it raised)."""
    walker = _Walker(value)
    begin = 0
    try:
        index = walker.varint("long", "")
        if index != MESSAGE_BRANCH:
            name = READING[index]["name"] if 0 <= index < len(READING) else None
            raise _Stop(begin, "", reason=f"the value starts with union branch {index}"
                                          f"{f' ({name})' if name else ''}, not "
                                          f"{MESSAGE_BRANCH} (Message)")
        walker.read(READING[MESSAGE_BRANCH], "")
    except _Stop as stop:
        where = f" (field `{stop.path}`)" if stop.path else ""
        return MessageFormatError(f"{AVRO_MESSAGE}{stop.reason}{where}", part="value",
                                  offset=stop.offset, field=stop.path or None)
    return MessageFormatError(f"{AVRO_MESSAGE}{exc}", part="value")  # pragma: no cover


class _Stop(Exception):
    def __init__(self, offset: int, path: str, *, reason: str) -> None:
        super().__init__(reason)
        self.offset, self.path, self.reason = offset, path, reason


class _Walker:
    """Reads a datum against the writer schema, noting offsets: only to explain a failure."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0
        self.named: dict[str, Any] = {}
        for named in READING:
            self._register(named)

    def _register(self, schema: Any) -> None:
        if isinstance(schema, dict):
            if schema.get("type") in ("record", "enum", "fixed"):
                namespace = schema.get("namespace", NAMESPACE[:-1])
                self.named[schema["name"]] = schema
                self.named[f"{namespace}.{schema['name']}"] = schema
            for field in schema.get("fields", ()):
                self._register(field["type"])
            for key in ("items", "values"):
                if key in schema:
                    self._register(schema[key])
        elif isinstance(schema, list):
            for branch in schema:
                self._register(branch)

    def varint(self, kind: str, path: str) -> int:
        """A zig-zag varint of `kind` (``int`` or ``long``), its size and range checked."""
        begin, shift, raw = self.pos, 0, 0
        while True:
            if self.pos >= len(self.data):
                where = (f"where {'an' if kind == 'int' else 'a'} {kind} is due"
                         if begin == self.pos else
                         f"inside the {kind} that starts at byte {begin}")
                raise _Stop(len(self.data), path,
                            reason=f"the value ends at byte {len(self.data)}, {where}")
            byte = self.data[self.pos]
            self.pos += 1
            raw |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
            if self.pos - begin >= _MAX_VARINT[kind]:
                raise _Stop(begin, path, reason=f"the {kind} at byte {begin} is a varint "
                                                f"longer than {_MAX_VARINT[kind]} bytes")
        value = (raw >> 1) ^ -(raw & 1)
        if kind == "int" and not -(1 << 31) <= value < 1 << 31:
            raise _Stop(begin, path,
                        reason=f"the int at byte {begin} ({value}) is outside 32 bits")
        if not -(1 << 63) <= value < 1 << 63:
            raise _Stop(begin, path, reason=f"the long at byte {begin} is outside 64 bits")
        return value

    def take(self, size: int, *, what: str, path: str, begin: int) -> bytes:
        """The next `size` bytes, the payload of the `what` that starts at `begin`."""
        if self.pos + size > len(self.data):
            raise _Stop(len(self.data), path,
                        reason=f"the value ends at byte {len(self.data)}, inside the "
                               f"{size}-byte {_WHAT.get(what, what)} that starts at byte "
                               f"{begin}")
        chunk = self.data[self.pos:self.pos + size]
        self.pos += size
        return chunk

    def length(self, what: str, path: str) -> tuple[int, int]:
        """(where it starts, the length) of a ``bytes`` or ``string``."""
        begin = self.pos
        size = self.varint("long", path)
        if size < 0:
            raise _Stop(begin, path,
                        reason=f"the {what} at byte {begin} has a negative length {size}")
        return begin, size

    def read(self, schema: Any, path: str) -> Any:
        """The datum of `schema` at the current position (`path` names it in errors)."""
        if isinstance(schema, list):
            return self._union(schema, path)
        if isinstance(schema, str):
            if schema in self.named:
                return self.read(self.named[schema], path)
            return self.primitive(schema, path)
        kind = schema["type"]
        if kind == "record":
            return self._record(schema, path)
        if kind == "enum":
            return self._enum(schema, path)
        if kind in ("array", "map"):
            return self._blocks(schema, path)
        return self.read(kind, path)

    def _union(self, schema: list[Any], path: str) -> Any:
        begin = self.pos
        index = self.varint("long", path)
        if not 0 <= index < len(schema):
            raise _Stop(begin, path, reason=f"union branch {index} at byte {begin} is not one "
                                            f"of its {len(schema)} branches")
        return self.read(schema[index], path)

    def _record(self, schema: dict[str, Any], path: str) -> dict[str, Any]:
        out = {}
        for field in schema["fields"]:
            name = field["name"]
            out[name] = self.read(field["type"], f"{path}/{name}" if path else name)
        return out

    def _enum(self, schema: dict[str, Any], path: str) -> str:
        begin = self.pos
        index = self.varint("int", path)
        symbols: list[str] = schema["symbols"]
        if not 0 <= index < len(symbols):
            raise _Stop(begin, path, reason=f"enum index {index} at byte {begin} is not one of "
                                            f"its {len(symbols)} symbols")
        return symbols[index]

    def _blocks(self, schema: dict[str, Any], path: str) -> int:
        """An array's or map's blocks, read to their end; how many items they held."""
        kind, count = schema["type"], 0
        while True:
            block = self.varint("long", path)
            if block == 0:
                return count
            if block < 0:
                block = -block
                self.varint("long", path)  # the block's size in bytes
            for _ in range(block):
                key = self.read("string", path) if kind == "map" else str(count)
                self.read(schema["items" if kind == "array" else "values"], f"{path}/{key}")
                count += 1

    def primitive(self, kind: str, path: str) -> Any:
        """A value of a primitive type at the current position."""
        begin = self.pos
        if kind == "null":
            return None
        if kind == "boolean":
            byte = self.take(1, what="boolean", path=path, begin=begin)[0]
            if byte > 1:
                raise _Stop(begin, path, reason=f"the boolean at byte {begin} is {byte:#04x}, "
                                                f"neither 0 nor 1")
            return bool(byte)
        if kind in ("int", "long"):
            return self.varint(kind, path)
        if kind in ("float", "double"):
            return self.take(4 if kind == "float" else 8, what=kind, path=path, begin=begin)
        if kind in ("string", "bytes"):
            return self._sized(kind, path)
        raise _Stop(begin, path, reason=f"unknown Avro type {kind}")  # pragma: no cover

    def _sized(self, kind: str, path: str) -> str | bytes:
        start, size = self.length(kind, path)
        raw = self.take(size, what=kind, path=path, begin=start)
        if kind == "bytes":
            return raw
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _Stop(start, path, reason=f"the string at byte {start} is not UTF-8 "
                                            f"({exc.reason} at its byte {exc.start})") from exc
