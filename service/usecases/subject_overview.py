"""The admin console's read views: subjects (versions, latest, level, mode; one or all) and
schemas by global id with the subject versions using them.

A subject's effective level (mode) is its own when it has one, else the global one: the
global pair is read once per request, so the overview costs a few registry calls per subject.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Generic, TypeVar

from service.registry.compatibility import CompatibilityLevel
from service.registry.errors import SubjectNotFoundError
from service.registry.interface import SchemaRegistry
from service.registry.model import RegistryMode

__all__ = ["VersionRef", "Setting", "SubjectFacts", "SchemaUses", "subject_facts",
           "all_subject_facts", "known_versions", "schema_uses"]

_CONCURRENT_SUBJECTS = 8
"""Subjects read at once for the overview (a remote registry answers them in parallel)."""

T = TypeVar("T")


@dataclass(frozen=True)
class VersionRef:
    """A version of a subject and the global id of its schema."""

    version: int
    id: int


@dataclass(frozen=True)
class Setting(Generic[T]):
    """A level or mode as configured on a subject (None: inherited), and as in effect."""

    configured: T | None
    effective: T


@dataclass(frozen=True)
class SubjectFacts:
    """What the registry holds under one subject, and the rules it applies there."""

    subject: str
    versions: list[int]
    deleted_versions: list[int]
    latest: VersionRef | None
    compatibility: Setting[CompatibilityLevel]
    mode: Setting[RegistryMode]


@dataclass(frozen=True)
class SchemaUses:
    """A schema by its global id (the registry's text) and the (subject, version) pairs
    using it."""

    id: int
    text: str
    versions: list[tuple[str, int]]


async def subject_facts(registry: SchemaRegistry, subject: str, *, deleted: bool
                        ) -> SubjectFacts:
    """One subject's versions (soft-deleted ones too with `deleted`), latest, level and mode.

    Raises:
        SubjectNotFoundError: no such subject (or, without `deleted`, no live version).
    """
    level, mode = await _globals(registry)
    return await _facts(registry, subject, deleted=deleted, global_level=level,
                        global_mode=mode)


async def all_subject_facts(registry: SchemaRegistry, *, deleted: bool) -> list[SubjectFacts]:
    """`subject_facts` of every subject, sorted; a subject deleted while the overview is read
    is left out (it is no longer there to show)."""
    names = await registry.subjects(deleted=deleted)
    level, mode = await _globals(registry)
    gate = asyncio.Semaphore(_CONCURRENT_SUBJECTS)

    async def one(name: str) -> SubjectFacts | None:
        async with gate:
            try:
                return await _facts(registry, name, deleted=deleted, global_level=level,
                                    global_mode=mode)
            except SubjectNotFoundError:
                return None

    # All of them finish before the first failure (in subject order) is raised as it is.
    outcomes = await asyncio.gather(*(one(n) for n in names), return_exceptions=True)
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            raise outcome
    return [o for o in outcomes if isinstance(o, SubjectFacts)]


async def known_versions(registry: SchemaRegistry, subject: str, *, deleted: bool
                         ) -> list[int]:
    """A subject's versions (with `deleted`, soft-deleted ones too); empty for none."""
    try:
        return await registry.versions(subject, deleted=deleted)
    except SubjectNotFoundError:
        return []


async def schema_uses(registry: SchemaRegistry, schema_id: int, *, deleted: bool
                      ) -> SchemaUses:
    """A schema by global id and the (subject, version) pairs using it (soft-deleted ones too
    with `deleted`).

    Raises:
        SchemaNotFoundError: no schema has that id.
    """
    text = await registry.schema_by_id(schema_id)
    uses = await registry.uses_of(schema_id, deleted=deleted)
    return SchemaUses(id=schema_id, text=text, versions=list(uses))


async def _globals(registry: SchemaRegistry) -> tuple[CompatibilityLevel, RegistryMode]:
    return await registry.get_compatibility(), await registry.get_mode()


async def _facts(registry: SchemaRegistry, subject: str, *, deleted: bool,
                 global_level: CompatibilityLevel, global_mode: RegistryMode) -> SubjectFacts:
    versions = await registry.versions(subject, deleted=deleted)
    live = await known_versions(registry, subject, deleted=False) if deleted else versions
    latest = None
    if live:
        newest = await registry.get_version(subject, live[-1])
        latest = VersionRef(version=newest.version, id=newest.id)
    level = await registry.configured_compatibility(subject)
    mode = await registry.configured_mode(subject)
    alive = set(live)
    return SubjectFacts(
        subject=subject, versions=versions,
        deleted_versions=[v for v in versions if v not in alive], latest=latest,
        compatibility=Setting(configured=level, effective=level or global_level),
        mode=Setting(configured=mode, effective=mode or global_mode))
