"""`ChangeWriter`: one row change -> its framed Kafka key/value messages (docs/flat-avro.md §6).

INSERT/UPDATE -> key + value; DELETE -> key (from the old row, else the row) + null value
(a tombstone, no extension fields); an UPDATE whose key columns changed (old row given) ->
DELETE of the old key + INSERT of the new row. Shared by batch encode and protocol convert.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from service.codec.resolver import TopicSchemas
from service.core.errors import InvalidValueError, RowValidationError
from service.core.framing import frame, glue_frame
from service.registry.model import RegisteredSchema

__all__ = ["ChangeWriter", "Framed", "header_of"]

Framed = tuple[str, bytes | None, bytes | None]
"""(op, framed key or None, framed value or None) of one Kafka message."""


class ChangeWriter:
    """Writes the changes of one topic with its latest key/value codecs (prefixes framed once)."""

    __slots__ = ("_key", "_value", "_key_prefix", "_value_prefix")

    def __init__(self, schemas: TopicSchemas) -> None:
        self._key = schemas.key.codec if schemas.key else None
        self._value = schemas.value.codec
        self._key_prefix = header_of(schemas.key.registered) if schemas.key else b""
        self._value_prefix = header_of(schemas.value.registered)

    def write(self, op: str, row: dict[str, Any] | None, *, old_row: dict[str, Any] | None,
              commit_ts: int) -> list[Framed]:
        """The messages of one change (`op` is insert, update or delete).

        Raises:
            RowValidationError: every invalid column of the change, each once: a bad key
                column does not stop the check of the value's other columns (and, as it is in
                both records, is reported once); `old_row`'s columns are named as such.
        """
        if op == "delete":
            source = old_row if old_row is not None else row
            assert source is not None
            return [("delete", self._key_bytes(source), None)]
        assert row is not None
        update = op == "update"
        keyed_update = update and old_row is not None and self._key is not None
        try:
            key = self._key_bytes(row)
            old_key = None if old_row is None or not keyed_update else self._key_bytes(old_row)
            value = self._value.encode(row, update=update, commit_ts=commit_ts)
        except RowValidationError as exc:  # check every record of the change, then report
            raise RowValidationError(self._every_error(row, old_row=old_row,
                                                       keyed_update=keyed_update)) from exc
        if old_key is not None and old_key != key:  # DELETE(old key) + INSERT(new row)
            value = self._value.encode(row, commit_ts=commit_ts)
            return [("delete", old_key, None), ("insert", key, self._value_prefix + value)]
        return [(op, key, self._value_prefix + value)]

    def _every_error(self, row: dict[str, Any], *, old_row: dict[str, Any] | None,
                     keyed_update: bool) -> list[InvalidValueError]:
        """Every invalid column of the row's key and value (and of `old_row`'s key), once."""
        errors: list[InvalidValueError] = []
        _checked(self._key_bytes, row, errors=errors)
        if keyed_update and old_row is not None:
            _checked(self._key_bytes, old_row, errors=errors, of="old_row")
        _checked(self._value.encode, row, errors=errors)
        return _once_per_column(errors)

    def _key_bytes(self, row: dict[str, Any]) -> bytes | None:
        return None if self._key is None else self._key_prefix + self._key.encode(row)


def header_of(registered: RegisteredSchema) -> bytes:
    """The frame header of a registered schema: AWS Glue's for a Glue schema version,
    Confluent's otherwise."""
    if registered.glue_id is not None:
        return glue_frame(registered.glue_id, b"")
    return frame(registered.id, b"")


def _checked(encode: Callable[[dict[str, Any]], Any], row: dict[str, Any], *,
             errors: list[InvalidValueError], of: str | None = None) -> None:
    """Add the column errors of `encode(row)` to `errors`; those of `old_row` say so."""
    try:
        encode(row)
    except RowValidationError as exc:
        if of is None:
            errors.extend(exc.errors)
        else:
            errors.extend(InvalidValueError(f"{of} {e.message}", **e.details, row=of)
                          for e in exc.errors)


def _once_per_column(errors: list[InvalidValueError]) -> list[InvalidValueError]:
    """The first error of each column (a key column is checked by the key and the value)."""
    first: dict[tuple[Any, Any], InvalidValueError] = {}
    for error in errors:
        first.setdefault((error.details.get("row"), error.details.get("column")), error)
    return list(first.values())
