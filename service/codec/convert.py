"""Batch convert: TiCDC Canal-JSON / Open Protocol / Simple / Debezium messages -> flat-avro.

Each message is decoded into protocol-neutral `ChangeEvent`s; row changes are encoded as an
``avro`` changefeed would have written them (docs/flat-avro.md §6) under the topic the rule gives,
and DDL, watermark/resolved and bootstrap events are reported as skipped. A batch converts
whole or not at all: every message that cannot be converted is listed (index, field, column,
byte offset) and nothing is output or registered. The registered schema of a topic wins over
what a message implies; with ``register`` the table is registered on first use (and an exact
Simple ``TableSchema`` that differs from the latest version is registered as a new one).

The typed request and results are in `convert_results` (re-exported here), the targets of
events in `targets`, the table versions rows imply in `table_versions`.
"""

from __future__ import annotations

import binascii
import dataclasses
import functools
import typing
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass, field
from typing import Any

from service.cdc.catalog import Protocol
from service.cdc.errors import MessageFormatError
from service.cdc.events import ChangeEvent, EventKind, Pending, SourceMessage
from service.cdc.interface import ProtocolDecoder
from service.cdc.sniff import with_protocol_hint
from service.cdc.tables import TableTracker
from service.codec.claim_check import whole
from service.codec.convert_results import (
    Converted,
    ConvertInput,
    MessageProblem,
    Output,
    Skipped,
    Unconvertible,
)
from service.codec.offload import run_cpu, run_io
from service.codec.resolver import BoundSchema, SchemaResolver, TopicSchemas
from service.codec.table_versions import Group, keyed
from service.codec.targets import Target, Targets
from service.codec.writer import ChangeWriter, Framed, header_of
from service.core.errors import InvalidInputError, RowValidationError
from service.core.framing import GLUE_HEADER_SIZE, GLUE_HEADER_VERSION, HEADER_SIZE
from service.core.naming import parse_topic_rule
from service.core.options import SchemaOptions
from service.core.schema import SchemaPair
from service.core.table import Table
from service.registry.tables import TableRegistration

__all__ = ["ConvertInput", "Converted", "Converter", "MessageProblem", "Output", "Registrar",
           "Skipped", "Unconvertible"]


class Registrar(typing.Protocol):
    """Registers a table's schemas (or `pair`, schemas evolved for it) under a topic, and
    forgets the topic's cached ids."""

    def __call__(self, table: Table, options: SchemaOptions, *, topic_rule: str,
                 pair: SchemaPair | None = None) -> Awaitable[TableRegistration]:
        """Register `table` (or `pair`) under the topic `topic_rule` names."""
        ...


_FOLLOWS_DDL = frozenset({Protocol.CANAL_JSON, Protocol.OPEN_PROTOCOL, Protocol.DEBEZIUM})
"""Protocols whose topics carry DDL statements that the converter follows (`TableTracker`);
the Simple protocol carries whole table schemas instead."""


@dataclass(slots=True)
class _Decoded:
    """What the messages of a batch hold: row events, skipped events, pending rows, and the
    problems found so far."""

    events: list[ChangeEvent] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    pending: list[Pending] = field(default_factory=list)
    problems: list[MessageProblem] = field(default_factory=list)


