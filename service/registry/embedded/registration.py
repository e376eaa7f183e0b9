"""The embedded registry's registrations, as Confluent's: idempotent, checked against the
subject's compatibility level and numbered after the highest version (READWRITE mode), or kept
with the id and version given (IMPORT mode)."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio

from service.registry.canonical import StoredForm, stored_form
from service.registry.compatibility import (
    CompatibilityLevel,
    CompatibilityVerdict,
    Incompatibility,
    check_compatibility,
    parse_avro,
)
from service.registry.embedded.confluent_messages import (
    incompatibility_messages,
    incompatible_message,
)
from service.registry.embedded.defaults import check_defaults
from service.registry.embedded.inputs import check_subject, refuse_references
from service.registry.embedded.levels import Levels
from service.registry.embedded.modes import Modes
from service.registry.embedded.store import RegistryStore, VersionRow
from service.registry.errors import (
    IncompatibleSchemaError,
    InvalidSchemaError,
    OperationNotPermittedError,
)
from service.registry.model import RegisteredSchema

__all__ = ["Registration"]


@dataclass(frozen=True, slots=True)
class _EarlyCheck:
    """The compatibility check run before the write transaction: what it compared, at which
    level, and its verdict (reused when the transaction sees the same)."""

    seen: list[tuple[int, str]]
    level: CompatibilityLevel
    verdict: CompatibilityVerdict


class Registration:
    """Registers schemas under subjects in `store`, each in one write transaction."""

    def __init__(self, store: RegistryStore, *, modes: Modes, levels: Levels) -> None:
        """Write to `store`; `modes` and `levels` decide what a registration may do."""
        self._store, self._modes, self._levels = store, modes, levels

    async def register(self, subject: str, schema: str, *, normalize: bool,
                       references: Sequence[Mapping[str, Any]], schema_id: int | None,
                       version: int | None, force: bool) -> RegisteredSchema:
        """Register `schema` under `subject` (`EmbeddedRegistry.register` says how)."""
        check_subject(subject)
        importing = self._modes.require_register_mode(subject, importing=schema_id is not None)
        refuse_references(self._store, references)
        form = stored_form(schema, normalize=normalize and not importing)
        if schema_id is not None:
            return await anyio.to_thread.run_sync(functools.partial(
                self._import, subject, form, schema_id=schema_id, version=version))
        check_defaults(parse_avro(schema))  # Confluent validates defaults of new schemas
        # The compatibility check can take seconds of CPU for a wide table: run it in a worker
        # thread against the versions seen now, and redo it inside the transaction only if
        # the subject changed meanwhile.
        level = self._levels.for_registration(subject, force=force)
        seen = [(r.version, r.schema) for r in self._store.versions(subject) if not r.deleted]
        verdict = await anyio.to_thread.run_sync(functools.partial(
            check_compatibility, form.text, seen, level=level))
        return await anyio.to_thread.run_sync(functools.partial(
            self._commit, subject, form, version=version, force=force,
            early=_EarlyCheck(seen, level, verdict)))

    def _commit(self, subject: str, form: StoredForm, *, version: int | None, force: bool,
                early: _EarlyCheck) -> RegisteredSchema:
        """The write of `register` (in a worker thread): the checks again on what the
        transaction sees, then the new version."""
        with self._store.transaction():
            self._modes.require_register_mode(subject, importing=False)
            rows = self._store.versions(subject)
            held = self._store.schema_id_for(form.identity)
            for row in rows:
                if row.schema_id == held and not row.deleted:
                    return RegisteredSchema(subject, row.version, row.schema_id, row.schema)
            number = _next_version(rows, version)
            live = [(r.version, r.schema) for r in rows if not r.deleted]
            level = self._levels.for_registration(subject, force=force)
            verdict = early.verdict if live == early.seen and level == early.level else \
                check_compatibility(form.text, live, level=level)
            if not verdict.compatible:
                raise _incompatible(subject, verdict, level=level, rows=rows)
            if held is None:
                held = self._store.insert_schema(form.identity, form.text)
            self._store_version(subject, rows, number=number, schema_id=held)
        return RegisteredSchema(subject, number, held, self._store.schema_by_id(held) or "")

    def _import(self, subject: str, form: StoredForm, *, schema_id: int,
                version: int | None) -> RegisteredSchema:
        """IMPORT mode: keep the given id (and version); no compatibility or default checks."""
        with self._store.transaction():
            self._modes.require_register_mode(subject, importing=True)
            rows = self._store.versions(subject)
            held = self._refuse_id_clash(subject, form, schema_id=schema_id)
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
                self._store.insert_schema(form.identity, form.text, schema_id=schema_id)
            self._store_version(subject, rows, number=number, schema_id=schema_id)
        return RegisteredSchema(subject, number, schema_id, self._store.schema_by_id(schema_id)
                                or form.text)

    def _refuse_id_clash(self, subject: str, form: StoredForm, *, schema_id: int) -> int | None:
        """The id the schema already holds (None if new), refusing an import that would give
        it a second id or reuse another schema's id (42205)."""
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
        return held

    def _store_version(self, subject: str, rows: Sequence[VersionRow], *, number: int,
                       schema_id: int) -> None:
        """Add version `number` holding `schema_id` to the subject."""
        # Confluent hard-deletes older soft-deleted versions of the subject that hold the id
        # being registered again, so the subject lists it once.
        for row in rows:
            if row.deleted and row.schema_id == schema_id and row.version < number:
                self._store.remove(subject, row.version)
        self._store.insert_version(subject, number, schema_id=schema_id)


def _next_version(rows: Sequence[VersionRow], wanted: int | None) -> int:
    """1 + the highest version stored (soft-deleted ones count); an explicit version outside
    IMPORT mode must be exactly that (Confluent: 42201)."""
    number = 1 + max((r.version for r in rows), default=0)
    if wanted is not None and wanted != number:
        raise InvalidSchemaError(
            f"Version is not one more than previous version: version {wanted} asked for, the "
            f"next is {number}", field="version", version=wanted, expected=number)
    return number


def _incompatible(subject: str, verdict: CompatibilityVerdict, *, level: CompatibilityLevel,
                  rows: Sequence[VersionRow]) -> IncompatibleSchemaError:
    """The 40901 refusal of a registration, worded as Confluent words it."""
    messages = incompatibility_messages(verdict, level=level,
                                        old_schemas={r.version: r.schema for r in rows})
    return IncompatibleSchemaError(
        incompatible_message(subject, messages), subject=subject,
        incompatibilities=[_as_dict(i) for i in verdict.incompatibilities])


def _as_dict(incompatibility: Incompatibility) -> dict[str, object]:
    """An incompatibility as the error's ``incompatibilities`` detail lists it."""
    return {k: getattr(incompatibility, k)
            for k in ("type", "location", "message", "version", "direction")}
