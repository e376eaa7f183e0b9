"""The embedded registry's rules: Confluent's identity, versioning, delete and config semantics.

Implements `SchemaRegistry` over `RegistryStore`; the REST router is a thin layer over this.
"""

from __future__ import annotations

from pathlib import Path

import anyio

from service.registry.canonical import canonical_schema
from service.registry.compatibility import (
    CompatibilityLevel,
    CompatibilityVerdict,
    check_compatibility,
    parse_avro,
)
from service.registry.embedded.store import GLOBAL, RegistryStore, VersionRow
from service.registry.errors import (
    IncompatibleSchemaError,
    InvalidCompatibilityLevelError,
    InvalidSubjectError,
    InvalidVersionError,
    OperationNotPermittedError,
    ReadOnlyModeError,
    SchemaNotFoundError,
    SubjectConfigNotFoundError,
    SubjectModeNotFoundError,
    SubjectNotFoundError,
    SubjectNotSoftDeletedError,
    SubjectSoftDeletedError,
    VersionNotFoundError,
    VersionNotSoftDeletedError,
    VersionSoftDeletedError,
)
from service.registry.interface import VersionSpec
from service.registry.model import RegisteredSchema, RegistryMode

__all__ = ["EmbeddedRegistry", "parse_version", "parse_level"]

DEFAULT_LEVEL = CompatibilityLevel.BACKWARD
_MAX_VERSION = 2**31 - 1


def parse_version(spec: VersionSpec) -> int | None:
    """A version number, or None for ``latest`` / ``-1``.

    Raises:
        InvalidVersionError: anything else (42202).
    """
    text = str(spec).strip()
    if text.lower() == "latest" or text == "-1":
        return None
    if text.isdigit() and 1 <= int(text) <= _MAX_VERSION:
        return int(text)
    raise InvalidVersionError(
        f"The specified version '{spec}' is not a valid version id. Allowed values are between "
        f"[1, 2^31-1] and the string \"latest\"", version=str(spec))


def parse_level(text: str) -> CompatibilityLevel:
    """A compatibility level from any case. Raises InvalidCompatibilityLevelError (42203)."""
    try:
        return CompatibilityLevel(str(text).upper())
    except ValueError as exc:
        raise InvalidCompatibilityLevelError(
            f"Invalid compatibility level. Valid values are none, backward, forward, full, "
            f"backward_transitive, forward_transitive, and full_transitive (got {text!r})"
        ) from exc


def _check_subject(subject: str) -> None:
    if not subject or any(ord(c) < 0x20 or ord(c) == 0x7F for c in subject):
        raise InvalidSubjectError(f"The specified subject is not valid: {subject!r}",
                                  subject=subject)


