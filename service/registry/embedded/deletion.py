"""The embedded registry's deletes, as Confluent's: a soft delete first, then a permanent one;
a hard delete forgets the schemas no version holds any more and an emptied subject's settings."""

from __future__ import annotations

from collections.abc import Sequence

from service.registry.embedded.inputs import parse_version
from service.registry.embedded.modes import Modes
from service.registry.embedded.reads import find_version
from service.registry.embedded.store import RegistryStore, VersionRow
from service.registry.errors import (
    SubjectNotFoundError,
    SubjectNotSoftDeletedError,
    SubjectSoftDeletedError,
    VersionNotSoftDeletedError,
    VersionSoftDeletedError,
)
from service.registry.interface import VersionSpec

__all__ = ["Deletion"]


class Deletion:
    """Soft and hard deletes of subjects and versions in `store`, each in one transaction."""

    def __init__(self, store: RegistryStore, modes: Modes) -> None:
        """Delete from `store`; `modes` guards the writes (READONLY refuses them)."""
        self._store, self._modes = store, modes

    def delete_subject(self, subject: str, *, permanent: bool) -> list[int]:
        """Soft-delete a subject's live versions, or (`permanent`, once they all are)
        hard-delete every version; returns the versions deleted.

        Raises:
            SubjectNotFoundError: no version stored (40401).
            SubjectSoftDeletedError: a soft delete of a soft-deleted subject (40404).
            SubjectNotSoftDeletedError: a permanent delete while versions are live (40405).
        """
        with self._store.transaction():
            self._modes.require_writable(subject)
            rows = self._store.versions(subject)
            if not rows:
                raise SubjectNotFoundError(f"Subject '{subject}' not found.", subject=subject)
            if permanent:
                return self._remove_subject(subject, rows)
            live = [r.version for r in rows if not r.deleted]
            if not live:
                raise SubjectSoftDeletedError(
                    f"Subject '{subject}' was soft deleted.Set permanent=true to delete "
                    "permanently", subject=subject)
            self._store.mark_deleted(subject)
            return live

    def delete_version(self, subject: str, version: VersionSpec, *, permanent: bool) -> int:
        """Soft-delete one version (``latest``: the newest live one), or (`permanent`, once
        soft-deleted) hard-delete it; returns its number.

        Raises:
            SubjectNotFoundError, VersionNotFoundError: nothing to delete (40401 / 40402).
            VersionSoftDeletedError: a soft delete of a soft-deleted version (40406).
            VersionNotSoftDeletedError: a permanent delete of a live version (40407).
        """
        number = parse_version(version)
        with self._store.transaction():
            self._modes.require_writable(subject)
            row = find_version(subject, self._store.versions(subject), number=number,
                               deleted=True, for_delete=True)
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

    def _remove_subject(self, subject: str, rows: Sequence[VersionRow]) -> list[int]:
        """The permanent delete of a subject whose versions are all soft-deleted."""
        if any(not r.deleted for r in rows):
            raise SubjectNotSoftDeletedError(
                f"Subject '{subject}' was not deleted first before being permanently "
                "deleted", subject=subject)
        self._store.remove(subject)
        self._forget_if_empty(subject, [r.schema_id for r in rows])
        return [r.version for r in rows]

    def _forget_if_empty(self, subject: str, ids: Sequence[int]) -> None:
        """After a hard delete: drop those schemas of `ids` no version holds any more (their
        ids answer 40403 and are never handed out again) and, once the subject holds no
        version at all, its level and mode (as Confluent does)."""
        self._store.remove_unused_schemas(ids)
        if not self._store.versions(subject):
            self._store.put_setting("config", subject, value=None)
            self._store.put_setting("mode", subject, value=None)
