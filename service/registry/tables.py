"""Tables under topics: dry-run checks and registration of a table's key/value schemas.

Applies docs/flat-avro.md §2: the topic comes from a validated rule; a topic holds one table
(TopicNameStrategy), so a second table whose record full name differs is refused. Both subjects
are checked before anything is registered, so a refusal never leaves half a table registered.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any

import anyio

from service.core.errors import ServiceError
from service.core.naming import SubjectKind, parse_topic_rule, subject_for
from service.core.options import SchemaOptions
from service.core.schema import SchemaPair, generate_schemas
from service.core.table import Table
from service.registry.compatibility import (
    CompatibilityLevel,
    Incompatibility,
    check_compatibility,
)
from service.registry.errors import IncompatibleSchemaError, SubjectNotFoundError
from service.registry.interface import SchemaRegistry
from service.registry.model import RegisteredSchema

__all__ = ["TopicBindingError", "SubjectVerdict", "TableCheck", "TableRegistration",
           "check_table", "register_table"]


class TopicBindingError(ServiceError):
    """The topic already carries another table's schemas (one table per topic)."""

    code = "topic_bound_to_other_table"


@dataclass(frozen=True, slots=True)
class SubjectVerdict:
    """What registering one subject's schema would meet."""

    subject: str
    kind: SubjectKind
    schema: str
    compatibility_level: CompatibilityLevel
    compatible: bool
    incompatibilities: tuple[Incompatibility, ...]


@dataclass(frozen=True, slots=True)
class TableCheck:
    """The dry-run verdict for a table under a topic: one entry per subject."""

    topic: str
    compatible: bool
    subjects: tuple[SubjectVerdict, ...]


@dataclass(frozen=True, slots=True)
class TableRegistration:
    """The registrations a table got under its topic (`key` None for a table with no key)."""

    topic: str
    key: RegisteredSchema | None
    value: RegisteredSchema


async def check_table(registry: SchemaRegistry, table: Table, *, options: SchemaOptions,
                      topic_rule: str, pair: SchemaPair | None = None) -> TableCheck:
    """Check a table's schemas against the registry without registering anything (`pair`:
    schemas to use instead of the table's generated ones, e.g. a version evolved from rows;
    the table then only names the topic).

    Raises:
        InvalidTopicRuleError: the rule breaks §9.
        TopicBindingError: the topic already holds another table.
    """
    topic = parse_topic_rule(topic_rule).expand(table.schema, table.table)
    if pair is None:  # CPU for a wide table: off the event loop
        pair = await anyio.to_thread.run_sync(generate_schemas, table, options)
    wanted = [(SubjectKind.VALUE, pair.value_schema)]
    if pair.key_schema is not None:
        wanted.insert(0, (SubjectKind.KEY, pair.key_schema))
    verdicts = []
    for kind, schema in wanted:
        subject = subject_for(topic, kind)
        text = json.dumps(schema, ensure_ascii=False)
        registered = await _live_versions(registry, subject)
        if registered:
            _require_same_table(subject, table, schema=schema,
                                registered_text=registered[-1][1])
        verdicts.append(await _verdict(registry, subject, kind=kind, text=text,
                                       registered=registered))
    return TableCheck(topic, all(v.compatible for v in verdicts), tuple(verdicts))


async def register_table(registry: SchemaRegistry, table: Table, *, options: SchemaOptions,
                         topic_rule: str, pair: SchemaPair | None = None
                         ) -> TableRegistration:
    """Register a table's key and value schemas (or `pair`, as for `check_table`) under its
    topic, after checking both.

    Raises:
        IncompatibleSchemaError: either subject would refuse its schema (details list every
            incompatibility); nothing is registered then.
        TopicBindingError, InvalidTopicRuleError: as for `check_table`.
    """
    check = await check_table(registry, table, options=options, topic_rule=topic_rule,
                              pair=pair)
    if not check.compatible:
        reasons = [i for v in check.subjects for i in v.incompatibilities]
        raise IncompatibleSchemaError(
            f"table `{table.schema}`.`{table.table}` is incompatible with what topic "
            f"{check.topic} holds: " + "; ".join(i.message for i in reasons),
            topic=check.topic,
            subjects=[_verdict_dict(v) for v in check.subjects if not v.compatible],
        )
    done: dict[SubjectKind, RegisteredSchema] = {}
    for verdict in check.subjects:
        done[verdict.kind] = await registry.register(verdict.subject, verdict.schema)
    return TableRegistration(check.topic, done.get(SubjectKind.KEY), done[SubjectKind.VALUE])


async def _live_versions(registry: SchemaRegistry, subject: str) -> list[tuple[int, str]]:
    """The subject's live versions as (version, schema text), oldest first ([] if none)."""
    try:
        numbers = await registry.versions(subject)
    except SubjectNotFoundError:
        return []
    return [(n, (await registry.get_version(subject, n)).schema) for n in numbers]


async def _verdict(registry: SchemaRegistry, subject: str, *, kind: SubjectKind, text: str,
                   registered: list[tuple[int, str]]) -> SubjectVerdict:
    """Both checks must pass: the registry's (it decides what it stores) and flatavro's own
    (Apache avro at the subject's level), so a registry that enforces a level differently
    (Apicurio's transitive checks) still cannot take a change the level forbids. The local
    check names the columns; the registry's words stand only when it alone refuses."""
    level = await registry.get_compatibility(subject, default_to_global=True)
    # Seconds of CPU for a wide table: off the event loop, so the service keeps answering.
    local = await anyio.to_thread.run_sync(functools.partial(
        check_compatibility, text, registered, level=level))
    # Against the latest version unless the level is transitive: Confluent's check without a
    # version does the same, while Apicurio 2.6's compares every version whatever the level.
    remote = await registry.check_compatibility(
        subject, text, version=None if level.transitive else "latest")
    reasons = local.incompatibilities
    if not remote.compatible and not reasons:
        reasons = remote.incompatibilities
    compatible = local.compatible and remote.compatible
    return SubjectVerdict(subject, kind, text, level, compatible,
                          reasons if not compatible else ())


def _require_same_table(subject: str, table: Table, *, schema: dict[str, Any],
                        registered_text: str) -> None:
    """Refuse a table whose record full name differs from the one the subject holds."""
    registered = json.loads(registered_text)
    have = _full_name(registered)
    want = _full_name(schema)
    if have != want:
        raise TopicBindingError(
            f"subject {subject} already holds table {have}; table {want} "
            f"(`{table.schema}`.`{table.table}`) cannot share its topic: one topic carries one "
            "table under TopicNameStrategy",
            subject=subject, registered_table=have, table=want)


def _full_name(schema: dict[str, Any]) -> str:
    namespace = schema.get("namespace")
    return f"{namespace}.{schema.get('name')}" if namespace else str(schema.get("name"))


def _verdict_dict(verdict: SubjectVerdict) -> dict[str, Any]:
    return {
        "subject": verdict.subject,
        "compatibility_level": verdict.compatibility_level.value,
        "incompatibilities": [
            {"type": i.type, "location": i.location, "message": i.message,
             "version": i.version} for i in verdict.incompatibilities
        ],
    }
