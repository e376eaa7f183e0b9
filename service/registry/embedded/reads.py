"""The embedded registry's reads: lookups by schema, id and version, and the listings of
subjects, versions and schemas, with Confluent's rules for soft-deleted versions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from service.registry.canonical import stored_form
from service.registry.embedded.inputs import parse_version
from service.registry.embedded.store import RegistryStore, VersionRow
from service.registry.errors import (
    SchemaNotFoundError,
    SubjectNotFoundError,
    VersionNotFoundError,
)
from service.registry.interface import VersionSpec
from service.registry.model import RegisteredSchema

__all__ = ["RegistryReads", "find_version"]


def find_version(subject: str, rows: Sequence[VersionRow], *, number: int | None,
                 deleted: bool, for_delete: bool = False) -> VersionRow:
    """The row of version `number` (None: the newest) among a subject's `rows`.

    Args:
        subject: the subject, for the errors.
        rows: every stored version of the subject, oldest first.
        number: the version, or None for ``latest``.
        deleted: soft-deleted versions count (``?deleted=true``).
        for_delete: ``latest`` means the newest *live* version, even with `deleted`.

    Raises:
        SubjectNotFoundError: no version at all, or only soft-deleted ones without `deleted`.
        VersionNotFoundError: no such version among those that count.
    """
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


class RegistryReads:
    """Read-only answers from `store` (no transaction: WAL readers never wait)."""

    def __init__(self, store: RegistryStore) -> None:
        """Read from `store`."""
        self._store = store

    def lookup(self, subject: str, schema: str, *, deleted: bool, normalize: bool,
               references: Sequence[Mapping[str, Any]]) -> RegisteredSchema:
        """The newest version of `subject` holding `schema` (40401 / 40403 when none)."""
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

    def schema_by_id(self, schema_id: int) -> str:
        """The schema text of an id (40403 when no schema has it)."""
        text = self._store.schema_by_id(schema_id)
        if text is None:
            raise SchemaNotFoundError(f"Schema {schema_id} not found", schema_id=schema_id)
        return text

    def uses_of(self, schema_id: int, *, deleted: bool) -> list[tuple[str, int]]:
        """(subject, version) pairs holding a schema id (40403 for an unknown id)."""
        self.schema_by_id(schema_id)
        return self._store.uses_of(schema_id, deleted=deleted)

    def get_version(self, subject: str, version: VersionSpec, *,
                    deleted: bool) -> RegisteredSchema:
        """One version of a subject (``latest``: the newest that counts)."""
        row = find_version(subject, self._store.versions(subject),
                           number=parse_version(version), deleted=deleted)
        return RegisteredSchema(subject, row.version, row.schema_id, row.schema)

    def referenced_by(self, subject: str, version: VersionSpec, *, deleted: bool) -> list[int]:
        """Ids of schemas referencing a version: always none, as no references are stored
        (40401 / 40402 for an unknown subject or version)."""
        find_version(subject, self._store.versions(subject), number=parse_version(version),
                     deleted=deleted)
        return []

    def subjects(self, *, deleted: bool, deleted_only: bool, prefix: str) -> list[str]:
        """Subjects, sorted: live ones, with soft-deleted ones too (`deleted`), or only the
        fully soft-deleted ones (`deleted_only`); optionally those starting with `prefix`."""
        names = self._store.subjects(deleted=deleted or deleted_only)
        if deleted_only:
            live = set(self._store.subjects(deleted=False))
            names = [n for n in names if n not in live]
        return [n for n in names if n.startswith(prefix)]

    def versions(self, subject: str, *, deleted: bool, deleted_only: bool,
                 deleted_as_negative: bool) -> list[int]:
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

    def max_id(self) -> int:
        """The highest schema id handed out so far, deleted ones included (``fetchMaxId``)."""
        return self._store.max_id()

    def schemas(self, *, prefix: str, deleted: bool, latest_only: bool
                ) -> list[RegisteredSchema]:
        """Every registered version (``GET /schemas``), by subject then version."""
        found: list[RegisteredSchema] = []
        for subject in self._store.subjects(deleted=deleted):
            if not subject.startswith(prefix):
                continue
            rows = [r for r in self._store.versions(subject) if deleted or not r.deleted]
            found += [RegisteredSchema(subject, r.version, r.schema_id, r.schema)
                      for r in (rows[-1:] if latest_only else rows)]
        return found
