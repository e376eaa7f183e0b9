"""`SchemaRegistry`: the one interface the service uses, whatever registry stands behind it."""

from __future__ import annotations

from typing import Protocol

from service.registry.compatibility import CompatibilityLevel, CompatibilityVerdict
from service.registry.model import RegisteredSchema, RegistryMode

__all__ = ["SchemaRegistry", "VersionSpec"]

VersionSpec = int | str
"""A version number (1..2**31-1), or ``latest`` / ``-1``."""


class SchemaRegistry(Protocol):
    """A Confluent-compatible schema registry (Avro schemas, TopicNameStrategy subjects)."""

    async def register(self, subject: str, schema: str) -> RegisteredSchema:
        """Register `schema` under `subject` (idempotent); refuses incompatible schemas."""
        ...

    async def lookup(self, subject: str, schema: str, *, deleted: bool = False
                     ) -> RegisteredSchema:
        """The registration of `schema` under `subject`."""
        ...

    async def schema_by_id(self, schema_id: int) -> str:
        """The schema text of a global id (soft-deleted ones still resolve)."""
        ...

    async def uses_of(self, schema_id: int, *, deleted: bool = False) -> list[tuple[str, int]]:
        """The (subject, version) pairs that hold a global id (``/schemas/ids/{id}/versions``)."""
        ...

    async def get_version(self, subject: str, version: VersionSpec = "latest", *,
                          deleted: bool = False) -> RegisteredSchema:
        """One version of a subject (``latest`` = newest live one)."""
        ...

    async def subjects(self, *, deleted: bool = False) -> list[str]:
        """Subjects, sorted."""
        ...

    async def versions(self, subject: str, *, deleted: bool = False) -> list[int]:
        """Version numbers of a subject, ascending."""
        ...

    async def delete_subject(self, subject: str, *, permanent: bool = False) -> list[int]:
        """Soft- (or, after a soft delete, hard-) delete a subject; returns its versions."""
        ...

    async def delete_version(self, subject: str, version: VersionSpec, *,
                             permanent: bool = False) -> int:
        """Soft- (or, after a soft delete, hard-) delete one version."""
        ...

    async def get_compatibility(self, subject: str | None = None, *,
                                default_to_global: bool = False) -> CompatibilityLevel:
        """The level of a subject (or the global one when `subject` is None)."""
        ...

    async def set_compatibility(self, level: CompatibilityLevel,
                                subject: str | None = None) -> CompatibilityLevel:
        """Set the level of a subject (or the global one); refused (`ReadOnlyModeError`, 42205)
        while the subject (or, global, the registry) is READONLY, as Confluent refuses it."""
        ...

    async def check_compatibility(self, subject: str, schema: str, *,
                                  version: VersionSpec | None = None) -> CompatibilityVerdict:
        """What registering `schema` would meet (`version` None), or the check against one
        version; never registers anything."""
        ...

    async def get_mode(self, subject: str | None = None) -> RegistryMode:
        """The effective mode of a subject (or the global mode)."""
        ...

    async def set_mode(self, mode: RegistryMode, subject: str | None = None, *,
                       force: bool = False) -> RegistryMode:
        """Set the mode of a subject (or the global mode); IMPORT needs no schemas there,
        unless `force`."""
        ...

    async def configured_compatibility(self, subject: str | None = None
                                       ) -> CompatibilityLevel | None:
        """The level set on the subject (or the global one when None); None when unset."""
        ...

    async def delete_compatibility(self, subject: str | None = None) -> CompatibilityLevel:
        """Remove the subject's level (or reset the global one); returns the level removed.

        Raises:
            SubjectConfigNotFoundError: the subject has no level of its own.
            ReadOnlyModeError: READONLY mode, as for `set_compatibility`.
        """
        ...

    async def configured_mode(self, subject: str | None = None) -> RegistryMode | None:
        """The mode set on the subject (or the global one when None); None when unset."""
        ...

    async def delete_mode(self, subject: str) -> RegistryMode:
        """Remove the subject's mode; returns the mode removed.

        Raises:
            SubjectModeNotFoundError: the subject has no mode of its own.
        """
        ...
