"""Batch convert: TiCDC Canal-JSON / Open Protocol / Simple messages -> flat-avro messages.

Each message is decoded into protocol-neutral `ChangeEvent`s; row changes are encoded as an
``avro`` changefeed would have written them (docs/flat-avro.md §6) under the topic the rule gives,
and DDL, watermark/resolved and bootstrap events are reported as skipped. A batch converts
whole or not at all: every message that cannot be converted is listed (index, field, column,
byte offset) and nothing is output or registered. The registered schema of a topic wins over
what a message implies; with ``register`` the table is registered on first use (and an exact
Simple ``TableSchema`` that differs from the latest version is registered as a new one).
"""

from __future__ import annotations

import binascii
import dataclasses
import json
import typing
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass, field
from typing import Any

from service.cdc.catalog import Protocol
from service.cdc.definition import TableDefinition
from service.cdc.errors import MessageFormatError
from service.cdc.events import ChangeEvent, EventKind, Pending, SourceMessage
from service.cdc.interface import ProtocolDecoder
from service.cdc.plain import RowMapper
from service.cdc.tables import TableTracker
from service.codec.errors import UnconvertibleMessagesError, WriteKeyRequiredError
from service.codec.offload import run_cpu
from service.codec.resolver import BoundSchema, SchemaResolver, TopicSchemas
from service.codec.writer import ChangeWriter, Framed
from service.core.errors import Fix, InvalidInputError, RowValidationError
from service.core.framing import HEADER_SIZE, frame
from service.core.naming import SubjectKind, parse_topic_rule, subject_for
from service.core.options import SchemaOptions
from service.core.record_codec import RecordCodec
from service.core.record_schema import record_layout
from service.core.schema import EXTENSION_FIELDS, SchemaPair, generate_schemas
from service.core.table import Table
from service.registry.errors import SubjectNotFoundError
from service.registry.model import RegisteredSchema
from service.registry.tables import TableRegistration

__all__ = ["ConvertInput", "Converted", "Converter", "Output", "Registrar"]

class Registrar(typing.Protocol):
    """Registers a table's schemas (or `pair`, schemas evolved for it) under a topic, and
    forgets the topic's cached ids."""

    def __call__(self, table: Table, options: SchemaOptions, topic_rule: str, *,
                 pair: SchemaPair | None = None) -> Awaitable[TableRegistration]: ...


_EXTENSION_FIELDS = frozenset(f["name"] for f in EXTENSION_FIELDS)

_FOLLOWS_DDL = frozenset({Protocol.CANAL_JSON, Protocol.OPEN_PROTOCOL})
"""Protocols whose topics carry DDL statements that the converter follows (`TableTracker`);
the Simple protocol carries whole table schemas instead."""

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
    key_columns: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    """``schema.table`` -> the key of a table whose messages do not name one (Canal-JSON's
    ``pkNames`` lists a primary key only): used for definitions derived from rows."""


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


@dataclass(frozen=True, slots=True)
class Converted:
    """A converted batch: the messages in source order, the skipped events, the pending
    rows, and notes on what was assumed (a version evolved from rows)."""

    messages: list[Output]
    skipped: list[dict[str, Any]]
    pending: list[Pending]
    notes: list[str] = field(default_factory=list)


class _TargetError(InvalidInputError):
    """Why the events of one topic cannot be given a schema."""

    code = "no_schema"


@dataclass(slots=True)
class _Target:
    """Where a group of events goes: the topic's schemas (ids 0 until registered) and the
    table to register first, if any."""

    schemas: TopicSchemas
    mapper: RowMapper
    register: Table | None = None
    pair: SchemaPair | None = None  # registered instead of the table's own schemas
    note: str | None = None


