"""The embedded registry's modes: the effective mode, the guards every write passes, and
setting or removing a mode (switching to IMPORT clears what is left of the subjects)."""

from __future__ import annotations

from service.registry.embedded.inputs import check_subject
from service.registry.embedded.store import GLOBAL, RegistryStore
from service.registry.errors import (
    OperationNotPermittedError,
    ReadOnlyModeError,
    SubjectModeNotFoundError,
)
from service.registry.model import RegistryMode

__all__ = ["Modes"]


class Modes:
    """Reads, guards and writes of the global and per-subject modes in `store`."""

    def __init__(self, store: RegistryStore) -> None:
        """Keep modes in `store`."""
        self._store = store

    def effective(self, subject: str | None) -> RegistryMode:
        """The subject's mode, else the global one, else READWRITE."""
        value = (self._store.setting("mode", subject) if subject else None) \
            or self._store.setting("mode", GLOBAL)
        return RegistryMode(value) if value else RegistryMode.READWRITE

    def configured(self, subject: str | None) -> RegistryMode | None:
        """The mode set on the subject (or globally when `subject` is None), else None."""
        value = self._store.setting("mode", subject or GLOBAL)
        return RegistryMode(value) if value else None

    def require_writable(self, subject: str | None) -> None:
        """READONLY (the subject's, else the global mode) refuses writes (42205). Called inside
        the write's transaction, so a mode another worker set just before is seen."""
        if self.effective(subject) is RegistryMode.READONLY:
            raise ReadOnlyModeError(
                "The registry is in read-only mode" if subject is None else
                f"Subject {subject} is in read-only mode", subject=subject)

    def require_register_mode(self, subject: str, *, importing: bool) -> bool:
        """Confluent's rule: READONLY refuses; an explicit id needs IMPORT mode, and without
        one the mode must be READWRITE. Returns whether this is an import. Checked first and
        again inside the registration's transaction."""
        self.require_writable(subject)
        mode = self.effective(subject)
        if importing and mode is not RegistryMode.IMPORT:
            raise OperationNotPermittedError(
                f"Subject {subject} is not in import mode; an explicit \"id\" is accepted only "
                "in IMPORT mode", subject=subject, field="id")
        if not importing and mode is not RegistryMode.READWRITE:
            raise OperationNotPermittedError(
                f"Subject {subject} is not in read-write mode; in {mode.value} mode a schema "
                "is registered with an explicit \"id\"", subject=subject, mode=mode.value)
        return importing

    def set(self, mode: RegistryMode, subject: str | None = None, *,
            force: bool = False) -> RegistryMode:
        """Set a subject's mode (or the global one), as the newest Confluent Platform does:
        switching to IMPORT needs the subject (or, global, every subject) to hold no live
        version, unless `force`; the soft-deleted versions left are then hard-deleted, so
        imported ids and versions start clean (with `force`, nothing is deleted).

        Raises:
            OperationNotPermittedError: IMPORT while live versions exist, without force (42205).
        """
        if subject is not None:
            check_subject(subject)
        with self._store.transaction():
            if mode is RegistryMode.IMPORT and not force and \
                    self.effective(subject) is not RegistryMode.IMPORT:
                self._clear_for_import(subject)
            self._store.put_setting("mode", subject or GLOBAL, value=mode.value)
        return mode

    def delete(self, subject: str) -> RegistryMode:
        """Remove a subject's mode; returns what it was (40409 when it has none)."""
        with self._store.transaction():
            previous = self._store.setting("mode", subject)
            if previous is None:
                raise SubjectModeNotFoundError(
                    f"Subject '{subject}' does not have subject-level mode configured",
                    subject=subject)
            self._store.put_setting("mode", subject, value=None)
        return RegistryMode(previous)

    def _clear_for_import(self, subject: str | None) -> None:
        """Hard-delete the soft-deleted versions of the subject (or of every subject), after
        refusing when any live version is left (42205)."""
        names = [subject] if subject else self._store.subjects(deleted=True)
        rows = {name: self._store.versions(name) for name in names}
        if any(not r.deleted for found in rows.values() for r in found):
            raise OperationNotPermittedError(
                "Cannot import since found existing subjects; pass force=true", subject=subject)
        for name, found in rows.items():
            self._store.remove(name)
            self._store.remove_unused_schemas([r.schema_id for r in found])
