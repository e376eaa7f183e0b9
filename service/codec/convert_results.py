"""What a conversion takes and gives, typed: the request, the flat-avro messages, the skipped
events, and the problems of a batch that does not convert (index and reason kept apart; the
text HTTP and the command line show is rendered by `Unconvertible.error`)."""

from __future__ import annotations

import binascii
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from service.cdc.events import ChangeEvent, EventKind, Pending
from service.cdc.large_message import LargeMessages
from service.codec.errors import UnconvertibleMessagesError
from service.codec.resolver import TopicSchemas
from service.core.errors import ServiceError
from service.core.options import SchemaOptions

__all__ = ["ConvertInput", "Converted", "MessageProblem", "Output", "Skipped", "Unconvertible"]

_SKIP_REASONS = {
    EventKind.DDL: "a DDL event produces no flat-avro message",
    EventKind.WATERMARK: "a watermark/resolved event produces no flat-avro message",
    EventKind.BOOTSTRAP: "a BOOTSTRAP event carries a table schema (kept for later DML), "
                         "no row",
}


@dataclass(frozen=True, slots=True)
class ConvertInput:
    """A convert request: the messages (text as sent, or bytes with encoding ``raw``), how
    they are encoded, the topic rule, whether to register missing schemas, and the schema
    options used when registering."""

    messages: list[tuple[str | None, str | None]] | list[tuple[bytes | None, bytes | None]]
    encoding: str
    topic_rule: str
    register: bool
    options: SchemaOptions
    key_columns: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """``schema.table`` -> the key of a table whose messages do not name one (Canal-JSON's
    ``pkNames`` lists a primary key only): used for definitions derived from rows."""
    large_messages: LargeMessages = field(default_factory=LargeMessages)
    """The changefeed's large-message handling (compression, claim-check storage)."""


@dataclass(frozen=True, slots=True)
class Output:
    """One flat-avro Kafka message: its topic's schemas, the change's commit ts, the index of
    the source message it came from, the op and the framed key and value."""

    schemas: TopicSchemas
    commit_ts: int
    source_index: int
    op: str
    key: bytes | None
    value: bytes | None

    def to_json(self) -> dict[str, Any]:
        """The message of a conversion response: key and value in base64, the schema ids."""
        schemas, key, value = self.schemas, self.key, self.value
        return {"topic": schemas.topic,
                "key": None if key is None else binascii.b2a_base64(key, newline=False).decode(),
                "value": None if value is None else binascii.b2a_base64(
                    value, newline=False).decode(),
                "key_schema_id": None if schemas.key is None else schemas.key.registered.wire_id,
                "value_schema_id": schemas.value.registered.wire_id,
                "op": self.op, "commit_ts": self.commit_ts, "source_index": self.source_index}


@dataclass(frozen=True, slots=True)
class Skipped:
    """An event that produces no flat-avro message (DDL, watermark/resolved, BOOTSTRAP): the
    index of its source message, what it is, its table and commit ts, and why."""

    source_index: int
    kind: EventKind
    schema: str | None
    table: str | None
    commit_ts: int
    reason: str

    @classmethod
    def of(cls, event: ChangeEvent, reason: str | None = None) -> Skipped:
        """The event skipped, for `reason` (by default its kind's)."""
        return cls(event.source_index, event.kind, event.schema, event.table, event.commit_ts,
                   reason or _SKIP_REASONS[event.kind])

    def to_json(self) -> dict[str, Any]:
        """The skipped entry of a conversion response."""
        return {"source_index": self.source_index, "kind": self.kind.value,
                "schema": self.schema, "table": self.table, "commit_ts": self.commit_ts,
                "reason": self.reason}


@dataclass(frozen=True, slots=True)
class Converted:
    """A converted batch: the messages in source order, the skipped events, the pending
    rows, and notes on what was assumed (a version evolved from rows)."""

    messages: list[Output]
    skipped: list[Skipped]
    pending: list[Pending]
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class MessageProblem:
    """Why one message of a batch cannot be converted.

    Attributes:
        message_index: the message's index in the batch.
        error: what is wrong; its message is the reason, which does not name the batch
            position (`to_dict` adds it for HTTP and the command line).
        topic: the topic the message's rows go to, when that topic is what cannot be used.
        affected: the later messages of the batch that fail with it (rows of the same topic
            and table version).
    """

    message_index: int
    error: ServiceError
    topic: str | None = None
    affected: tuple[int, ...] = ()

    @property
    def reason(self) -> str:
        """Why the message cannot be converted, in words (no batch position)."""
        return self.error.message

    @property
    def indices(self) -> tuple[int, ...]:
        """The index of the message, then those of the messages it affects."""
        return (self.message_index, *self.affected)

    def to_dict(self) -> dict[str, Any]:
        """The problem as one entry of `UnconvertibleMessagesError.errors`: the error's fields
        with ``message N: `` before its message, then `message_index`, `topic` and
        `affected_messages` where they apply."""
        out = dict(self.error.to_dict(), message_index=self.message_index)
        out["message"] = f"message {self.message_index}: {self.reason}"
        if self.topic is not None:
            out["topic"] = self.topic
        if self.affected:
            out["affected_messages"] = list(self.affected)
        return out


@dataclass(frozen=True, slots=True)
class Unconvertible:
    """A batch that does not convert: every problem, in message order. Nothing of the batch
    was output or registered."""

    problems: tuple[MessageProblem, ...]

    def error(self) -> UnconvertibleMessagesError:
        """The error HTTP and the command line report for the batch (every problem listed,
        with the indexes of every message that failed)."""
        failed = sorted({index for problem in self.problems for index in problem.indices})
        return UnconvertibleMessagesError([p.to_dict() for p in self.problems],
                                          failed_messages=failed, converted=0)
