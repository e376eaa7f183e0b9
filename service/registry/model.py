"""Registry value types: a schema registered under a subject, registry modes, version specs."""

from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass

__all__ = ["RegisteredSchema", "RegistryMode", "LATEST"]

LATEST = "latest"
"""The version spec meaning the newest live version (``-1`` is accepted for it too)."""


@dataclass(frozen=True, slots=True)
class RegisteredSchema:
    """A schema as a registry holds it under one subject.

    `glue_id` is the schema version id of AWS Glue's registry (its frames carry that, not
    `id`, which is then a number this process gave the version: Glue has no global ids)."""

    subject: str
    version: int
    id: int
    schema: str
    schema_type: str = "AVRO"
    glue_id: uuid.UUID | None = None

    @property
    def wire_id(self) -> int | str:
        """The id this version's frames carry, as answers show it: the Confluent id, or the
        Glue schema version's UUID (text)."""
        return self.id if self.glue_id is None else str(self.glue_id)


class RegistryMode(enum.Enum):
    """Registry modes: READONLY refuses writes."""

    READWRITE = "READWRITE"
    READONLY = "READONLY"
    IMPORT = "IMPORT"
