"""`EmbeddedRegistry`: the embedded registry's `SchemaRegistry`, composed of its parts.

Each rule lives in one part, all over one `RegistryStore`: `Registration` (identity, versions,
IMPORT), `Deletion` (soft and hard deletes), `RegistryReads` (lookups and listings), `Levels`
and `Modes` (config and mode), `CompatibilityChecks` (dry runs). The REST router
(`embedded/rest/`) is a thin layer over this class.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

import anyio

from service.registry.compatibility import CompatibilityLevel, CompatibilityVerdict
from service.registry.embedded.checks import CompatibilityChecks
from service.registry.embedded.deletion import Deletion
from service.registry.embedded.levels import Levels
from service.registry.embedded.modes import Modes
from service.registry.embedded.reads import RegistryReads
from service.registry.embedded.registration import Registration
from service.registry.embedded.store import RegistryStore
from service.registry.interface import VersionSpec
from service.registry.model import RegisteredSchema, RegistryMode

__all__ = ["EmbeddedRegistry"]

P = ParamSpec("P")
R = TypeVar("R")


def _in_thread(write: Callable[Concatenate[Any, P], R]
               ) -> Callable[Concatenate[Any, P], Awaitable[R]]:
    """Make a write's sync body an async method that runs in a worker thread: its transaction
    may wait up to the store's busy timeout for another process's write (several workers
    share the file), and the event loop keeps serving meanwhile (``/healthz``, encoding with
    cached schemas) instead of waiting with it."""
    @functools.wraps(write)
    async def run(self: Any, *args: P.args, **kwargs: P.kwargs) -> R:
        return await anyio.to_thread.run_sync(functools.partial(write, self, *args, **kwargs))

    return run


class EmbeddedRegistry:
    """A Confluent-compatible registry persisted in SQLite (usable in-process or over REST)."""

    def __init__(self, path: str | Path) -> None:
        """Open the registry stored at `path` (``:memory:`` keeps it in memory).

        Raises:
            RegistryStoreError: the file's directory does not exist, or the file cannot be
                opened, created or written.
        """
        self._store = RegistryStore(path)
        self._modes = Modes(self._store)
        self._levels = Levels(self._store, self._modes)
        self._registration = Registration(self._store, modes=self._modes, levels=self._levels)
        self._deletion = Deletion(self._store, self._modes)
        self._reads = RegistryReads(self._store)
        self._checks = CompatibilityChecks(self._store, self._levels)

    def close(self) -> None:
        """Close the underlying database."""
        self._store.close()

    # -- writes ---------------------------------------------------------------------------
    async def register(self, subject: str, schema: str, *, normalize: bool = False,
                       references: Sequence[Mapping[str, Any]] = (),
                       schema_id: int | None = None, version: int | None = None,
                       force: bool = False) -> RegisteredSchema:
        """Register `schema` under `subject` (idempotent), as Confluent's registry does.

        Args:
            subject: the subject.
            schema: the Avro schema text; stored in Java Avro's ``Schema.toString()`` form.
            normalize: store Confluent's normalized form (ignored in IMPORT mode, as there).
            references: Confluent schema references; the embedded registry stores none, so
                any is refused (42201), naming it.
            schema_id: the id to keep (IMPORT mode only).
            version: the version to create; outside IMPORT mode it must be the next one.
            force: skip the compatibility check (``?force=true``, added in the newest
                Confluent Platform, 2026).

        Raises:
            ReadOnlyModeError, OperationNotPermittedError: the mode forbids it (42205).
            InvalidSchemaError: invalid schema, default or reference, or version (42201).
            IncompatibleSchemaError: refused by the subject's compatibility level (40901).
        """
        return await self._registration.register(
            subject, schema, normalize=normalize, references=references, schema_id=schema_id,
            version=version, force=force)

    @_in_thread
    def delete_subject(self, subject: str, *, permanent: bool = False) -> list[int]:
        """Soft- (or, after a soft delete, hard-) delete a subject (`Deletion.delete_subject`)."""
        return self._deletion.delete_subject(subject, permanent=permanent)

    @_in_thread
    def delete_version(self, subject: str, version: VersionSpec, *,
                       permanent: bool = False) -> int:
        """Soft- (or, after a soft delete, hard-) delete one version (`Deletion`)."""
        return self._deletion.delete_version(subject, version, permanent=permanent)

    @_in_thread
    def set_compatibility(self, level: CompatibilityLevel,
                          subject: str | None = None) -> CompatibilityLevel:
        """Set a subject's level (or the global one); 42205 in READONLY mode (`Levels.set`)."""
        return self._levels.set(level, subject)

    @_in_thread
    def delete_compatibility(self, subject: str | None = None) -> CompatibilityLevel:
        """Remove a subject's level (or reset the global one); returns it (`Levels.delete`)."""
        return self._levels.delete(subject)

    @_in_thread
    def set_mode(self, mode: RegistryMode, subject: str | None = None, *,
                 force: bool = False) -> RegistryMode:
        """Set a subject's mode (or the global one); IMPORT clears first (`Modes.set`)."""
        return self._modes.set(mode, subject, force=force)

    @_in_thread
    def delete_mode(self, subject: str) -> RegistryMode:
        """Remove a subject's mode; returns what it was (40409 when it has none)."""
        return self._modes.delete(subject)

    # -- reads ----------------------------------------------------------------------------
    async def lookup(self, subject: str, schema: str, *, deleted: bool = False,
                     normalize: bool = False, references: Sequence[Mapping[str, Any]] = ()
                     ) -> RegisteredSchema:
        """The newest version of `subject` holding `schema` (40401 / 40403 when none)."""
        return self._reads.lookup(subject, schema, deleted=deleted, normalize=normalize,
                                  references=references)

    async def schema_by_id(self, schema_id: int) -> str:
        """The schema text of a global id (40403 when no schema has it)."""
        return self._reads.schema_by_id(schema_id)

    async def uses_of(self, schema_id: int, *, deleted: bool = False) -> list[tuple[str, int]]:
        """(subject, version) pairs holding a schema id (40403 for an unknown id)."""
        return self._reads.uses_of(schema_id, deleted=deleted)

    async def get_version(self, subject: str, version: VersionSpec = "latest", *,
                          deleted: bool = False) -> RegisteredSchema:
        """One version of a subject (``latest`` = the newest live one)."""
        return self._reads.get_version(subject, version, deleted=deleted)

    async def referenced_by(self, subject: str, version: VersionSpec, *,
                            deleted: bool = False) -> list[int]:
        """Ids of schemas referencing a version: none (`RegistryReads.referenced_by`)."""
        return self._reads.referenced_by(subject, version, deleted=deleted)

    async def subjects(self, *, deleted: bool = False, deleted_only: bool = False,
                       prefix: str = "") -> list[str]:
        """Subjects, sorted (`RegistryReads.subjects` says which)."""
        return self._reads.subjects(deleted=deleted, deleted_only=deleted_only, prefix=prefix)

    async def versions(self, subject: str, *, deleted: bool = False,
                       deleted_only: bool = False, deleted_as_negative: bool = False
                       ) -> list[int]:
        """Version numbers, ascending (`RegistryReads.versions` says which)."""
        return self._reads.versions(subject, deleted=deleted, deleted_only=deleted_only,
                                    deleted_as_negative=deleted_as_negative)

    async def max_id(self) -> int:
        """The highest schema id handed out so far, deleted ones included (``fetchMaxId``)."""
        return self._reads.max_id()

    async def schemas(self, *, prefix: str = "", deleted: bool = False,
                      latest_only: bool = False) -> list[RegisteredSchema]:
        """Every registered version (``GET /schemas``), by subject then version."""
        return self._reads.schemas(prefix=prefix, deleted=deleted, latest_only=latest_only)

    async def get_compatibility(self, subject: str | None = None, *,
                                default_to_global: bool = False) -> CompatibilityLevel:
        """The level of a subject (or the global one when `subject` is None): 40408 for a
        subject without one, unless `default_to_global`."""
        return self._levels.get(subject, default_to_global=default_to_global)

    async def check_compatibility(self, subject: str, schema: str, *,
                                  version: VersionSpec | None = None, normalize: bool = False,
                                  references: Sequence[Mapping[str, Any]] = ()
                                  ) -> CompatibilityVerdict:
        """What registering `schema` would meet (`version` None), or the check against one
        version; never registers anything."""
        verdict, _ = await self.compatibility_report(
            subject, schema, version=version, normalize=normalize, references=references)
        return verdict

    async def compatibility_report(self, subject: str, schema: str, *,
                                   version: VersionSpec | None = None, normalize: bool = False,
                                   references: Sequence[Mapping[str, Any]] = ()
                                   ) -> tuple[CompatibilityVerdict, list[str]]:
        """The verdict and Confluent's verbose messages (`CompatibilityChecks.report`)."""
        return await self._checks.report(subject, schema, version=version,
                                         normalize=normalize, references=references)

    async def configured_compatibility(self, subject: str | None = None
                                       ) -> CompatibilityLevel | None:
        """The level set on the subject (or globally when `subject` is None), else None."""
        return self._levels.configured(subject)

    async def configured_mode(self, subject: str | None = None) -> RegistryMode | None:
        """The mode set on the subject (or globally when `subject` is None), else None."""
        return self._modes.configured(subject)

    async def get_mode(self, subject: str | None = None) -> RegistryMode:
        """The subject's mode, else the global one, else READWRITE."""
        return self._modes.effective(subject)
