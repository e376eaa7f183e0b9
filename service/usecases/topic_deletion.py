"""Deleting a topic's subjects (``{topic}-key`` and ``{topic}-value``) as one admin step.

Every subject is checked before any is deleted, so a refusal (say, a permanent delete of a
subject that was not soft-deleted first) leaves both subjects as they were.
"""

from __future__ import annotations

from dataclasses import dataclass

from service.core.naming import SubjectKind, subject_for
from service.registry.errors import (
    SubjectNotFoundError,
    SubjectNotSoftDeletedError,
    SubjectSoftDeletedError,
)
from service.usecases.runtime import Runtime
from service.usecases.subject_overview import known_versions

__all__ = ["SubjectDeletion", "TopicDeletion", "delete_topic"]


@dataclass(frozen=True)
class SubjectDeletion:
    """The versions a delete removed from one subject, and whether for good."""

    subject: str
    versions: list[int]
    permanent: bool


@dataclass(frozen=True)
class TopicDeletion:
    """What deleting a topic's subjects removed, subject by subject."""

    topic: str
    permanent: bool
    subjects: list[SubjectDeletion]


_States = dict[str, tuple[list[int], list[int]]]
"""Subject -> (live versions, all versions), the key subject first."""


async def delete_topic(runtime: Runtime, topic: str, *, permanent: bool) -> TopicDeletion:
    """Soft-delete the topic's subjects that have live versions, or with `permanent`
    hard-delete its subjects once all of them were soft-deleted.

    Raises:
        SubjectNotFoundError: the topic has neither a key nor a value subject.
        SubjectSoftDeletedError: a soft delete of a topic whose subjects are soft-deleted.
        SubjectNotSoftDeletedError: a permanent delete while a subject has live versions.
    """
    chosen = await (_soft_deleted if permanent else _live)(runtime, topic)
    done = [SubjectDeletion(subject=s, permanent=permanent,
                            versions=await runtime.delete_subject(s, permanent=permanent))
            for s in chosen]
    return TopicDeletion(topic=topic, permanent=permanent, subjects=done)


async def _live(runtime: Runtime, topic: str) -> list[str]:
    states = await _states(runtime, topic)
    _require_any(topic, states)
    live = [s for s, (alive, _) in states.items() if alive]
    if not live:
        gone = [s for s, (_, everything) in states.items() if everything]
        raise SubjectSoftDeletedError(
            f"the subjects of topic {topic} ({', '.join(gone)}) were soft deleted; set "
            "permanent=true to delete them permanently", topic=topic, subject=gone[0])
    return live


async def _soft_deleted(runtime: Runtime, topic: str) -> list[str]:
    states = await _states(runtime, topic)
    _require_any(topic, states)
    for subject, (alive, _) in states.items():
        if alive:
            raise SubjectNotSoftDeletedError(
                f"Subject '{subject}' was not deleted first before being permanently deleted "
                f"(topic {topic}: nothing was deleted)", subject=subject, topic=topic)
    return [s for s, (_, anything) in states.items() if anything]


async def _states(runtime: Runtime, topic: str) -> _States:
    return {s: (await known_versions(runtime.registry, s, deleted=False),
                await known_versions(runtime.registry, s, deleted=True))
            for s in (subject_for(topic, SubjectKind.KEY), subject_for(topic, SubjectKind.VALUE))}


def _require_any(topic: str, states: _States) -> None:
    if not any(everything for _, everything in states.values()):
        key, value = states
        raise SubjectNotFoundError(
            f"topic {topic} has no subject: neither {key} nor {value} exists",
            topic=topic, subject=value)
