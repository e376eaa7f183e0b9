"""Typed change-event rows -> the plain-JSON rows a registered flat-avro record encodes.

The registered record decides (it wins over whatever the message implied): its field names
(column names sanitized), and per field how a typed value is spelt in plain JSON — bytes as
base64, an ENUM index or SET bit mask as member names, a BIT number as is, text from UTF-8
bytes. Range and domain checks stay with the record's codec.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

from service.core.errors import InvalidValueError, RowValidationError
from service.core.mysql_types import TypeFamily
from service.core.naming import sanitize_name
from service.core.record_schema import RecordField, RecordLayout
from service.core.table import ColumnType

__all__ = ["RowMapper"]

_Plain = Callable[[Any], Any]


class _Mismatch(ValueError):
    """A typed value that the registered field cannot take."""


class RowMapper:
    """Maps typed rows by column name onto one registered record's fields."""

    def __init__(self, layout: RecordLayout) -> None:
        self._fields = {f.column.name: _converter(f) for f in layout.fields}
        self._names: dict[str, str] = {}  # column name -> field name, sanitized once

    def to_plain(self, row: dict[str, Any], *, complete: bool) -> dict[str, Any]:
        """The plain-JSON row (keyed by field name) of a typed row.

        Args:
            row: typed values by column name.
            complete: the row is a whole row image, so every field must be present; a
                partial image (a key-only DELETE) may hold any subset of the fields.

        Raises:
            RowValidationError: every column the record does not have, every field the
                image lacks (when `complete`), every value of the wrong kind.
        """
        out: dict[str, Any] = {}
        errors: list[InvalidValueError] = []
        names = self._names
        for column, value in row.items():
            name = names.get(column)
            if name is None:
                name = sanitize_name(column)
                if name in self._fields:  # only real columns are remembered (bounded)
                    names[column] = name
            convert = self._fields.get(name)
            if convert is None:
                errors.append(InvalidValueError(
                    f"column `{column}` is not in the registered schema", column=column,
                    reason="unknown column"))
                continue
            try:
                out[name] = None if value is None else convert(value)
            except _Mismatch as exc:
                errors.append(InvalidValueError(f"column `{column}`: {exc}", column=column,
                                                reason=str(exc)))
        if complete:
            for name in self._fields.keys() - out.keys():
                if not any(sanitize_name(c) == name for c in row):
                    errors.append(InvalidValueError(
                        f"column `{name}` of the registered schema is not in the message",
                        column=name, reason="missing column"))
        if errors:
            raise RowValidationError(errors)
        return out


def _converter(field: RecordField) -> _Plain:
    column_type = field.column.type
    family = column_type.family
    if family is TypeFamily.BLOB:
        return _to_base64
    if family is TypeFamily.ENUM:
        return lambda v: _enum_name(column_type, v)
    if family is TypeFamily.SET:
        return lambda v: _set_names(column_type, v)
    if family in (TypeFamily.TEXT, TypeFamily.JSON, TypeFamily.TEMPORAL, TypeFamily.VECTOR):
        return _to_text
    if family is TypeFamily.DECIMAL:
        return lambda v: str(v) if isinstance(v, int) and not isinstance(v, bool) else v
    return _no_bytes


def _to_base64(value: Any) -> Any:
    if isinstance(value, str):  # text carried for a binary column: TiDB stores its UTF-8
        value = value.encode("utf-8")
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    raise _Mismatch(f"expected bytes for a binary column, got {type(value).__name__}")


def _to_text(value: Any) -> Any:
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _Mismatch(f"the value is not UTF-8 text (byte {exc.start})") from exc
    return value


def _no_bytes(value: Any) -> Any:
    if isinstance(value, bytes):
        raise _Mismatch("bytes where the registered schema has a number")
    return value


def _enum_name(column_type: ColumnType, value: Any) -> Any:
    if isinstance(value, int) and not isinstance(value, bool):
        members = column_type.elements
        if not 1 <= value <= len(members):
            raise _Mismatch(f"ENUM index {value} is outside 1..{len(members)}")
        return members[value - 1]
    return value


def _set_names(column_type: ColumnType, value: Any) -> Any:
    if isinstance(value, int) and not isinstance(value, bool):
        members = column_type.elements
        if value < 0 or value >> len(members):
            raise _Mismatch(f"SET bit mask {value} has bits beyond its {len(members)} members")
        return ",".join(m for bit, m in enumerate(members) if value >> bit & 1)
    return value
