"""`RecordCodec`: plain-JSON rows to Avro bodies and back, for one registered record schema.

Compiled once per registered schema (ids are immutable) and reused for every row: one fused
converter + writer per field, the union branch bytes precomputed, so encoding a row is one
pass over the fields with no intermediate datum. Decoding reads the body with the compiled
reader of `_flatread` (a C extension built at install; fastavro's reader when it is absent or
leaves a body to it) and turns the datum into plain JSON; only when fastavro fails too is the
body read again field by field (`avro_diagnosis`) to name the field, byte offset and reason.
Rows are keyed by the record's field names (the column names, sanitized as docs/flat-avro.md
§2 says).
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

import fastavro

from service.core.avro_binary import Writer, union_prefix, writer_for
from service.core.avro_diagnosis import FieldSpec, diagnose, field_offset
from service.core.column_codec import ColumnCodec, Encoder, column_codec, identity
from service.core.domain import DomainError, decimal_from_text
from service.core.errors import InvalidValueError, RowValidationError
from service.core.mysql_types import TypeFamily
from service.core.options import DecimalHandlingMode
from service.core.record_schema import RecordField, record_layout
from service.core.schema import EXTENSION_FIELDS
from service.core.temporal import TemporalFormatError, normalize_temporal
from service.core.values import extension_values

__all__ = ["RecordCodec", "BodyDecodeError"]

try:  # built by `pip install` when a C compiler is present (pyproject.toml ext-modules)
    from service.core._flatread import Reader as _FastReader
    from service.core._flatread import Writer as _FastWriter
except ImportError:  # pragma: no cover - the suite asserts it is built (tests/core)
    _FastReader = _FastWriter = None

FAST_READER = _FastReader is not None
"""Whether bodies are read and written by the compiled reader and writer first (False: the
Python paths alone)."""

_VALUE_ERRORS = (DomainError, TemporalFormatError, UnicodeEncodeError, OverflowError)
_EXTENSION_WRITERS = tuple((f["name"], writer_for(f["type"])) for f in EXTENSION_FIELDS)
_EXTENSION_SPECS = tuple(FieldSpec(f["name"], f["type"], None) for f in EXTENSION_FIELDS)


class BodyDecodeError(ValueError):
    """An Avro body that does not decode with its schema.

    Attributes:
        offset: where reading stopped, counted from the start of the data given to `decode`.
        field: the field at fault, or None (bytes left over after the record).
    """

    def __init__(self, message: str, offset: int, *, field: str | None = None) -> None:
        super().__init__(message)
        self.offset, self.field = offset, field


class RecordCodec:
    """Encodes and decodes the rows of one flat-avro record schema (key or value)."""

    __slots__ = ("_writers", "_readers", "_names", "_allow_extra", "_parsed", "_specs",
                 "_fast", "_fast_writer", "extension")

    def __init__(self, schema: dict[str, Any], *, allow_extra: bool = False) -> None:
        """Compile the codec of a registered record schema.

        Args:
            schema: the record schema (parsed JSON).
            allow_extra: accept rows with columns outside the record (key records read
                whole rows); otherwise such a column is an error, never silently dropped.

        Raises:
            NotFlatAvroError: the schema is not a flat-avro record.
        """
        layout = record_layout(schema)
        compiled = [(f, _codec(f)) for f in layout.fields]
        self._writers = tuple(
            (f.column.name, _prefixes(f), _fused(codec.encode, writer_for(f.avro_type)))
            for f, codec in compiled
        )
        # Only fields whose datum differs from the plain-JSON value need a decoder call.
        self._readers = tuple((f.column.name, codec.decode) for f, codec in compiled
                              if codec.decode is not identity)
        # The compiled writer takes the valid rows whose values pass each converter's fast
        # check (or its converter); any other row is written (or refused, every bad column
        # named) by the Python path below, so both give the same bytes and errors.
        self._fast_writer = None if _FastWriter is None else _FastWriter([
            (f.column.name, f.avro_type, *_prefixes(f), codec.encode, _fast_check(codec))
            for f, codec in compiled])
        self._names = frozenset(f.column.name for f in layout.fields)
        self._allow_extra = allow_extra
        # Read decimals as their raw bytes: formatting the unscaled integer is exact and
        # cheaper than fastavro building a Decimal we would take apart again.
        self._parsed = fastavro.parse_schema(_without_logical_types(schema))
        self._specs = tuple(FieldSpec(f.column.name, f.avro_type, f.null_branch)
                            for f in layout.fields) + (_EXTENSION_SPECS if layout.extension
                                                       else ())
        self._fast = None if _FastReader is None else _FastReader(
            [(spec.name, spec.avro_type, spec.null_branch) for spec in self._specs])
        self.extension = layout.extension

    def encode(self, row: Mapping[str, Any], *, update: bool = False,
               commit_ts: int = 0) -> bytes:
        """The Avro body of `row`; the extension fields (if the record has them) are filled
        from `update` and `commit_ts`.

        Raises:
            RowValidationError: listing every invalid column (missing NOT NULL ones, wrong
                JSON types, out-of-domain values, unknown columns).
        """
        body: bytes | None = None
        if self._fast_writer is not None and (self._allow_extra
                                              or self._names.issuperset(row)):
            body = self._fast_writer.write(row)  # None: a row it leaves to the Python path
        if body is None:
            body = self._checked_body(row)
        return body + self._extension(update, commit_ts) if self.extension else body

    def _checked_body(self, row: Mapping[str, Any]) -> bytes:
        """The body written field by field in Python, or every invalid column named."""
        parts: list[bytes] = []
        errors: list[InvalidValueError] = []
        for name, (null_bytes, value_bytes), write in self._writers:
            value = row.get(name)
            if value is None:
                if null_bytes is None:
                    reason = "is NOT NULL" if name in row else "is missing and NOT NULL"
                    errors.append(InvalidValueError(f"column `{name}` {reason}", column=name,
                                                    reason=reason))
                else:
                    parts.append(null_bytes)
                continue
            try:
                parts.append(value_bytes + write(value))
            except _VALUE_ERRORS as exc:
                reason = _plain(exc)
                errors.append(InvalidValueError(f"column `{name}`: {reason}", column=name,
                                                reason=reason))
        if not self._allow_extra and not self._names.issuperset(row):
            for name in sorted(row.keys() - self._names):
                errors.append(InvalidValueError(f"column `{name}` is not in the table",
                                                column=name, reason="unknown column"))
        if errors:
            raise RowValidationError(errors)
        return b"".join(parts)

    @staticmethod
    def _extension(update: bool, commit_ts: int) -> bytes:
        values = extension_values(update=update, commit_ts=commit_ts)
        return b"".join(write(values[name]) for name, write in _EXTENSION_WRITERS)

    def decode(self, data: bytes | memoryview, start: int = 0) -> dict[str, Any]:
        """The plain-JSON row (plus extension fields, if any) of the Avro body that starts at
        `start` of `data` and runs to its end (pass a framed message with ``start=5``).

        Raises:
            BodyDecodeError: the body does not match the schema, or bytes are left over; the
                message names the field and the byte offset in `data`, in plain words.
        """
        datum = None if self._fast is None else self._fast.decode(data, start)
        if datum is None:
            datum = self._read_with_fastavro(data, start)
        name = ""
        try:
            for name, decode in self._readers:
                value = datum[name]
                if value is not None:
                    datum[name] = decode(value)
        except DomainError as exc:  # a value the column cannot hold (BIT too wide, ...)
            offset = field_offset(data, start, fields=self._specs, name=name)
            where = "" if offset is None else f" (the value at byte {offset})"
            raise BodyDecodeError(f"field `{name}`: {exc}{where}",
                                  start if offset is None else offset, field=name) from exc
        return datum

    def _read_with_fastavro(self, data: bytes | memoryview, start: int) -> dict[str, Any]:
        """The datum of a body the compiled reader left to fastavro (or of every body,
        without it): fastavro accepts and refuses exactly what it always did."""
        stream = io.BytesIO(data)
        if start:
            stream.seek(start)
        try:
            datum = fastavro.schemaless_reader(stream, self._parsed, None)
        except Exception as exc:  # fastavro raises EOFError, UnicodeDecodeError, ValueError...
            raise self._undecodable(data, start, stopped=stream.tell()) from exc
        if stream.tell() != len(data):
            raise self._undecodable(data, start, stopped=stream.tell())
        assert isinstance(datum, dict)  # a fresh dict: converted in place
        return datum

    def _undecodable(self, data: bytes | memoryview, start: int, *, stopped: int
                     ) -> BodyDecodeError:
        """The error of a body fastavro refused, from reading it again field by field."""
        found = diagnose(data, start, fields=self._specs)
        if found is None:  # the walk reads it well: only fastavro's stop point is known
            return BodyDecodeError(f"the body does not match its schema (reading stopped at "
                                   f"byte {stopped})", stopped)
        return BodyDecodeError(found.reason, found.offset, field=found.field)


def _codec(field: RecordField) -> ColumnCodec:
    col_type = field.column.type
    if col_type.family is TypeFamily.TEMPORAL:  # fsp unknown: keep the fraction as written
        base = col_type.base
        return ColumnCodec(lambda v: normalize_temporal(_text_value(v), base, fsp=None),
                           identity)
    string_decimal = field.options.decimal_handling_mode is DecimalHandlingMode.STRING
    if col_type.family is TypeFamily.DECIMAL and string_decimal:  # scale unknown: as written
        return ColumnCodec(lambda v: format(decimal_from_text(_text_value(v)), "f"), identity)
    return column_codec(col_type, field.options)


def _fast_check(codec: ColumnCodec) -> tuple[Any, ...] | None:
    """The check the compiled writer may make instead of calling the encoder (its own fast
    path: an int in a range, a str up to a length), when its bounds fit 64 bits."""
    check = codec.fast_check
    if check is None or not all(type(n) is int and -(1 << 63) <= n < 1 << 63
                                for n in check[1:]):
        return None
    return check


def _fused(encode: Encoder, write: Writer) -> Writer:
    def convert_and_write(value: Any) -> bytes:
        return write(encode(value))

    return convert_and_write


def _prefixes(field: RecordField) -> tuple[bytes | None, bytes]:
    """(bytes for null or None when NOT NULL, bytes before a value) of a field."""
    if field.null_branch is None:
        return None, b""
    return union_prefix(field.null_branch), union_prefix(1 - field.null_branch)


def _without_logical_types(schema: dict[str, Any]) -> dict[str, Any]:
    return {k: _strip_logical_types(v) for k, v in schema.items() if k != "logicalType"}


def _strip_logical_types(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _strip_logical_types(v) for k, v in node.items() if k != "logicalType"}
    if isinstance(node, list):
        return [_strip_logical_types(v) for v in node]
    return node


def _plain(exc: Exception) -> str:
    """The reason of a value error in plain words (never Python's text for its own errors)."""
    if isinstance(exc, UnicodeEncodeError):  # a lone surrogate (\ud800) has no UTF-8 form
        return (f"character {exc.start} (U+{ord(exc.object[exc.start]):04X}) is not text "
                "UTF-8 can carry")
    if isinstance(exc, OverflowError):
        return "the number is out of range for its Avro type"
    return str(exc)


def _text_value(value: Any) -> str:
    if not isinstance(value, str):
        raise DomainError(f"expected a string, got JSON {type(value).__name__}")
    return value


