"""Registry admin through the service's own auth: ``/v1/subjects...`` (any registry)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query

from service.api.body_route import CheckedBodyRoute
from service.api.deps import RuntimeDep, require_read, require_write
from service.api.models import (
    CompatibilityIn,
    CompatibilityOut,
    DeletedOut,
    RegisteredSchemaOut,
    problem,
    registered_schema_out,
)
from service.registry.compatibility import CompatibilityLevel

router = APIRouter(route_class=CheckedBodyRoute,
                   tags=["registry-admin"], responses=problem(401, 404, 502, 503))
_READ, _WRITE = [Depends(require_read)], [Depends(require_write)]
SubjectPath = Annotated[str, Path(examples=["tidb_shop_orders-value"])]
VersionPath = Annotated[str, Path(description="1, 2, ... up to 2^31-1 (larger: 422 "
                                              "`invalid_version`), or `latest` (`-1` too)",
                                  pattern=r"^(latest|-1|[1-9][0-9]*)$", examples=["latest"])]
Deleted = Annotated[bool, Query(description="Include soft-deleted entries")]
Permanent = Annotated[bool, Query(description="Hard delete (after a soft delete)")]


@router.get("/v1/subjects", operation_id="listSubjects", dependencies=_READ,
            summary="List subjects", description="All subjects, sorted.")
async def list_subjects(runtime: RuntimeDep, deleted: Deleted = False) -> list[str]:
    return await runtime.registry.subjects(deleted=deleted)


@router.get("/v1/subjects/{subject}/versions", operation_id="listVersions",
            dependencies=_READ, summary="List a subject's versions",
            description="Version numbers, ascending.")
async def list_versions(subject: SubjectPath, runtime: RuntimeDep,
                        deleted: Deleted = False) -> list[int]:
    return await runtime.registry.versions(subject, deleted=deleted)


@router.get("/v1/subjects/{subject}/versions/{version}", operation_id="getVersion",
            dependencies=_READ, summary="One version of a subject",
            description="The schema registered as `version` (or the latest live one).")
async def get_version(subject: SubjectPath, version: VersionPath, runtime: RuntimeDep,
                      deleted: Deleted = False) -> RegisteredSchemaOut:
    return registered_schema_out(
        await runtime.registry.get_version(subject, version, deleted=deleted))


@router.delete("/v1/subjects/{subject}/versions/{version}", operation_id="deleteVersion",
               dependencies=_WRITE, summary="Delete one version",
               description="Soft delete, or with `permanent=true` hard delete a version that "
                           "was soft-deleted first (Confluent's rules).",
               responses=problem(401))
async def delete_version(subject: SubjectPath, version: VersionPath, runtime: RuntimeDep,
                         permanent: Permanent = False) -> DeletedOut:
    number = await runtime.delete_version(subject, version, permanent=permanent)
    return DeletedOut(subject=subject, versions=[number], permanent=permanent)


@router.delete("/v1/subjects/{subject}", operation_id="deleteSubject", dependencies=_WRITE,
               summary="Delete a subject",
               description="Soft delete every version, or with `permanent=true` hard delete "
                           "a soft-deleted subject.", responses=problem(401))
async def delete_subject(subject: SubjectPath, runtime: RuntimeDep,
                         permanent: Permanent = False) -> DeletedOut:
    numbers = await runtime.delete_subject(subject, permanent=permanent)
    return DeletedOut(subject=subject, versions=numbers, permanent=permanent)


@router.get("/v1/subjects/{subject}/compatibility", operation_id="getCompatibility",
            dependencies=_READ, summary="A subject's compatibility level",
            description="The subject's own level, else the global one.")
async def get_compatibility(subject: SubjectPath, runtime: RuntimeDep) -> CompatibilityOut:
    level = await runtime.registry.get_compatibility(subject, default_to_global=True)
    return CompatibilityOut(subject=subject, compatibility=level.value)


@router.put("/v1/subjects/{subject}/compatibility", operation_id="setCompatibility",
            dependencies=_WRITE, summary="Set a subject's compatibility level",
            description="One of the seven Confluent levels.", responses=problem(401))
async def set_compatibility(subject: SubjectPath, body: CompatibilityIn,
                            runtime: RuntimeDep) -> CompatibilityOut:
    level = await runtime.registry.set_compatibility(
        CompatibilityLevel(body.compatibility), subject)
    return CompatibilityOut(subject=subject, compatibility=level.value)
