"""Models of compatibility levels and modes, global or per subject (``/v1/config``,
``/v1/mode``, ``/v1/subjects/{subject}/compatibility`` and ``.../mode``)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from service.api.models.example_config import examples as _examples
from service.registry.model import RegistryMode
from service.usecases.levels_and_modes import LevelSetting, ModeSetting

__all__ = ["CompatibilityIn", "CompatibilityOut", "CompatibilityRemovedOut", "ModeIn", "ModeOut",
           "ModeRemovedOut"]

_VALUE = "tidb_shop_orders-value"


class CompatibilityIn(BaseModel):
    """A compatibility level."""

    compatibility: Literal["NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD",
                           "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE"] = Field(
        examples=["FULL_TRANSITIVE"])


class CompatibilityOut(BaseModel):
    """A subject's (or with `subject` null, the registry's) compatibility level: the one in
    effect, and the one configured there."""

    subject: str | None = Field(examples=["tidb_shop_orders-value"])
    compatibility: str = Field(description="The level in effect", examples=["BACKWARD"])
    configured: str | None = Field(
        description="The level set on the subject (on the registry for the global level); "
                    "null: none is set, so the global level (the default BACKWARD) applies",
        examples=[None])

    @classmethod
    def of(cls, setting: LevelSetting) -> CompatibilityOut:
        """The level in effect and the one configured."""
        configured = setting.configured
        return cls(subject=setting.subject, compatibility=setting.effective.value,
                   configured=None if configured is None else configured.value)


class CompatibilityRemovedOut(CompatibilityOut):
    """A subject's level once its own was removed (the global level applies again)."""

    model_config = _examples({"subject": _VALUE, "compatibility": "BACKWARD",
                              "configured": None, "removed": "FULL_TRANSITIVE"})

    removed: str = Field(description="The subject's level that was removed")

    @classmethod
    def of(cls, setting: LevelSetting) -> CompatibilityRemovedOut:
        """The level after a removal, and the one removed."""
        assert setting.removed is not None
        return cls(**CompatibilityOut.of(setting).model_dump(), removed=setting.removed.value)


class ModeIn(BaseModel):
    """A registry mode: READONLY refuses writes, IMPORT takes registrations with their ids."""

    model_config = ConfigDict(extra="forbid")

    mode: RegistryMode = Field(examples=["READONLY"])


class ModeOut(BaseModel):
    """A subject's (or with `subject` null, the registry's) mode: in effect, and configured."""

    model_config = _examples(
        {"subject": _VALUE, "mode": "READONLY", "configured": "READONLY"},
        {"subject": None, "mode": "READWRITE", "configured": None})

    subject: str | None
    mode: RegistryMode = Field(description="The mode in effect")
    configured: RegistryMode | None = Field(
        description="The mode set on the subject (on the registry for the global mode); "
                    "null: none is set, so the global mode (the default READWRITE) applies")

    @classmethod
    def of(cls, setting: ModeSetting) -> ModeOut:
        """The mode in effect and the one configured."""
        return cls(subject=setting.subject, mode=setting.effective,
                   configured=setting.configured)


class ModeRemovedOut(ModeOut):
    """A subject's mode once its own was removed (the global mode applies again)."""

    model_config = _examples({"subject": _VALUE, "mode": "READWRITE", "configured": None,
                              "removed": "READONLY"})

    removed: RegistryMode = Field(description="The subject's mode that was removed")

    @classmethod
    def of(cls, setting: ModeSetting) -> ModeRemovedOut:
        """The mode after a removal, and the one removed."""
        assert setting.removed is not None
        return cls(**ModeOut.of(setting).model_dump(), removed=setting.removed)
