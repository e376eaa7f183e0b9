"""The embedded registry's dry-run compatibility checks (``POST /compatibility/...``): the
verdict a registration would meet, or the one against one version, with Confluent's verbose
messages; nothing is registered."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import anyio

from service.registry.canonical import stored_form
from service.registry.compatibility import (
    CompatibilityLevel,
    CompatibilityVerdict,
    check_compatibility,
    parse_avro,
)
from service.registry.embedded.confluent_messages import incompatibility_messages
from service.registry.embedded.defaults import check_defaults
from service.registry.embedded.inputs import parse_version, refuse_references
from service.registry.embedded.levels import Levels
from service.registry.embedded.store import RegistryStore, VersionRow
from service.registry.errors import VersionNotFoundError
from service.registry.interface import VersionSpec

__all__ = ["CompatibilityChecks"]


class CompatibilityChecks:
    """Checks of a schema against what `store` holds, at the level `levels` gives."""

    def __init__(self, store: RegistryStore, levels: Levels) -> None:
        """Check against the versions in `store`."""
        self._store, self._levels = store, levels

    async def report(self, subject: str, schema: str, *, version: VersionSpec | None,
                     normalize: bool, references: Sequence[Mapping[str, Any]]
                     ) -> tuple[CompatibilityVerdict, list[str]]:
        """The verdict and Confluent's verbose messages for it.

        `version` None checks what a registration would meet; a version (or ``latest``)
        checks that one version, at the level's non-transitive form. A missing subject (or
        ``latest`` of one without live versions) is compatible; a missing numbered version is
        40402, as in Confluent.

        Raises:
            InvalidSchemaError: invalid schema, default or reference (42201).
            InvalidVersionError, VersionNotFoundError: bad or missing `version`.
        """
        refuse_references(self._store, references)
        form = stored_form(schema, normalize=normalize)
        check_defaults(parse_avro(schema))
        level = self._levels.effective(subject)
        targets = [r for r in self._store.versions(subject) if not r.deleted]
        if version is not None:
            targets = _one_version(subject, targets, version=version)
            level = _non_transitive(level)
        # seconds of CPU for a wide table: off the event loop
        verdict = await anyio.to_thread.run_sync(functools.partial(
            check_compatibility, form.text, [(r.version, r.schema) for r in targets],
            level=level))
        return verdict, incompatibility_messages(
            verdict, level=level, old_schemas={r.version: r.schema for r in targets})


def _one_version(subject: str, live: list[VersionRow], *, version: VersionSpec
                 ) -> list[VersionRow]:
    """The live version a check names: [] for ``latest`` of a subject without one.

    Raises:
        InvalidVersionError: not a version spec (42202).
        VersionNotFoundError: a numbered version that is not live (40402).
    """
    number = parse_version(version)
    if number is None:
        return live[-1:]
    targets = [r for r in live if r.version == number]
    if not targets:
        raise VersionNotFoundError(f"Version {number} not found.", subject=subject,
                                   version=number)
    return targets


def _non_transitive(level: CompatibilityLevel) -> CompatibilityLevel:
    """The level without ``_TRANSITIVE``: a check against one version compares that one."""
    return CompatibilityLevel(level.value.removesuffix("_TRANSITIVE"))