class Converter:
    """Converts batches of one protocol's messages; holds one decoder per protocol."""

    def __init__(self, resolver: SchemaResolver, registrar: Registrar, *,
                 decoders: Mapping[Protocol, ProtocolDecoder]) -> None:
        self._targets = Targets(resolver)
        self._registrar, self._decoders = registrar, decoders
        self._tracker = TableTracker()

    async def convert(self, protocol: Protocol, request: ConvertInput) -> dict[str, Any]:
        """Convert a batch; the result is the response body (messages, skipped, pending).
        Raises as `convert_raw`."""
        done = await self.convert_raw(protocol, request)
        return {"messages": [m.to_json() for m in done.messages],
                "skipped": [s.to_json() for s in done.skipped],
                "pending": [p.to_json() for p in done.pending], "notes": done.notes}

    async def convert_raw(self, protocol: Protocol, request: ConvertInput) -> Converted:
        """Convert a batch into framed Kafka messages (bytes); ``encoding="raw"`` takes the
        source messages as bytes.

        Raises:
            InvalidTopicRuleError: the topic rule breaks the naming policy.
            UnconvertibleMessagesError: every message that cannot be converted, listed.
            IncompatibleSchemaError, TopicBindingError: a registration was refused.
        """
        outcome = await self.attempt(protocol, request)
        if isinstance(outcome, Unconvertible):
            raise outcome.error()
        return outcome

    async def attempt(self, protocol: Protocol, request: ConvertInput
                      ) -> Converted | Unconvertible:
        """Convert a batch, or say message by message why it cannot be converted (then
        nothing is registered). Raises as `convert_raw`, except for unconvertible messages.
        """
        rule = parse_topic_rule(request.topic_rule)
        size = sum(len(k or "") + len(v or "") for k, v in request.messages)
        tracker = self._tracker.copy() if protocol in _FOLLOWS_DDL else None
        decode = functools.partial(self._decode, protocol, request=request, tracker=tracker)
        large = request.large_messages
        # Claim-check objects and handle-key-only rows are read from other systems.
        reads = bool(large.claim_check_storage_uri or large.upstream_tidb_dsn)
        decoded = await (run_io(decode) if reads else run_cpu(size, decode))
        events, problems = decoded.events, decoded.problems
        topics = [rule.expand(e.schema or "", e.table or "") for e in events]
        targets, target_of = await self._targets.resolve(
            events, topics=topics, request=request, problems=problems)
        framed = await run_cpu(size, functools.partial(
            self._check, events, targets=targets, target_of=target_of, problems=problems))
        if problems:
            return Unconvertible(tuple(sorted(problems, key=lambda p: p.message_index)))
        registered, notes = await self._register(targets, request.options)
        messages: list[Output] = []
        for event, group, framed_event in zip(events, target_of, framed, strict=True):
            schemas = targets[group].schemas
            if group in registered:
                framed_event = _reframed(framed_event, schemas)
            messages.extend(Output(schemas, event.commit_ts, event.source_index, *f)
                            for f in framed_event)
        if tracker is not None:  # the batch converted: what its DDL events taught stays
            self._tracker = tracker
        return Converted(messages, decoded.skipped, decoded.pending, notes)

    async def _register(self, targets: dict[Group, Target], options: SchemaOptions
                        ) -> tuple[set[Group], list[str]]:
        """Register the tables the targets need (their schemas then carry the real ids);
        returns the groups registered and what to say about them."""
        registered: set[Group] = set()
        notes: list[str] = []
        for group, target in targets.items():
            if target.register is None:
                continue
            done = await self._registrar(target.register, options,
                                         topic_rule=target.schemas.topic, pair=target.pair)
            if target.note:
                notes.append(f"{target.note} (registered as version {done.value.version})")
            if done.key is None and target.pair is None:
                table = target.register
                notes.append(
                    f"table `{table.schema}`.`{table.table}` has no primary key and no NOT "
                    f"NULL unique key: TiCDC's avro protocol refuses such a table, so a "
                    f"changefeed would not have written topic {done.topic}; registered "
                    "without a key schema (every message has a null key)")
            target.schemas = _registered(target.schemas, done)
            registered.add(group)
        return registered, notes

    def _decode(self, protocol: Protocol, *, request: ConvertInput,
                tracker: TableTracker | None) -> _Decoded:
        decoder = self._decoders[protocol]
        decoded = _Decoded()
        for index, (key, value) in enumerate(request.messages):
            try:
                source = SourceMessage(index, _bytes(key, encoding=request.encoding, part="key"),
                                       _bytes(value, encoding=request.encoding, part="value"))
                # decompressed, and a claim-check made whole (or refused: no storage set)
                source = whole(source, request.large_messages,
                               framed=protocol is Protocol.OPEN_PROTOCOL)
            except MessageFormatError as exc:
                decoded.problems.append(MessageProblem(index, exc))
                continue
            try:
                message = decoder.decode(source)
            except MessageFormatError as exc:
                hinted = with_protocol_hint(exc, protocol=protocol, message=source)
                decoded.problems.append(MessageProblem(index, hinted))
                continue
            if message.pending is not None:
                decoded.pending.append(message.pending)
            for event in message.events:
                try:
                    _take(decoded, event, request=request, tracker=tracker)
                except InvalidInputError as exc:
                    decoded.problems.append(MessageProblem(index, exc))
        return decoded

    def _check(self, events: list[ChangeEvent], *, targets: dict[Group, Target],
               target_of: list[Group], problems: list[MessageProblem]
               ) -> list[list[Framed]]:
        """Map every event onto its target and encode it, so that all problems are found
        before anything is registered; returns each event's framed messages (ids 0 for
        tables still to register: `_reframed` puts the real ids in)."""
        framed: list[list[Framed]] = []
        writers = {group: ChangeWriter(t.schemas) for group, t in targets.items()}
        for event, group in zip(events, target_of, strict=True):
            target = targets.get(group)
            if target is None:
                framed.append([])
                continue
            try:
                row = None if event.row is None else target.mapper.to_plain(
                    event.row, complete=True)
                old = None if event.old_row is None else target.mapper.to_plain(
                    event.old_row, complete=False)
                framed.append(writers[group].write(event.kind.value, row, old_row=old,
                                                   commit_ts=event.commit_ts))
            except RowValidationError as exc:
                problems.extend(MessageProblem(event.source_index, e) for e in exc.errors)
                framed.append([])
        return framed


