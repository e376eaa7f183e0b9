"""Compatibility levels and modes, global or per subject: read, set and removed, each answered
with both the configured value and the one in effect."""

from __future__ import annotations

from dataclasses import dataclass

from service.registry.compatibility import CompatibilityLevel
from service.registry.interface import SchemaRegistry
from service.registry.model import RegistryMode

__all__ = ["LevelSetting", "ModeSetting", "compatibility_setting", "set_compatibility",
           "remove_compatibility", "mode_setting", "set_mode", "remove_mode"]


@dataclass(frozen=True)
class LevelSetting:
    """A subject's (with `subject` None, the registry's) compatibility level: the one in
    effect, the one configured there (None: inherited), and after a removal the one removed."""

    subject: str | None
    effective: CompatibilityLevel
    configured: CompatibilityLevel | None
    removed: CompatibilityLevel | None = None


@dataclass(frozen=True)
class ModeSetting:
    """A subject's (with `subject` None, the registry's) mode: the one in effect, the one
    configured there (None: inherited), and after a removal the one removed."""

    subject: str | None
    effective: RegistryMode
    configured: RegistryMode | None
    removed: RegistryMode | None = None


async def compatibility_setting(registry: SchemaRegistry, subject: str | None = None
                                ) -> LevelSetting:
    """The level in effect for `subject` (None: the global level) and the one set there."""
    configured = await registry.configured_compatibility(subject)
    effective = await registry.get_compatibility(subject, default_to_global=True)
    return LevelSetting(subject=subject, effective=effective, configured=configured)


async def set_compatibility(registry: SchemaRegistry, level: CompatibilityLevel, *,
                            subject: str | None = None) -> LevelSetting:
    """Set the level of `subject` (None: the global level); answers as
    `compatibility_setting`."""
    await registry.set_compatibility(level, subject)
    return await compatibility_setting(registry, subject)


async def remove_compatibility(registry: SchemaRegistry, subject: str) -> LevelSetting:
    """Remove a subject's own level, so the global one applies.

    Raises:
        SubjectConfigNotFoundError: the subject has no level of its own.
    """
    removed = await registry.delete_compatibility(subject)
    now = await compatibility_setting(registry, subject)
    return LevelSetting(subject=subject, effective=now.effective, configured=now.configured,
                        removed=removed)


async def mode_setting(registry: SchemaRegistry, subject: str | None = None) -> ModeSetting:
    """The mode in effect for `subject` (None: the global mode) and the one set there."""
    configured = await registry.configured_mode(subject)
    return ModeSetting(subject=subject, effective=await registry.get_mode(subject),
                       configured=configured)


async def set_mode(registry: SchemaRegistry, mode: RegistryMode, *,
                   subject: str | None = None, force: bool = False) -> ModeSetting:
    """Set the mode of `subject` (None: the global mode); `force` lets IMPORT in although
    subjects exist. Answers as `mode_setting`."""
    await registry.set_mode(mode, subject, force=force)
    return await mode_setting(registry, subject)


async def remove_mode(registry: SchemaRegistry, subject: str) -> ModeSetting:
    """Remove a subject's own mode, so the global one applies."""
    removed = await registry.delete_mode(subject)
    now = await mode_setting(registry, subject)
    return ModeSetting(subject=subject, effective=now.effective, configured=now.configured,
                       removed=removed)