class Converter:
    """Converts batches of one protocol's messages; holds one decoder per protocol."""

    def __init__(self, resolver: SchemaResolver, registrar: Registrar,
                 decoders: Mapping[Protocol, ProtocolDecoder]) -> None:
        self._resolver, self._registrar, self._decoders = resolver, registrar, decoders
        self._mappers: dict[str, RowMapper] = {}
        self._tracker = TableTracker()

    async def convert(self, protocol: Protocol, request: ConvertInput, *,
                      may_register: bool) -> dict[str, Any]:
        """Convert a batch; the result is the response body (messages, skipped, pending).
        Raises as `convert_raw`."""
        done = await self.convert_raw(protocol, request, may_register=may_register)
        return {"messages": [_message(m) for m in done.messages], "skipped": done.skipped,
                "pending": [p.to_json() for p in done.pending], "notes": done.notes}

    async def convert_raw(self, protocol: Protocol, request: ConvertInput, *,
                          may_register: bool) -> Converted:
        """Convert a batch into framed Kafka messages (bytes); ``encoding="raw"`` takes the
        source messages as bytes.

        Raises:
            WriteKeyRequiredError: ``register`` without write permission.
            InvalidTopicRuleError: the topic rule breaks the naming policy.
            UnconvertibleMessagesError: every message that cannot be converted, listed.
            IncompatibleSchemaError, TopicBindingError: a registration was refused.
        """
        if request.register and not may_register:
            raise WriteKeyRequiredError("register=true registers schemas: it needs an API "
                                        "key (Authorization: Bearer <key> or X-API-Key)")
        rule = parse_topic_rule(request.topic_rule)
        size = sum(len(k or "") + len(v or "") for k, v in request.messages)
        tracker = self._tracker.copy() if protocol in _FOLLOWS_DDL else None
        events, skipped, pending, errors = await run_cpu(size, self._decode, protocol, request,
                                                         tracker)
        topics = [rule.expand(e.schema or "", e.table or "") for e in events]
        targets, target_of = await self._targets(events, topics, request, errors)
        framed = await run_cpu(size, self._check, events, targets, target_of, errors)
        if errors:
            failed = sorted({e["message_index"] for e in errors}
                            | {i for e in errors for i in e.get("affected_messages", ())})
            errors.sort(key=lambda e: e["message_index"])
            for error in errors:
                error["message"] = f"message {error['message_index']}: {error['message']}"
            raise UnconvertibleMessagesError(errors, failed_messages=failed, converted=0)
        registered = set()
        notes = []
        for group, target in targets.items():
            if target.register is not None:
                done = await self._registrar(target.register, request.options,
                                             target.schemas.topic, pair=target.pair)
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
        messages = []
        for event, group, framed_event in zip(events, target_of, framed, strict=True):
            schemas = targets[group].schemas
            if group in registered:
                framed_event = _reframed(framed_event, schemas)
            messages.extend(Output(schemas, event.commit_ts, event.source_index, *f)
                            for f in framed_event)
        if tracker is not None:  # the batch converted: what its DDL events taught stays
            self._tracker = tracker
        return Converted(messages, skipped, pending, notes)

    def _decode(self, protocol: Protocol, request: ConvertInput, tracker: TableTracker | None
                ) -> tuple[list[ChangeEvent], list[dict[str, Any]], list[Pending],
                           list[dict[str, Any]]]:
        decoder = self._decoders[protocol]
        events: list[ChangeEvent] = []
        skipped: list[dict[str, Any]] = []
        pending: list[Pending] = []
        errors: list[dict[str, Any]] = []
        for index, (key, value) in enumerate(request.messages):
            try:
                source = SourceMessage(index, _bytes(key, request.encoding, "key"),
                                       _bytes(value, request.encoding, "value"))
                decoded = decoder.decode(source)
            except MessageFormatError as exc:
                errors.append(dict(exc.to_dict(), message_index=index))
                continue
            if decoded.pending is not None:
                pending.append(decoded.pending)
            for event in decoded.events:
                if event.kind.is_row:
                    followed = None if tracker is None else tracker.definition(
                        event.schema, event.table, event.commit_ts)
                    if followed is not None:
                        event = dataclasses.replace(event, definition=followed)
                    elif request.key_columns and event.definition is not None:
                        try:
                            event = _keyed(event, request.key_columns)
                        except InvalidInputError as exc:
                            errors.append(dict(exc.to_dict(), message_index=index))
                            continue
                    events.append(event)
                elif event.kind is EventKind.DDL and tracker is not None:
                    try:
                        skipped.append(_skipped(event, tracker.apply(event)))
                    except InvalidInputError as exc:
                        errors.append(dict(exc.to_dict(), message_index=index))
                else:
                    skipped.append(_skipped(event))
        return events, skipped, pending, errors

    async def _targets(self, events: list[ChangeEvent], topics: list[str],
                       request: ConvertInput, errors: list[dict[str, Any]]
                       ) -> tuple[dict[Any, _Target], list[Any]]:
        """Each event's target, resolved once per (topic, exact table version)."""
        first_definition: dict[str, TableDefinition] = {}
        for event, topic in zip(events, topics, strict=True):
            if event.definition is not None:
                first_definition.setdefault(topic, event.definition)
        targets: dict[Any, _Target] = {}
        failed: dict[Any, dict[str, Any]] = {}
        target_of: list[Any] = []
        shape_of: dict[str, tuple[Any, TableDefinition]] = {}  # topic -> last row shape
        for event, topic in zip(events, topics, strict=True):
            definition = event.definition or first_definition.get(topic)
            exact = definition is not None and definition.exact
            group: Any = (topic, definition.version if exact and definition else None)
            if request.register and definition is not None and not exact:
                # Rows derived from themselves: one target per row shape, so a column added
                # (or dropped) mid-batch gives a version of its own; a DELETE, whose image may
                # hold only the key, goes with the shape before it.
                if event.kind is EventKind.DELETE and topic in shape_of:
                    group, definition = shape_of[topic]
                else:
                    group = (topic, ("rows", tuple(c.name for c in definition.columns)))
                    if event.kind is not EventKind.DELETE:
                        shape_of[topic] = (group, definition)
            target_of.append(group)
            if group in targets:
                continue
            if group in failed:
                failed[group].setdefault("affected_messages", []).append(event.source_index)
                continue
            try:
                targets[group] = await self._target(topic, definition, request)
            except InvalidInputError as exc:
                failed[group] = dict(exc.to_dict(), message_index=event.source_index,
                                     topic=topic)
                errors.append(failed[group])
        return targets, target_of

    async def _target(self, topic: str, definition: TableDefinition | None,
                      request: ConvertInput) -> _Target:
        registered = await self._latest(topic)
        options = request.options
        if registered is not None:
            if request.register and definition is not None and definition.exact:
                table = definition.to_table(options)
                pair = generate_schemas(table, options)
                if not _same(pair, registered):
                    return self._unregistered(topic, table, pair)
            elif request.register and definition is not None:
                evolved = _evolved(registered, definition, options)
                if evolved is not None:
                    table, pair, note = evolved
                    target = self._unregistered(topic, table, pair)
                    target.pair, target.note = pair, note
                    return target
            return _Target(registered, self._mapper(registered.value.registered))
        if not request.register:
            raise _TargetError(
                f"topic {topic} has no registered schema (subject "
                f"{subject_for(topic, SubjectKind.VALUE)})", topic=topic,
                fix=[Fix.REGISTER_TABLE, Fix.REGISTER_ON_CONVERT])
        if definition is None:
            raise _TargetError(
                f"topic {topic} has no registered schema and the batch carries no table "
                f"definition for it (a key-only DELETE)", topic=topic, fix=[Fix.REGISTER_TABLE])
        table = definition.to_table(options)
        return self._unregistered(topic, table, generate_schemas(table, options))

    def _unregistered(self, topic: str, table: Table, pair: SchemaPair) -> _Target:
        def bound(kind: SubjectKind, schema: dict[str, Any]) -> BoundSchema:
            text = json.dumps(schema, ensure_ascii=False)
            return BoundSchema(RegisteredSchema(subject_for(topic, kind), 0, 0, text),
                               RecordCodec(schema, allow_extra=kind is SubjectKind.KEY))

        key = None if pair.key_schema is None else bound(SubjectKind.KEY, pair.key_schema)
        value = bound(SubjectKind.VALUE, pair.value_schema)
        return _Target(TopicSchemas(topic, key, value), RowMapper(record_layout(
            pair.value_schema)), register=table)

    async def _latest(self, topic: str) -> TopicSchemas | None:
        try:
            return await self._resolver.topic(topic)
        except SubjectNotFoundError:
            return None

    def _mapper(self, registered: RegisteredSchema) -> RowMapper:
        mapper = self._mappers.get(registered.schema)
        if mapper is None:
            if len(self._mappers) >= 1024:
                self._mappers.clear()
            mapper = RowMapper(record_layout(json.loads(registered.schema)))
            self._mappers[registered.schema] = mapper
        return mapper

    def _check(self, events: list[ChangeEvent], targets: dict[Any, _Target],
               target_of: list[Any], errors: list[dict[str, Any]]) -> list[list[Framed]]:
        """Map every event onto its target and encode it, so that all errors are found
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
                framed.append(writers[group].write(event.kind.value, row, old,
                                                   event.commit_ts))
            except RowValidationError as exc:
                errors.extend(dict(e.to_dict(), message_index=event.source_index)
                              for e in exc.errors)
                framed.append([])
        return framed


def _keyed(event: ChangeEvent, key_columns: Mapping[str, tuple[str, ...]]) -> ChangeEvent:
    """The event with the key `key_columns` names for its table, if any (those columns NOT
    NULL), on a definition the rows imply; a definition that has a key keeps it.

    Raises:
        InvalidInputError: a named key column is not in the message.
    """
    definition = event.definition
    key = key_columns.get(f"{event.schema}.{event.table}")
    if key is None or definition is None or definition.exact or definition.key:
        return event
    names = {c.name for c in definition.columns}
    for column in key:
        if column not in names:
            raise InvalidInputError(
                f"key column `{column}` of `{event.schema}`.`{event.table}` (key_columns) is "
                "not in the message", column=column, field="key_columns")
    columns = tuple(dataclasses.replace(c, nullable=False) if c.name in key else c
                    for c in definition.columns)
    return dataclasses.replace(event, definition=dataclasses.replace(
        definition, columns=columns, key=tuple(key)))


def _evolved(registered: TopicSchemas, definition: TableDefinition, options: SchemaOptions
             ) -> tuple[Table, SchemaPair, str] | None:
    """The next value schema when rows carry other columns than the latest registered
    version (a table altered while no DDL was seen): the registered fields of the columns the
    rows keep, in row order, and a field for each new column as the rows imply it, made
    nullable with default null (rows carry neither NOT NULL nor defaults) — None when the
    columns are the registered ones. The key schema stays.

    Raises:
        MissingFactError: a new column's type lacks a fact its field needs.
    """
    value = json.loads(registered.value.registered.schema)
    fields = {f["name"]: f for f in value["fields"] if f["name"] not in _EXTENSION_FIELDS}
    extension = [f for f in value["fields"] if f["name"] in _EXTENSION_FIELDS]
    columns = [c.name for c in definition.columns]
    if set(columns) == set(fields):
        return None
    new = [c for c in columns if c not in fields]
    gone = [name for name in fields if name not in set(columns)]
    keep = set(new) | set(definition.key) or {columns[0]}
    part = dataclasses.replace(
        definition, columns=tuple(c for c in definition.columns if c.name in keep),
        missing=tuple(m for m in definition.missing if m.column in keep))
    table = part.to_table(options)
    generated = {f["name"]: f for f in generate_schemas(table, options).value_schema["fields"]}
    for name in new:
        generated[name] = _nullable(generated[name])
    value = dict(value, fields=[fields.get(c) or generated[c] for c in columns] + extension)
    key = None if registered.key is None else json.loads(registered.key.registered.schema)
    words = [f"new column(s) {', '.join(f'`{c}`' for c in new)} (nullable, default null: "
             "rows carry neither NOT NULL nor defaults)"] if new else []
    words += [f"column(s) {', '.join(f'`{c}`' for c in gone)} dropped"] if gone else []
    note = (f"table `{definition.schema}`.`{definition.table}`: a new value schema for topic "
            f"{registered.topic} derived from the rows, no DDL seen: " + "; ".join(words))
    return table, SchemaPair(key, value, tuple(definition.key)), note


def _nullable(avro_field: dict[str, Any]) -> dict[str, Any]:
    """The field as a nullable one with default null (already nullable: as it is)."""
    kind = avro_field["type"]
    if isinstance(kind, list) and "null" in kind:
        return avro_field
    return {"default": None, "name": avro_field["name"], "type": ["null", kind]}


def _reframed(messages: list[Framed], schemas: TopicSchemas) -> list[Framed]:
    """The messages with the registered ids in their headers (the Avro bodies do not depend
    on the id, so nothing is encoded again)."""
    def header(bound: BoundSchema | None, data: bytes | None) -> bytes | None:
        if data is None or bound is None:
            return data
        return frame(bound.registered.id, data[HEADER_SIZE:])

    return [(op, header(schemas.key, key), header(schemas.value, value))
            for op, key, value in messages]


def _bytes(text: str | bytes | None, encoding: str, part: str) -> bytes | None:
    if text is None or isinstance(text, bytes):  # encoding "raw": bytes as consumed
        return text
    if encoding == "utf-8":
        return text.encode("utf-8", "surrogatepass")
    try:
        return binascii.a2b_base64(text, strict_mode=True)
    except ValueError as exc:  # binascii.Error, or a character that is not ASCII
        raise MessageFormatError(f"the {part} is not valid base64 ({exc})", part=part,
                                 field=part) from exc


def _skipped(event: ChangeEvent, reason: str | None = None) -> dict[str, Any]:
    return {"source_index": event.source_index, "kind": event.kind.value,
            "schema": event.schema, "table": event.table, "commit_ts": event.commit_ts,
            "reason": reason or _SKIP_REASONS[event.kind]}


def _same(pair: SchemaPair, registered: TopicSchemas) -> bool:
    key = None if registered.key is None else json.loads(registered.key.registered.schema)
    return (pair.value_schema == json.loads(registered.value.registered.schema)
            and pair.key_schema == key)


def _registered(schemas: TopicSchemas, done: TableRegistration) -> TopicSchemas:
    key = None
    if schemas.key is not None and done.key is not None:
        key = BoundSchema(done.key, schemas.key.codec)
    return TopicSchemas(schemas.topic, key, BoundSchema(done.value, schemas.value.codec))


def _message(out: Output) -> dict[str, Any]:
    schemas, key, value = out.schemas, out.key, out.value
    return {"topic": schemas.topic,
            "key": None if key is None else binascii.b2a_base64(key, newline=False).decode(),
            "value": None if value is None else binascii.b2a_base64(
                value, newline=False).decode(),
            "key_schema_id": None if schemas.key is None else schemas.key.registered.id,
            "value_schema_id": schemas.value.registered.id,
            "op": out.op, "commit_ts": out.commit_ts, "source_index": out.source_index}
