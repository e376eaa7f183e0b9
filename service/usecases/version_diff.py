"""Two live versions of a subject compared: column changes and the compatibility verdict.

The verdict is the registry's (version `to` checked against version `from` at the subject's
effective level); the local checker explains it column by column, as `/v1/tables/check` does.
"""

from __future__ import annotations

from dataclasses import dataclass

import anyio
import orjson

from service.core.errors import InvalidInputError
from service.core.schema_diff import FieldChange, diff_schemas
from service.registry.compatibility import (
    CompatibilityLevel,
    Incompatibility,
    check_compatibility,
)
from service.registry.errors import VersionNotFoundError, VersionSoftDeletedError
from service.registry.interface import SchemaRegistry
from service.registry.model import RegisteredSchema
from service.usecases.subject_overview import VersionRef

__all__ = ["NotAvroSchemaError", "VersionDiff", "diff_versions"]


class NotAvroSchemaError(InvalidInputError):
    """A version to compare holds a schema that is not Avro (a remote registry's Protobuf or
    JSON Schema subject): the diff reads Avro fields."""

    code = "not_avro_schema"


@dataclass(frozen=True)
class VersionDiff:
    """Two versions of a subject compared: the column changes from `old` to `new`, and
    whether `new` may follow `old` at the subject's effective `level` (every reason if not)."""

    subject: str
    old: VersionRef
    new: VersionRef
    changes: list[FieldChange]
    level: CompatibilityLevel
    compatible: bool
    incompatibilities: tuple[Incompatibility, ...]


async def diff_versions(registry: SchemaRegistry, subject: str, *, old_spec: str,
                        new_spec: str) -> VersionDiff:
    """The changes from version `old_spec` to `new_spec` and whether the registry would
    take the new one after the old one.

    Raises:
        SubjectNotFoundError, VersionNotFoundError: no such subject or version.
        VersionSoftDeletedError: a version named is soft-deleted (only live ones compare).
        InvalidVersionError: a version number past 2^31-1.
        NotAvroSchemaError: a version holds a schema of another type.
    """
    old = await _live_version(registry, subject, spec=old_spec, field="from")
    new = await _live_version(registry, subject, spec=new_spec, field="to")
    changes = diff_schemas(_avro_json(old, "from"), _avro_json(new, "to"))
    level = await registry.get_compatibility(subject, default_to_global=True)
    remote = await registry.check_compatibility(subject, new.schema, version=old.version)
    # One version against one: transitivity does not apply (the registry drops it too).
    pairwise = CompatibilityLevel(level.value.removesuffix("_TRANSITIVE"))
    local = await anyio.to_thread.run_sync(lambda: check_compatibility(
        new.schema, [(old.version, old.schema)], level=pairwise))
    reasons = () if remote.compatible else local.incompatibilities or remote.incompatibilities
    return VersionDiff(
        subject=subject, old=VersionRef(version=old.version, id=old.id),
        new=VersionRef(version=new.version, id=new.id), changes=changes, level=level,
        compatible=remote.compatible, incompatibilities=reasons)


async def _live_version(registry: SchemaRegistry, subject: str, *, spec: str,
                        field: str) -> RegisteredSchema:
    try:
        return await registry.get_version(subject, spec)
    except VersionNotFoundError as missing:
        if not (spec.isdigit() and int(spec) in await registry.versions(subject, deleted=True)):
            raise
        raise VersionSoftDeletedError(
            f"version {spec} of subject {subject} (`{field}`) is soft-deleted; a diff "
            "compares live versions", subject=subject, version=int(spec),
            field=field) from missing


def _avro_json(version: RegisteredSchema, field: str) -> object:
    if version.schema_type.upper() != "AVRO":
        raise NotAvroSchemaError(
            f"version {version.version} of subject {version.subject} (`{field}`) holds a "
            f"{version.schema_type} schema; the diff compares Avro schemas",
            subject=version.subject, version=version.version, field=field)
    return orjson.loads(version.schema)
