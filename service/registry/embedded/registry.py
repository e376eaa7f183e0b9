"""The embedded registry's rules: Confluent's identity, versioning, delete and config semantics.

Implements `SchemaRegistry` over `RegistryStore`; the REST router is a thin layer over this.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

import anyio

from service.registry.canonical import StoredForm, stored_form
from service.registry.compatibility import (
    CompatibilityLevel,
    CompatibilityVerdict,
    check_compatibility,
    parse_avro,
)
from service.registry.embedded.confluent_messages import (
    incompatibility_messages,
    incompatible_message,
)
from service.registry.embedded.defaults import check_defaults
from service.registry.embedded.store import GLOBAL, RegistryStore, VersionRow
from service.registry.errors import (
    IncompatibleSchemaError,
    InvalidCompatibilityLevelError,
    InvalidSchemaError,
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
        _check_subject(subject)
        importing = self._require_register_mode(subject, importing=schema_id is not None)
        self._refuse_references(references)
        form = stored_form(schema, normalize=normalize and not importing)
        if importing:
            assert schema_id is not None
            return await anyio.to_thread.run_sync(self._import, subject, form, schema_id,
                                                  version)
        check_defaults(parse_avro(schema))  # Confluent validates defaults of new schemas
        # The compatibility check can take seconds of CPU for a wide table: run it in a worker
        # thread against the versions seen now, and redo it inside the transaction only if
        # the subject changed meanwhile.
        level = self._level_for_registration(subject, force)
        seen = [(r.version, r.schema) for r in self._store.versions(subject) if not r.deleted]
        early = await anyio.to_thread.run_sync(check_compatibility, form.text, seen, level)
        return await anyio.to_thread.run_sync(self._commit_registration, subject, form, version,
                                              force, seen, level, early)

    def _commit_registration(self, subject: str, form: StoredForm, version: int | None,
                             force: bool, seen: list[tuple[int, str]],
                             level: CompatibilityLevel, early: CompatibilityVerdict
                             ) -> RegisteredSchema:
        """The write of `register` (in a worker thread): the checks again on what the
        transaction sees, then the new version."""
        with self._store.transaction():
            self._require_register_mode(subject, importing=False)
            rows = self._store.versions(subject)
            held = self._store.schema_id_for(form.identity)
            for row in rows:
                if row.schema_id == held and not row.deleted:
                    return RegisteredSchema(subject, row.version, row.schema_id, row.schema)
            number = _next_version(rows, version)
            live = [(r.version, r.schema) for r in rows if not r.deleted]
            now = self._level_for_registration(subject, force)
            verdict = early if live == seen and level == now else check_compatibility(
                form.text, live, now)
            if not verdict.compatible:
                raise _incompatible(subject, verdict, now, rows)
            if held is None:
                held = self._store.insert_schema(form.identity, form.text)
            self._store_version(subject, number, held, rows)
        return RegisteredSchema(subject, number, held, self._store.schema_by_id(held) or "")

    def _import(self, subject: str, form: StoredForm, schema_id: int,
                version: int | None) -> RegisteredSchema:
        """IMPORT mode: keep the given id (and version); no compatibility or default checks."""
        with self._store.transaction():
            self._require_register_mode(subject, importing=True)
            rows = self._store.versions(subject)
            held = self._store.schema_id_for(form.identity)
            if held is not None and held != schema_id:
                raise OperationNotPermittedError(
                    f"This schema is already registered with id {held}; the embedded registry "
                    f"keeps one id per schema, so it cannot be imported as id {schema_id}",
                    subject=subject, schema_id=schema_id, existing_id=held)
            if held is None and self._store.schema_by_id(schema_id) is not None:
                raise OperationNotPermittedError(
                    f"Overwrite new schema with id {schema_id} is not permitted.",
                    subject=subject, schema_id=schema_id)
            for row in rows:
                if (version is None and row.schema_id == schema_id and not row.deleted) or \
                        row.version == version:
                    if row.schema_id != schema_id:
                        raise OperationNotPermittedError(
                            f"Version {version} of subject '{subject}' already holds schema id "
                            f"{row.schema_id}", subject=subject, version=version)
                    return RegisteredSchema(subject, row.version, row.schema_id, row.schema)
            number = version or 1 + max((r.version for r in rows), default=0)
            if held is None:
                self._store.insert_schema(form.identity, form.text, schema_id)
            self._store_version(subject, number, schema_id, rows)
        return RegisteredSchema(subject, number, schema_id, self._store.schema_by_id(schema_id)
                                or form.text)

    def _store_version(self, subject: str, number: int, schema_id: int,
                       rows: Sequence[VersionRow]) -> None:
        # Confluent hard-deletes older soft-deleted versions of the subject that hold the id
        # being registered again, so the subject lists it once.
        for row in rows:
            if row.deleted and row.schema_id == schema_id and row.version < number:
                self._store.remove(subject, row.version)
        self._store.insert_version(subject, number, schema_id)

    def _refuse_references(self, references: Sequence[Mapping[str, Any]]) -> None:
        for i, ref in enumerate(references):
            name, target = ref.get("name"), ref.get("subject")
            number = ref.get("version")
            rows = self._store.versions(str(target)) if isinstance(target, str) else []
            resolves = any(not r.deleted and (r.version == number or number == -1)
                           for r in rows)
            why = ("schema references are not supported by the embedded registry" if resolves
                   else f"subject {target!r} version {number!r} not found")
            raise InvalidSchemaError(
                f"Invalid schema: references[{i}] (name {name!r}, subject {target!r}, version "
                f"{number!r}): {why}", field=f"references[{i}]", reference=dict(ref))

    @_in_thread
    def delete_subject(self, subject: str, *, permanent: bool = False) -> list[int]:
        with self._store.transaction():
            self._require_writable(subject)
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
                self._forget_if_empty(subject, [r.schema_id for r in rows])
                return [r.version for r in rows]
            if not live:
                raise SubjectSoftDeletedError(
                    f"Subject '{subject}' was soft deleted.Set permanent=true to delete "
                    "permanently", subject=subject)
            self._store.mark_deleted(subject)
            return live

    @_in_thread
    def delete_version(self, subject: str, version: VersionSpec, *,
                             permanent: bool = False) -> int:
        number = parse_version(version)
        with self._store.transaction():
            self._require_writable(subject)
            row = self._find(subject, number, deleted=True, for_delete=True)
            if permanent:
                if not row.deleted:
                    raise VersionNotSoftDeletedError(
                        f"Subject '{subject}' Version {row.version} was not deleted first "
                        "before being permanently deleted", subject=subject)
                self._store.remove(subject, row.version)
                self._forget_if_empty(subject, [row.schema_id])
            else:
                if row.deleted:
                    raise VersionSoftDeletedError(
                        f"Subject '{subject}' Version {row.version} was soft deleted.Set "
                        "permanent=true to delete permanently", subject=subject)
                self._store.mark_deleted(subject, row.version)
            return row.version

    def _forget_if_empty(self, subject: str, ids: Sequence[int]) -> None:
        """After a hard delete: drop those schemas of `ids` no version holds any more (their
        ids answer 40403 and are never handed out again) and, once the subject holds no
        version at all, its level and mode (as Confluent does)."""
        self._store.remove_unused_schemas(ids)
        if not self._store.versions(subject):
            self._store.put_setting("config", subject, None)
            self._store.put_setting("mode", subject, None)

    @_in_thread
    def set_compatibility(self, level: CompatibilityLevel,
                                subject: str | None = None) -> CompatibilityLevel:
        """Set a subject's level (or the global one). Refused in READONLY mode (42205): Confluent
        refuses config writes in read-only mode (mode changes stay allowed)."""
        if subject is not None:
            _check_subject(subject)
        with self._store.transaction():
            self._require_writable(subject)
            self._store.put_setting("config", subject or GLOBAL, level.value)
        return level

    @_in_thread
    def delete_compatibility(self, subject: str | None = None) -> CompatibilityLevel:
        """Remove a subject's level (or reset the global one to BACKWARD); returns what it was.

        Raises:
            SubjectConfigNotFoundError: the subject has no level of its own (40408 here; the
                REST API answers 40401 there, as Confluent does).
            ReadOnlyModeError: READONLY mode (42205), as for `set_compatibility`.
        """
        if subject is not None:
            _check_subject(subject)
        with self._store.transaction():
            self._require_writable(subject)
            previous = self._store.setting("config", subject or GLOBAL)
            if previous is None and subject is not None:
                raise SubjectConfigNotFoundError(
                    f"Subject '{subject}' does not have subject-level compatibility configured",
                    subject=subject)
            self._store.put_setting("config", subject or GLOBAL, None)
        return CompatibilityLevel(previous) if previous else DEFAULT_LEVEL

    @_in_thread
    def set_mode(self, mode: RegistryMode, subject: str | None = None, *,
                       force: bool = False) -> RegistryMode:
        """Set a subject's mode (or the global one), as the newest Confluent Platform does:
        switching to IMPORT needs the subject (or, global, every subject) to hold no live
        version, unless `force`; the soft-deleted versions left are then hard-deleted, so
        imported ids and versions start clean (with `force`, nothing is deleted).

        Raises:
            OperationNotPermittedError: IMPORT while live versions exist, without force (42205).
        """
        if subject is not None:
            _check_subject(subject)
        with self._store.transaction():
            if mode is RegistryMode.IMPORT and not force and \
                    self._mode(subject) is not RegistryMode.IMPORT:
                self._clear_for_import(subject)
            self._store.put_setting("mode", subject or GLOBAL, mode.value)
        return mode

    def _clear_for_import(self, subject: str | None) -> None:
        names = [subject] if subject else self._store.subjects(deleted=True)
        rows = {name: self._store.versions(name) for name in names}
        if any(not r.deleted for found in rows.values() for r in found):
            raise OperationNotPermittedError(
                "Cannot import since found existing subjects; pass force=true", subject=subject)
        for name, found in rows.items():
            self._store.remove(name)
            self._store.remove_unused_schemas([r.schema_id for r in found])

    @_in_thread
    def delete_mode(self, subject: str) -> RegistryMode:
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
    async def lookup(self, subject: str, schema: str, *, deleted: bool = False,
                     normalize: bool = False, references: Sequence[Mapping[str, Any]] = ()
                     ) -> RegisteredSchema:
        rows = [r for r in self._store.versions(subject) if deleted or not r.deleted]
        if not rows:
            raise SubjectNotFoundError(f"Subject '{subject}' not found.", subject=subject)
        form = stored_form(schema, normalize=normalize)
        # no stored schema has references, so one sent with any matches none
        schema_id = None if references else self._store.schema_id_for(form.identity)
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

    async def referenced_by(self, subject: str, version: VersionSpec, *,
                            deleted: bool = False) -> list[int]:
        """Ids of schemas referencing a version: always none, as no references are stored
        (40401 / 40402 for an unknown subject or version)."""
        self._find(subject, parse_version(version), deleted=deleted)
        return []

    async def subjects(self, *, deleted: bool = False, deleted_only: bool = False,
                       prefix: str = "") -> list[str]:
        """Subjects, sorted: live ones, with soft-deleted ones too (`deleted`), or only the
        fully soft-deleted ones (`deleted_only`); optionally those starting with `prefix`."""
        names = self._store.subjects(deleted=deleted or deleted_only)
        if deleted_only:
            live = set(self._store.subjects(deleted=False))
            names = [n for n in names if n not in live]
        return [n for n in names if n.startswith(prefix)]

    async def versions(self, subject: str, *, deleted: bool = False,
                       deleted_only: bool = False, deleted_as_negative: bool = False
                       ) -> list[int]:
        """Version numbers, ascending: live ones, all (`deleted`) or only soft-deleted ones
        (`deleted_only`, possibly none), or all with soft-deleted ones negated
        (`deleted_as_negative`, which wins, as in the newest Confluent Platform). 40401 when
        the subject holds none of the kind asked for, soft-deleted ones counting when
        `deleted` or `deleted_only`."""
        rows = self._store.versions(subject)
        if not [r for r in rows if deleted or deleted_only or not r.deleted]:
            raise SubjectNotFoundError(f"Subject '{subject}' not found.", subject=subject)
        if deleted_as_negative:
            return [-r.version if r.deleted else r.version for r in rows]
        return [r.version for r in rows
                if (r.deleted if deleted_only else deleted or not r.deleted)]

    async def max_id(self) -> int:
        """The highest schema id handed out so far, deleted ones included (``fetchMaxId``)."""
        return self._store.max_id()

    async def schemas(self, *, prefix: str = "", deleted: bool = False,
                      latest_only: bool = False) -> list[RegisteredSchema]:
        """Every registered version (``GET /schemas``), by subject then version."""
        found: list[RegisteredSchema] = []
        for subject in self._store.subjects(deleted=deleted):
            if not subject.startswith(prefix):
                continue
            rows = [r for r in self._store.versions(subject) if deleted or not r.deleted]
            found += [RegisteredSchema(subject, r.version, r.schema_id, r.schema)
                      for r in (rows[-1:] if latest_only else rows)]
        return found

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
                                  version: VersionSpec | None = None, *,
                                  normalize: bool = False,
                                  references: Sequence[Mapping[str, Any]] = ()
                                  ) -> CompatibilityVerdict:
        verdict, _ = await self.compatibility_report(subject, schema, version,
                                                     normalize=normalize, references=references)
        return verdict

    async def compatibility_report(self, subject: str, schema: str,
                                   version: VersionSpec | None = None, *,
                                   normalize: bool = False,
                                   references: Sequence[Mapping[str, Any]] = ()
                                   ) -> tuple[CompatibilityVerdict, list[str]]:
        """The verdict and Confluent's verbose messages for it.

        `version` None checks what a registration would meet; a version (or ``latest``)
        checks that one version. A missing subject (or ``latest`` of one without live
        versions) is compatible; a missing numbered version is 40402, as in Confluent.

        Raises:
            InvalidSchemaError: invalid schema, default or reference (42201).
            InvalidVersionError, VersionNotFoundError: bad or missing `version`.
        """
        self._refuse_references(references)
        form = stored_form(schema, normalize=normalize)
        check_defaults(parse_avro(schema))
        level = self._effective_level(subject)
        live = [r for r in self._store.versions(subject) if not r.deleted]
        targets = live
        if version is not None:
            number = parse_version(version)
            targets = live[-1:] if number is None else [r for r in live if r.version == number]
            if number is not None and not targets:
                raise VersionNotFoundError(f"Version {number} not found.", subject=subject,
                                           version=number)
            level = _non_transitive(level)
        verdict = await anyio.to_thread.run_sync(
            check_compatibility, form.text, [(r.version, r.schema) for r in targets], level)
        return verdict, incompatibility_messages(
            verdict, level, {r.version: r.schema for r in targets})

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
        return self._mode(subject)

    def _mode(self, subject: str | None) -> RegistryMode:
        """The subject's mode, else the global one, else READWRITE."""
        value = (self._store.setting("mode", subject) if subject else None) \
            or self._store.setting("mode", GLOBAL)
        return RegistryMode(value) if value else RegistryMode.READWRITE

    # -- helpers --------------------------------------------------------------------------
    def _global_level(self) -> CompatibilityLevel:
        level = self._store.setting("config", GLOBAL)
        return CompatibilityLevel(level) if level else DEFAULT_LEVEL

    def _level_for_registration(self, subject: str, force: bool) -> CompatibilityLevel:
        return CompatibilityLevel.NONE if force else self._effective_level(subject)

    def _effective_level(self, subject: str) -> CompatibilityLevel:
        level = self._store.setting("config", subject)
        return CompatibilityLevel(level) if level else self._global_level()

    def _require_writable(self, subject: str | None) -> None:
        """READONLY (the subject's, else the global mode) refuses writes (42205). Called inside
        the write's transaction, so a mode another worker set just before is seen."""
        if self._mode(subject) is RegistryMode.READONLY:
            raise ReadOnlyModeError(
                "The registry is in read-only mode" if subject is None else
                f"Subject {subject} is in read-only mode", subject=subject)

    def _require_register_mode(self, subject: str, *, importing: bool) -> bool:
        """Confluent's rule: READONLY refuses; an explicit id needs IMPORT mode, and without
        one the mode must be READWRITE. Returns whether this is an import. Checked first and
        again inside the registration's transaction."""
        self._require_writable(subject)
        mode = self._mode(subject)
        if importing and mode is not RegistryMode.IMPORT:
            raise OperationNotPermittedError(
                f"Subject {subject} is not in import mode; an explicit \"id\" is accepted only "
                "in IMPORT mode", subject=subject, field="id")
        if not importing and mode is not RegistryMode.READWRITE:
            raise OperationNotPermittedError(
                f"Subject {subject} is not in read-write mode; in {mode.value} mode a schema "
                "is registered with an explicit \"id\"", subject=subject, mode=mode.value)
        return importing

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


def _next_version(rows: Sequence[VersionRow], wanted: int | None) -> int:
    """1 + the highest version stored (soft-deleted ones count); an explicit version outside
    IMPORT mode must be exactly that (Confluent: 42201)."""
    number = 1 + max((r.version for r in rows), default=0)
    if wanted is not None and wanted != number:
        raise InvalidSchemaError(
            f"Version is not one more than previous version: version {wanted} asked for, the "
            f"next is {number}", field="version", version=wanted, expected=number)
    return number


def _incompatible(subject: str, verdict: CompatibilityVerdict, level: CompatibilityLevel,
                  rows: Sequence[VersionRow]) -> IncompatibleSchemaError:
    messages = incompatibility_messages(verdict, level, {r.version: r.schema for r in rows})
    return IncompatibleSchemaError(
        incompatible_message(subject, messages), subject=subject,
        incompatibilities=[_as_dict(i) for i in verdict.incompatibilities])


def _non_transitive(level: CompatibilityLevel) -> CompatibilityLevel:
    return CompatibilityLevel(level.value.removesuffix("_TRANSITIVE"))


def _as_dict(incompatibility: object) -> dict[str, object]:
    return {k: getattr(incompatibility, k)
            for k in ("type", "location", "message", "version", "direction")}
