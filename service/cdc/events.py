"""`ChangeEvent`: one protocol-neutral change, whatever TiCDC protocol carried it.

Row values are *typed*: the Python value of the column, independent of how the protocol spelt
it. Integers (YEAR, BIT as its unsigned number, ENUM as its 1-based index or SET as its bit
mask when the protocol sends numbers) are ``int``; FLOAT/DOUBLE ``float``; DECIMAL the exact
decimal text; BINARY/VARBINARY/BLOB ``bytes``; ENUM/SET names, text, JSON, temporal and
VECTOR values ``str``; SQL NULL ``None``. `service.cdc.plain` turns them into the plain-JSON
values of a registered record.
"""

from __future__ import annotations

import base64
import enum
from dataclasses import dataclass, field
from typing import Any

from service.cdc.definition import TableDefinition

__all__ = ["EventKind", "ChangeEvent", "SourceMessage", "Pending", "DecodedMessage",
           "typed_to_json"]


class EventKind(enum.Enum):
    """What a change event is; only INSERT/UPDATE/DELETE become flat-avro messages."""

    INSERT = "insert"
    UPDATE = "update"
    DELETE = "delete"
    DDL = "ddl"
    WATERMARK = "watermark"
    BOOTSTRAP = "bootstrap"

    @property
    def is_row(self) -> bool:
        """True for the row changes (INSERT, UPDATE, DELETE)."""
        return self in (EventKind.INSERT, EventKind.UPDATE, EventKind.DELETE)


@dataclass(frozen=True, slots=True)
class SourceMessage:
    """One Kafka message as the protocol wrote it: its index in the batch, key and value."""

    index: int
    key: bytes | None
    value: bytes | None


@dataclass(frozen=True, slots=True)
class ChangeEvent:
    """One change, protocol-neutral.

    Attributes:
        kind: what happened.
        schema: the database (None for watermarks/resolved events, which have no table).
        table: the table (None likewise; DDL on a whole database has none either).
        commit_ts: the TiDB TSO of the change (the watermark/resolved ts for those).
        row: the row after the change (INSERT/UPDATE), typed values by column name.
        old_row: the row before (UPDATE when the protocol sends it, DELETE); it may hold
            only the handle key columns when that is all the protocol sent.
        definition: the table definition the message carries or implies, if any.
        query: the DDL statement (DDL events).
        source_index: the index of the message in the batch that carried the event.
    """

    kind: EventKind
    schema: str | None
    table: str | None
    commit_ts: int
    source_index: int
    row: dict[str, Any] | None = None
    old_row: dict[str, Any] | None = None
    definition: TableDefinition | None = None
    query: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The event as JSON (bytes as ``{"base64": ...}``), for golden files and logs."""
        out: dict[str, Any] = {"kind": self.kind.value, "schema": self.schema,
                               "table": self.table, "commit_ts": self.commit_ts,
                               "source_index": self.source_index}
        for name in ("row", "old_row"):
            image = getattr(self, name)
            if image is not None:
                out[name] = {column: typed_to_json(v) for column, v in image.items()}
        if self.query is not None:
            out["query"] = self.query
        if self.definition is not None:
            out["definition"] = self.definition.to_json()
        return out


def typed_to_json(value: Any) -> Any:
    """A typed value as JSON: bytes become ``{"base64": ...}``, the rest is already JSON."""
    if isinstance(value, bytes):
        return {"base64": base64.b64encode(value).decode("ascii")}
    return value


@dataclass(frozen=True, slots=True)
class Pending:
    """A row change that cannot be converted yet (its table schema version is unknown)."""

    source_index: int
    schema: str
    table: str
    schema_version: int
    reason: str

    def to_json(self) -> dict[str, Any]:
        """The pending entry of a conversion response."""
        return {"source_index": self.source_index, "schema": self.schema,
                "table": self.table, "schema_version": self.schema_version,
                "reason": self.reason}


@dataclass(slots=True)
class DecodedMessage:
    """What one source message held: its events, or why its row change must wait."""

    events: list[ChangeEvent] = field(default_factory=list)
    pending: Pending | None = None
