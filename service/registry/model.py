"""Registry value types: a schema registered under a subject, registry modes, version specs."""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["RegisteredSchema", "RegistryMode", "LATEST"]

LATEST = "latest"
"""The version spec meaning the newest live version (``-1`` is accepted for it too)."""


@dataclass(frozen=True, slots=True)
class RegisteredSchema:
    """A schema as a registry holds it under one subject."""

    subject: str
    version: int
    id: int
    schema: str
    schema_type: str = "AVRO"


class RegistryMode(enum.Enum):
    """Registry modes: READONLY refuses writes."""

    READWRITE = "READWRITE"
    READONLY = "READONLY"
    IMPORT = "IMPORT"