class EmbeddedRegistry:
    """A Confluent-compatible registry persisted in SQLite (usable in-process or over REST)."""

    def __init__(self, path: str | Path) -> None:
        """Open the registry stored at `path` (``:memory:`` keeps it in memory).

        Raises:
            RegistryStoreError: the file's directory does not exist, or the file cannot be
                opened, created or written.
        """
        self._store = RegistryStore(path)

    def close(self) -> None:
        """Close the underlying database."""
        self._store.close()

    # -- writes ---------------------------------------------------------------------------
    async def register(self, subject: str, schema: str) -> RegisteredSchema:
        _check_subject(subject)
        await self._require_writable(subject)
        canonical = canonical_schema(schema)
        # The compatibility check can take seconds of CPU for a wide table: run it in a worker
        # thread against the versions seen now, and redo it inside the transaction only if
        # the subject changed meanwhile.
        level = self._effective_level(subject)
        seen = [(r.version, r.schema) for r in self._store.versions(subject) if not r.deleted]
        early = await anyio.to_thread.run_sync(check_compatibility, schema, seen, level)
        with self._store.transaction():
            rows = self._store.versions(subject)
            schema_id = self._store.schema_id_for(canonical)
            if schema_id is not None:
                for row in rows:
                    if row.schema_id == schema_id and not row.deleted:
                        return RegisteredSchema(subject, row.version, schema_id, row.schema)
            live = [(r.version, r.schema) for r in rows if not r.deleted]
            same = live == seen and level == self._effective_level(subject)
            verdict = early if same else check_compatibility(
                schema, live, self._effective_level(subject))
            if not verdict.compatible:
                raise IncompatibleSchemaError(
                    "Schema being registered is incompatible with an earlier schema for subject "
                    f"\"{subject}\"; " + "; ".join(i.message for i in verdict.incompatibilities),
                    subject=subject,
                    incompatibilities=[_as_dict(i) for i in verdict.incompatibilities],
                )
            if schema_id is None:
                schema_id = self._store.insert_schema(canonical, schema)
            version = 1 + max((r.version for r in rows), default=0)
            self._store.insert_version(subject, version, schema_id)
        stored = self._store.schema_by_id(schema_id) or schema
        return RegisteredSchema(subject, version, schema_id, stored)

    async def delete_subject(self, subject: str, *, permanent: bool = False) -> list[int]:
        await self._require_writable(subject)
        with self._store.transaction():
            rows = self._store.versions(subject)
            if not rows:
                raise SubjectNotFoundError(f"Subject '{subject}' not found.", subject=subject)
            live = [r.version for r in rows if not r.deleted]
            if permanent:
                if live:
                    raise SubjectNotSoftDeletedError(
                        f"Subject '{subject}' was not deleted first before being permanently "
                        "deleted", subject=subject)
                self._store.remove(subject)
                return [r.version for r in rows]
            if not live:
                raise SubjectSoftDeletedError(
                    f"Subject '{subject}' was soft deleted.Set permanent=true to delete "
                    "permanently", subject=subject)
            self._store.mark_deleted(subject)
            return live

    async def delete_version(self, subject: str, version: VersionSpec, *,
                             permanent: bool = False) -> int:
        number = parse_version(version)
        await self._require_writable(subject)
        with self._store.transaction():
            row = self._find(subject, number, deleted=True, for_delete=True)
            if permanent:
                if not row.deleted:
                    raise VersionNotSoftDeletedError(
                        f"Subject '{subject}' Version {row.version} was not deleted first "
                        "before being permanently deleted", subject=subject)
                self._store.remove(subject, row.version)
            else:
                if row.deleted:
                    raise VersionSoftDeletedError(
                        f"Subject '{subject}' Version {row.version} was soft deleted.Set "
                        "permanent=true to delete permanently", subject=subject)
                self._store.mark_deleted(subject, row.version)
            return row.version

    async def set_compatibility(self, level: CompatibilityLevel,
                                subject: str | None = None) -> CompatibilityLevel:
        if subject is not None:
            _check_subject(subject)
        with self._store.transaction():
            self._store.put_setting("config", subject or GLOBAL, level.value)
        return level

    async def delete_compatibility(self, subject: str | None = None) -> CompatibilityLevel:
        """Remove a subject's level (or reset the global one); returns what it was."""
        previous = await self.get_compatibility(subject, default_to_global=subject is None)
        with self._store.transaction():
            self._store.put_setting("config", subject or GLOBAL, None)
        return previous

    async def set_mode(self, mode: RegistryMode, subject: str | None = None, *,
                       force: bool = False) -> RegistryMode:
        """Set a subject's mode (or the global one). IMPORT needs the subject (or, global, the
        registry) to hold no schema, unless `force` (Confluent's rule)."""
        if subject is not None:
            _check_subject(subject)
        with self._store.transaction():
            if mode is RegistryMode.IMPORT and not force:
                held = self._store.versions(subject) if subject else self._store.subjects(
                    deleted=True)
                if held:
                    raise OperationNotPermittedError(
                        f"Cannot import since found existing subjects"
                        f"{'' if subject is None else f' ({subject})'}; pass force=true",
                        subject=subject)
            self._store.put_setting("mode", subject or GLOBAL, mode.value)
        return mode

    async def delete_mode(self, subject: str) -> RegistryMode:
        """Remove a subject's mode; returns what it was (40409 when it has none)."""
        with self._store.transaction():
            previous = self._store.setting("mode", subject)
            if previous is None:
                raise SubjectModeNotFoundError(
                    f"Subject '{subject}' does not have subject-level mode configured",
                    subject=subject)
            self._store.put_setting("mode", subject, None)
        return RegistryMode(previous)

    # -- reads ----------------------------------------------------------------------------
    async def lookup(self, subject: str, schema: str, *, deleted: bool = False
                     ) -> RegisteredSchema:
        rows = [r for r in self._store.versions(subject) if deleted or not r.deleted]
        if not rows:
            raise SubjectNotFoundError(f"Subject '{subject}' not found.", subject=subject)
        schema_id = self._store.schema_id_for(canonical_schema(schema))
        for row in reversed(rows):
            if row.schema_id == schema_id:
                return RegisteredSchema(subject, row.version, row.schema_id, row.schema)
        raise SchemaNotFoundError("Schema not found", subject=subject)

    async def schema_by_id(self, schema_id: int) -> str:
        text = self._store.schema_by_id(schema_id)
        if text is None:
            raise SchemaNotFoundError(f"Schema {schema_id} not found", schema_id=schema_id)
        return text

    async def uses_of(self, schema_id: int, *, deleted: bool = False) -> list[tuple[str, int]]:
        """(subject, version) pairs holding a schema id (40403 for an unknown id)."""
        await self.schema_by_id(schema_id)
        return self._store.uses_of(schema_id, deleted=deleted)

    async def get_version(self, subject: str, version: VersionSpec = "latest", *,
                          deleted: bool = False) -> RegisteredSchema:
        row = self._find(subject, parse_version(version), deleted=deleted)
        return RegisteredSchema(subject, row.version, row.schema_id, row.schema)

    async def subjects(self, *, deleted: bool = False) -> list[str]:
        return self._store.subjects(deleted=deleted)

    async def versions(self, subject: str, *, deleted: bool = False) -> list[int]:
        rows = [r.version for r in self._store.versions(subject) if deleted or not r.deleted]
        if not rows:
            raise SubjectNotFoundError(f"Subject '{subject}' not found.", subject=subject)
        return rows

    async def get_compatibility(self, subject: str | None = None, *,
                                default_to_global: bool = False) -> CompatibilityLevel:
        if subject is None:
            return self._global_level()
        level = self._store.setting("config", subject)
        if level is not None:
            return CompatibilityLevel(level)
        if default_to_global:
            return self._global_level()
        raise SubjectConfigNotFoundError(
            f"Subject '{subject}' does not have subject-level compatibility configured",
            subject=subject)

    async def check_compatibility(self, subject: str, schema: str,
                                  version: VersionSpec | None = None) -> CompatibilityVerdict:
        parse_avro(schema)
        level = self._effective_level(subject)
        live = [r for r in self._store.versions(subject) if not r.deleted]
        if version is None:
            targets = live
        else:
            number = parse_version(version)
            if not live and number is None:
                return CompatibilityVerdict(True)
            row = self._find(subject, number, deleted=False)
            targets, level = [row], _non_transitive(level)
        return await anyio.to_thread.run_sync(
            check_compatibility, schema, [(r.version, r.schema) for r in targets], level)

    async def configured_compatibility(self, subject: str | None = None
                                       ) -> CompatibilityLevel | None:
        """The level set on the subject (or globally when `subject` is None), else None."""
        level = self._store.setting("config", subject or GLOBAL)
        return CompatibilityLevel(level) if level else None

    async def configured_mode(self, subject: str | None = None) -> RegistryMode | None:
        """The mode set on the subject (or globally when `subject` is None), else None."""
        value = self._store.setting("mode", subject or GLOBAL)
        return RegistryMode(value) if value else None

    async def get_mode(self, subject: str | None = None) -> RegistryMode:
        value = (self._store.setting("mode", subject) if subject else None) \
            or self._store.setting("mode", GLOBAL)
        return RegistryMode(value) if value else RegistryMode.READWRITE

    # -- helpers --------------------------------------------------------------------------
    def _global_level(self) -> CompatibilityLevel:
        level = self._store.setting("config", GLOBAL)
        return CompatibilityLevel(level) if level else DEFAULT_LEVEL

    def _effective_level(self, subject: str) -> CompatibilityLevel:
        level = self._store.setting("config", subject)
        return CompatibilityLevel(level) if level else self._global_level()

    async def _require_writable(self, subject: str) -> None:
        if await self.get_mode(subject) is RegistryMode.READONLY:
            raise ReadOnlyModeError(f"Subject {subject} is in read-only mode", subject=subject)

    def _find(self, subject: str, number: int | None, *, deleted: bool,
              for_delete: bool = False) -> VersionRow:
        rows = self._store.versions(subject)
        if not rows or (not deleted and all(r.deleted for r in rows)):
            raise SubjectNotFoundError(f"Subject '{subject}' not found.", subject=subject)
        visible = [r for r in rows if deleted or not r.deleted]
        if number is None:
            candidates = [r for r in visible if not r.deleted] if for_delete else visible
            if candidates:
                return candidates[-1]
        else:
            for row in visible:
                if row.version == number:
                    return row
        raise VersionNotFoundError(f"Version {number or 'latest'} not found.",
                                   subject=subject, version=number)


def _non_transitive(level: CompatibilityLevel) -> CompatibilityLevel:
    return CompatibilityLevel(level.value.removesuffix("_TRANSITIVE"))


def _as_dict(incompatibility: object) -> dict[str, object]:
    return {k: getattr(incompatibility, k)
            for k in ("type", "location", "message", "version", "direction")}
