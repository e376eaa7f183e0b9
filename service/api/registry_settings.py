"""Compatibility levels and modes, global or per subject: read, set and removed, each answered
with both the configured value and the one in effect."""

from __future__ import annotations

from service.api.admin_models import CompatibilityRemovedOut, ModeOut, ModeRemovedOut
from service.api.models import CompatibilityOut
from service.registry.compatibility import CompatibilityLevel
from service.registry.interface import SchemaRegistry
from service.registry.model import RegistryMode

__all__ = ["compatibility_out", "set_compatibility", "remove_compatibility", "mode_out",
           "set_mode", "remove_mode"]


async def compatibility_out(registry: SchemaRegistry, subject: str | None = None
                            ) -> CompatibilityOut:
    """The level in effect for `subject` (None: the global level) and the one set there."""
    configured = await registry.configured_compatibility(subject)
    effective = await registry.get_compatibility(subject, default_to_global=True)
    return CompatibilityOut(subject=subject, compatibility=effective.value,
                            configured=None if configured is None else configured.value)


async def set_compatibility(registry: SchemaRegistry, level: CompatibilityLevel,
                            subject: str | None = None) -> CompatibilityOut:
    """Set the level of `subject` (None: the global level); answers as `compatibility_out`."""
    await registry.set_compatibility(level, subject)
    return await compatibility_out(registry, subject)


async def remove_compatibility(registry: SchemaRegistry, subject: str
                               ) -> CompatibilityRemovedOut:
    """Remove a subject's own level, so the global one applies.

    Raises:
        SubjectConfigNotFoundError: the subject has no level of its own.
    """
    removed = await registry.delete_compatibility(subject)
    now = await compatibility_out(registry, subject)
    return CompatibilityRemovedOut(**now.model_dump(), removed=removed.value)


async def mode_out(registry: SchemaRegistry, subject: str | None = None) -> ModeOut:
    """The mode in effect for `subject` (None: the global mode) and the one set there."""
    configured = await registry.configured_mode(subject)
    return ModeOut(subject=subject, mode=await registry.get_mode(subject),
                   configured=configured)


async def set_mode(registry: SchemaRegistry, mode: RegistryMode, subject: str | None = None,
                   *, force: bool = False) -> ModeOut:
    """Set the mode of `subject` (None: the global mode); `force` lets IMPORT in although
    subjects exist. Answers as `mode_out`."""
    await registry.set_mode(mode, subject, force=force)
    return await mode_out(registry, subject)


async def remove_mode(registry: SchemaRegistry, subject: str) -> ModeRemovedOut:
    """Remove a subject's own mode, so the global one applies."""
    removed = await registry.delete_mode(subject)
    now = await mode_out(registry, subject)
    return ModeRemovedOut(**now.model_dump(), removed=removed)
