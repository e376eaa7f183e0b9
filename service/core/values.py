"""Row values: plain-JSON rows to flat-avro datums and back (docs/flat-avro.md §5).

A `RowCodec` is compiled once per record schema (a table's key or value columns under one set
of options) and then converts rows with one dispatch per column (`column_codec`); the
extension fields' values come from `extension_values`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from service.core.column_codec import column_codec
from service.core.domain import DomainError
from service.core.errors import InvalidValueError, RowValidationError
from service.core.naming import sanitize_name
from service.core.options import SchemaOptions
from service.core.table import Column, Table
from service.core.temporal import TemporalFormatError

__all__ = ["RowCodec", "extension_values", "commit_physical_time", "PHYSICAL_SHIFT"]

PHYSICAL_SHIFT = 18
"""A TiDB TSO is its physical time in milliseconds shifted left by this, plus a logical
counter."""


def commit_physical_time(commit_ts: int) -> int:
    """The physical part of a TiDB TSO in milliseconds: ``commit_ts >> PHYSICAL_SHIFT``."""
    return commit_ts >> PHYSICAL_SHIFT


def extension_values(*, update: bool, commit_ts: int) -> dict[str, Any]:
    """The values of the three extension fields for an INSERT (``c``) or UPDATE (``u``)."""
    return {
        "_tidb_op": "u" if update else "c",
        "_tidb_commit_ts": commit_ts,
        "_tidb_commit_physical_time": commit_physical_time(commit_ts),
    }


class RowCodec:
    """Converts rows of one record (a table's key or value columns) to Avro datums and back."""

    __slots__ = ("_fields", "_names", "_allow_extra")

    def __init__(
        self, columns: Sequence[Column], options: SchemaOptions, *, allow_extra: bool = False
    ) -> None:
        """Compile the converters.

        Args:
            columns: the record's columns, in schema order.
            options: the schema options the record was generated with.
            allow_extra: accept rows holding columns outside `columns` (a key codec reads
                full rows); otherwise such a column is an error, never silently dropped.
        """
        codecs = [(c, column_codec(c.type, options)) for c in columns]
        self._fields = tuple((c.name, sanitize_name(c.name), c.nullable, codec.encode,
                              codec.decode) for c, codec in codecs)
        self._names = frozenset(c.name for c in columns)
        self._allow_extra = allow_extra

    @classmethod
    def for_value(cls, table: Table, options: SchemaOptions) -> RowCodec:
        """The codec of the table's value record (all columns; no extension fields)."""
        return cls(table.columns, options)

    @classmethod
    def for_key(cls, table: Table, options: SchemaOptions) -> RowCodec | None:
        """The codec of the table's key record, or None when the table has no key."""
        key = table.key_columns()
        return cls(key, options, allow_extra=True) if key else None

    def to_datum(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """Convert a plain-JSON row (column name -> value) into an Avro datum.

        Raises:
            RowValidationError: listing every invalid column: missing NOT NULL columns, wrong
                JSON types, out-of-range values, unknown columns.
        """
        datum: dict[str, Any] = {}
        errors: list[InvalidValueError] = []
        for name, avro_name, nullable, encode, _ in self._fields:
            value = row.get(name)
            if value is None:
                if not nullable:
                    reason = "is NOT NULL" if name in row else "is missing and NOT NULL"
                    errors.append(InvalidValueError(f"column `{name}` {reason}", column=name,
                                                    reason=reason))
                datum[avro_name] = None
                continue
            try:
                datum[avro_name] = encode(value)
            except (DomainError, TemporalFormatError) as exc:
                errors.append(InvalidValueError(f"column `{name}`: {exc}", column=name,
                                                reason=str(exc)))
        if not self._allow_extra:
            for name in sorted(row.keys() - self._names):
                errors.append(InvalidValueError(f"column `{name}` is not in the table",
                                                column=name, reason="unknown column"))
        if errors:
            raise RowValidationError(errors)
        return datum

    def from_datum(self, datum: Mapping[str, Any]) -> dict[str, Any]:
        """Convert an Avro datum of this record back into a plain-JSON row."""
        row: dict[str, Any] = {}
        for name, avro_name, _, _, decode in self._fields:
            value = datum.get(avro_name)
            row[name] = None if value is None else decode(value)
        return row