def _take(decoded: _Decoded, event: ChangeEvent, *, request: ConvertInput,
          tracker: TableTracker | None) -> None:
    """Add one decoded event: a row on the definition the DDL followed gives its table (or
    keyed as `key_columns` says), a DDL applied to the tracker, or another skipped event.

    Raises:
        InvalidInputError: a named key column is not in the row, or the DDL cannot be
            followed (the event is not added).
    """
    if event.kind.is_row:
        followed = None if tracker is None else tracker.definition(
            event.schema, event.table, commit_ts=event.commit_ts)
        if followed is not None:
            event = dataclasses.replace(event, definition=followed)
        elif request.key_columns and event.definition is not None:
            event = keyed(event, request.key_columns)
        decoded.events.append(event)
    elif event.kind is EventKind.DDL and tracker is not None:
        decoded.skipped.append(Skipped.of(event, tracker.apply(event)))
    else:
        decoded.skipped.append(Skipped.of(event))


def _reframed(messages: list[Framed], schemas: TopicSchemas) -> list[Framed]:
    """The messages with the registered ids in their headers (the Avro bodies do not depend
    on the id, so nothing is encoded again)."""
    def header(bound: BoundSchema | None, data: bytes | None) -> bytes | None:
        if data is None or bound is None:
            return data
        # our own frames: the header's length is told by its first byte, nothing to parse
        start = GLUE_HEADER_SIZE if data[0] == GLUE_HEADER_VERSION else HEADER_SIZE
        return header_of(bound.registered) + data[start:]

    return [(op, header(schemas.key, key), header(schemas.value, value))
            for op, key, value in messages]


def _bytes(text: str | bytes | None, *, encoding: str, part: str) -> bytes | None:
    if text is None or isinstance(text, bytes):  # encoding "raw": bytes as consumed
        return text
    if encoding == "utf-8":
        return text.encode("utf-8", "surrogatepass")
    try:
        return binascii.a2b_base64(text, strict_mode=True)
    except ValueError as exc:  # binascii.Error, or a character that is not ASCII
        raise MessageFormatError(f"the {part} is not valid base64 ({exc})", part=part,
                                 field=part) from exc


def _registered(schemas: TopicSchemas, done: TableRegistration) -> TopicSchemas:
    key = None
    if schemas.key is not None and done.key is not None:
        key = BoundSchema(done.key, schemas.key.codec)
    return TopicSchemas(schemas.topic, key, BoundSchema(done.value, schemas.value.codec))


