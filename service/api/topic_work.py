"""Deleting a topic's subjects (``{topic}-key`` and ``{topic}-value``) as one admin step.

Every subject is checked before any is deleted, so a refusal (say, a permanent delete of a
subject that was not soft-deleted first) leaves both subjects as they were.
"""

from __future__ import annotations

from service.api.admin_models import TopicDeletedOut
from service.api.models import DeletedOut
from service.api.runtime import Runtime
from service.api.subject_facts import known_versions
from service.core.naming import SubjectKind, subject_for
from service.registry.errors import (
    SubjectNotFoundError,
    SubjectNotSoftDeletedError,
    SubjectSoftDeletedError,
)

__all__ = ["delete_topic"]


async def delete_topic(runtime: Runtime, topic: str, *, permanent: bool) -> TopicDeletedOut:
    """Soft-delete the topic's subjects that have live versions, or with `permanent`
    hard-delete its subjects once all of them were soft-deleted.

    Raises:
        SubjectNotFoundError: the topic has neither a key nor a value subject.
        SubjectSoftDeletedError: a soft delete of a topic whose subjects are soft-deleted.
        SubjectNotSoftDeletedError: a permanent delete while a subject has live versions.
    """
    chosen = await (_soft_deleted if permanent else _live)(runtime, topic)
    done = [DeletedOut(subject=s, permanent=permanent,
                       versions=await runtime.delete_subject(s, permanent=permanent))
            for s in chosen]
    return TopicDeletedOut(topic=topic, permanent=permanent, subjects=done)


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


async def _states(runtime: Runtime, topic: str) -> dict[str, tuple[list[int], list[int]]]:
    """Subject -> (live versions, all versions) for the key then the value subject."""
    return {s: (await known_versions(runtime.registry, s, deleted=False),
                await known_versions(runtime.registry, s, deleted=True))
            for s in (subject_for(topic, SubjectKind.KEY), subject_for(topic, SubjectKind.VALUE))}


def _require_any(topic: str, states: dict[str, tuple[list[int], list[int]]]) -> None:
    if not any(everything for _, everything in states.values()):
        key, value = states
        raise SubjectNotFoundError(
            f"topic {topic} has no subject: neither {key} nor {value} exists",
            topic=topic, subject=value)
