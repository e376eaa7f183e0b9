"""The embedded registry's compatibility levels: global and per-subject, read, set and removed
as Confluent does (BACKWARD when none is set; writes refused in READONLY mode)."""

from __future__ import annotations

from service.registry.compatibility import CompatibilityLevel
from service.registry.embedded.inputs import check_subject
from service.registry.embedded.modes import Modes
from service.registry.embedded.store import GLOBAL, RegistryStore
from service.registry.errors import SubjectConfigNotFoundError

__all__ = ["DEFAULT_LEVEL", "Levels"]

DEFAULT_LEVEL = CompatibilityLevel.BACKWARD
"""The global level until one is set (Confluent's default)."""


class Levels:
    """Reads and writes of the global and per-subject compatibility levels in `store`."""

    def __init__(self, store: RegistryStore, modes: Modes) -> None:
        """Keep levels in `store`; `modes` guards their writes."""
        self._store, self._modes = store, modes

    def global_level(self) -> CompatibilityLevel:
        """The global level, else BACKWARD."""
        level = self._store.setting("config", GLOBAL)
        return CompatibilityLevel(level) if level else DEFAULT_LEVEL

    def effective(self, subject: str) -> CompatibilityLevel:
        """The subject's own level, else the global one."""
        level = self._store.setting("config", subject)
        return CompatibilityLevel(level) if level else self.global_level()

    def for_registration(self, subject: str, *, force: bool) -> CompatibilityLevel:
        """The level a registration meets: NONE when forced, else the effective level."""
        return CompatibilityLevel.NONE if force else self.effective(subject)

    def get(self, subject: str | None, *, default_to_global: bool) -> CompatibilityLevel:
        """The subject's own level (or the global one when `subject` is None).

        Raises:
            SubjectConfigNotFoundError: the subject has none, and not `default_to_global`.
        """
        if subject is None:
            return self.global_level()
        level = self._store.setting("config", subject)
        if level is not None:
            return CompatibilityLevel(level)
        if default_to_global:
            return self.global_level()
        raise SubjectConfigNotFoundError(
            f"Subject '{subject}' does not have subject-level compatibility configured",
            subject=subject)

    def configured(self, subject: str | None) -> CompatibilityLevel | None:
        """The level set on the subject (or globally when `subject` is None), else None."""
        level = self._store.setting("config", subject or GLOBAL)
        return CompatibilityLevel(level) if level else None

    def set(self, level: CompatibilityLevel, subject: str | None) -> CompatibilityLevel:
        """Set a subject's level (or the global one). Refused in READONLY mode (42205): Confluent
        refuses config writes in read-only mode (mode changes stay allowed)."""
        if subject is not None:
            check_subject(subject)
        with self._store.transaction():
            self._modes.require_writable(subject)
            self._store.put_setting("config", subject or GLOBAL, value=level.value)
        return level

    def delete(self, subject: str | None) -> CompatibilityLevel:
        """Remove a subject's level (or reset the global one to BACKWARD); returns what it was.

        Raises:
            SubjectConfigNotFoundError: the subject has no level of its own (40408 here; the
                REST API answers 40401 there, as Confluent does).
            ReadOnlyModeError: READONLY mode (42205), as for `set`.
        """
        if subject is not None:
            check_subject(subject)
        with self._store.transaction():
            self._modes.require_writable(subject)
            previous = self._store.setting("config", subject or GLOBAL)
            if previous is None and subject is not None:
                raise SubjectConfigNotFoundError(
                    f"Subject '{subject}' does not have subject-level compatibility configured",
                    subject=subject)
            self._store.put_setting("config", subject or GLOBAL, value=None)
        return CompatibilityLevel(previous) if previous else DEFAULT_LEVEL
