"""Where each event of a batch goes: its topic's registered schemas, or a table to register
first (a new table, an exact table version that differs from the registered one, or a value
schema evolved from rows), resolved once per group of events."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from service.cdc.definition import TableDefinition
from service.cdc.events import ChangeEvent
from service.cdc.plain import RowMapper
from service.codec.convert_results import ConvertInput, MessageProblem
from service.codec.resolver import BoundSchema, SchemaResolver, TopicSchemas
from service.codec.table_versions import Group, evolved_schemas, groups, same_schemas
from service.core.errors import Fix, InvalidInputError, ServiceError
from service.core.naming import SubjectKind, subject_for
from service.core.record_codec import RecordCodec
from service.core.record_schema import record_layout
from service.core.schema import SchemaPair, generate_schemas
from service.core.table import Table
from service.registry.errors import SubjectNotFoundError
from service.registry.model import RegisteredSchema

__all__ = ["Target", "Targets"]


class _TargetError(InvalidInputError):
    """Why the events of one topic cannot be given a schema."""

    code = "no_schema"


@dataclass(slots=True)
class Target:
    """Where a group of events goes: the topic's schemas (ids 0 until registered) and the
    table to register first, if any."""

    schemas: TopicSchemas
    mapper: RowMapper
    register: Table | None = None
    pair: SchemaPair | None = None  # registered instead of the table's own schemas
    note: str | None = None


@dataclass(slots=True)
class _Failure:
    """A group of events whose target cannot be made: the first event's message, why, and
    the messages of the group's later events."""

    message_index: int
    error: ServiceError
    topic: str
    affected: list[int] = field(default_factory=list)

    def problem(self) -> MessageProblem:
        """The failure as the problem of its first event's message."""
        return MessageProblem(self.message_index, self.error, self.topic, tuple(self.affected))


class Targets:
    """Resolves the targets of a batch's events through the registry; keeps the row mappers
    of registered schemas."""

    def __init__(self, resolver: SchemaResolver) -> None:
        self._resolver = resolver
        self._mappers: dict[str, RowMapper] = {}

    async def resolve(self, events: list[ChangeEvent], *, topics: list[str],
                      request: ConvertInput, problems: list[MessageProblem]
                      ) -> tuple[dict[Group, Target], list[Group]]:
        """Each event's target, resolved once per (topic, exact table version); a target
        that cannot be made is a problem of its first event's message."""
        targets: dict[Group, Target] = {}
        failed: dict[Group, _Failure] = {}
        target_of = groups(events, topics=topics, register=request.register)
        for event, topic, (group, definition) in zip(events, topics, target_of, strict=True):
            if group in targets:
                continue
            if group in failed:
                failed[group].affected.append(event.source_index)
                continue
            try:
                targets[group] = await self._target(topic, definition=definition,
                                                    request=request)
            except InvalidInputError as exc:
                failed[group] = _Failure(event.source_index, exc, topic)
        problems.extend(f.problem() for f in failed.values())
        return targets, [group for group, _ in target_of]

    async def _target(self, topic: str, *, definition: TableDefinition | None,
                      request: ConvertInput) -> Target:
        registered = await self._latest(topic)
        options = request.options
        if registered is not None:
            if request.register and definition is not None and definition.exact:
                table = definition.to_table(options)
                pair = generate_schemas(table, options)
                if not same_schemas(pair, registered):
                    return self._unregistered(topic, table=table, pair=pair)
            elif request.register and definition is not None:
                evolved = evolved_schemas(registered, definition, options=options)
                if evolved is not None:
                    table, pair, note = evolved
                    target = self._unregistered(topic, table=table, pair=pair)
                    target.pair, target.note = pair, note
                    return target
            return Target(registered, self._mapper(registered.value.registered))
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
        return self._unregistered(topic, table=table, pair=generate_schemas(table, options))

    def _unregistered(self, topic: str, *, table: Table, pair: SchemaPair) -> Target:
        def bound(kind: SubjectKind, schema: dict[str, Any]) -> BoundSchema:
            text = json.dumps(schema, ensure_ascii=False)
            return BoundSchema(RegisteredSchema(subject_for(topic, kind), 0, 0, text),
                               RecordCodec(schema, allow_extra=kind is SubjectKind.KEY))

        key = None if pair.key_schema is None else bound(SubjectKind.KEY, pair.key_schema)
        value = bound(SubjectKind.VALUE, pair.value_schema)
        return Target(TopicSchemas(topic, key, value), RowMapper(record_layout(
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
