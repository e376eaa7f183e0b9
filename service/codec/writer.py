"""`ChangeWriter`: one row change -> its framed Kafka key/value messages (FLAT_AVRO.md §8).

INSERT/UPDATE -> key + value; DELETE -> key (from the old row, else the row) + null value
(a tombstone, no extension fields); an UPDATE whose key columns changed (old row given) ->
DELETE of the old key + INSERT of the new row. Shared by batch encode and protocol convert.
"""

from __future__ import annotations

from typing import Any

from service.codec.resolver import TopicSchemas
from service.core.framing import frame

__all__ = ["ChangeWriter", "Framed"]

Framed = tuple[str, bytes | None, bytes | None]
"""(op, framed key or None, framed value or None) of one Kafka message."""


class ChangeWriter:
    """Writes the changes of one topic with its latest key/value codecs (prefixes framed once)."""

    __slots__ = ("_key", "_value", "_key_prefix", "_value_prefix")

    def __init__(self, schemas: TopicSchemas) -> None:
        self._key = schemas.key.codec if schemas.key else None
        self._value = schemas.value.codec
        self._key_prefix = frame(schemas.key.registered.id, b"") if schemas.key else b""
        self._value_prefix = frame(schemas.value.registered.id, b"")

    def write(self, op: str, row: dict[str, Any] | None, old_row: dict[str, Any] | None,
              commit_ts: int) -> list[Framed]:
        """The messages of one change (`op` is insert, update or delete).

        Raises:
            RowValidationError: a key or value column is invalid.
        """
        if op == "delete":
            source = old_row if old_row is not None else row
            assert source is not None
            return [("delete", self._key_bytes(source), None)]
        assert row is not None
        key = self._key_bytes(row)
        if op == "update" and old_row is not None and self._key is not None:
            old_key = self._key_bytes(old_row)
            if old_key != key:  # the key changed: DELETE(old key) + INSERT(new row)
                value = self._value_prefix + self._value.encode(row, commit_ts=commit_ts)
                return [("delete", old_key, None), ("insert", key, value)]
        value = self._value_prefix + self._value.encode(row, update=op == "update",
                                                        commit_ts=commit_ts)
        return [(op, key, value)]

    def _key_bytes(self, row: dict[str, Any]) -> bytes | None:
        return None if self._key is None else self._key_prefix + self._key.encode(row)
