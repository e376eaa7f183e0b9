"""Registry admin through the service's own auth: ``/v1/subjects...``, ``GET
/v1/schemas/{id}`` and ``DELETE /v1/topics/{topic}`` (any registry)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query

from service.api.admin_models import SchemaByIdOut, SubjectOut, TopicDeletedOut, VersionDiffOut
from service.api.body_route import CheckedBodyRoute
from service.api.deps import RuntimeDep, require_read, require_write
from service.api.models import (
    DeletedOut,
    RegisteredSchemaOut,
    problem,
    registered_schema_out,
)
from service.api.subject_facts import schema_by_id_out, subject_out, subjects_out
from service.api.topic_work import delete_topic
from service.api.version_diff import diff_versions

router = APIRouter(route_class=CheckedBodyRoute,
                   tags=["registry-admin"], responses=problem(401, 404, 502, 503))
_READ, _WRITE = [Depends(require_read)], [Depends(require_write)]
_VERSION = r"^(latest|-1|[1-9][0-9]*)$"
_VERSION_TEXT = ("1, 2, ... up to 2^31-1 (larger: 422 `invalid_version`), or `latest` "
                 "(`-1` too)")
SubjectPath = Annotated[str, Path(examples=["tidb_shop_orders-value"])]
VersionPath = Annotated[str, Path(description=_VERSION_TEXT, pattern=_VERSION,
                                  examples=["latest"])]
Deleted = Annotated[bool, Query(description="Include soft-deleted entries")]
Permanent = Annotated[bool, Query(description="Hard delete (after a soft delete)")]


@router.get("/v1/subjects", operation_id="listSubjects", dependencies=_READ,
            summary="List subjects, or an overview of every subject",
            description="All subjects, sorted. With `detail=true`, each subject's versions, "
                        "latest version and id, configured and effective compatibility level "
                        "and mode, in one call: the registry at a glance.")
async def list_subjects(
        runtime: RuntimeDep, deleted: Deleted = False,
        detail: Annotated[bool, Query(description="Each subject's facts, not only its name")
                          ] = False) -> list[str] | list[SubjectOut]:
    if detail:
        return await subjects_out(runtime.registry, deleted=deleted)
    return await runtime.registry.subjects(deleted=deleted)


@router.get("/v1/subjects/{subject}", operation_id="getSubject", dependencies=_READ,
            summary="A subject at a glance",
            description="Versions (with `deleted=true` the soft-deleted ones too, listed again "
                        "in `deleted_versions`), the latest live version and its schema id, "
                        "the compatibility level and the mode: each as configured on the "
                        "subject (null: inherited) and as in effect.")
async def get_subject(subject: SubjectPath, runtime: RuntimeDep,
                      deleted: Deleted = False) -> SubjectOut:
    return await subject_out(runtime.registry, subject, deleted=deleted)


@router.get("/v1/subjects/{subject}/versions", operation_id="listVersions",
            dependencies=_READ, summary="List a subject's versions",
            description="Version numbers, ascending.")
async def list_versions(subject: SubjectPath, runtime: RuntimeDep,
                        deleted: Deleted = False) -> list[int]:
    return await runtime.registry.versions(subject, deleted=deleted)


@router.get("/v1/subjects/{subject}/versions/{version}", operation_id="getVersion",
            dependencies=_READ, summary="One version of a subject",
            description="The schema registered as `version` (or the latest live one): "
                        "`schema` as JSON, `schema_text` as the registry's exact string.")
async def get_version(subject: SubjectPath, version: VersionPath, runtime: RuntimeDep,
                      deleted: Deleted = False) -> RegisteredSchemaOut:
    return registered_schema_out(
        await runtime.registry.get_version(subject, version, deleted=deleted))


@router.get("/v1/subjects/{subject}/diff", operation_id="diffVersions", dependencies=_READ,
            summary="Compare two versions column by column",
            description="The columns added and removed, and each column whose type, "
                        "nullability or default changed, from version `from` to version `to`; "
                        "and whether `to` is compatible with `from` at the subject's "
                        "effective level, every incompatibility explained as "
                        "`/v1/tables/check` does. Live versions only (a soft-deleted one: "
                        "404 `version_soft_deleted`); `from` equal to `to` has no changes.",
            response_model_by_alias=True)
async def diff(subject: SubjectPath, runtime: RuntimeDep,
               from_: Annotated[str, Query(alias="from", description=_VERSION_TEXT,
                                           pattern=_VERSION, examples=["1"])],
               to: Annotated[str, Query(description=_VERSION_TEXT, pattern=_VERSION,
                                        examples=["latest"])]) -> VersionDiffOut:
    return await diff_versions(runtime.registry, subject, from_, to)


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


@router.delete("/v1/topics/{topic}", operation_id="deleteTopic", dependencies=_WRITE,
               summary="Delete a topic's key and value subjects",
               description="Soft-deletes `{topic}-key` and `{topic}-value` (whichever have "
                           "live versions; 404 when the topic has neither subject); with "
                           "`permanent=true`, hard-deletes them once both were soft-deleted. "
                           "Both subjects are checked before either is deleted.",
               responses=problem(401))
async def delete_topic_subjects(
        topic: Annotated[str, Path(description="The Kafka topic",
                                   examples=["tidb_shop_orders"])],
        runtime: RuntimeDep, permanent: Permanent = False) -> TopicDeletedOut:
    return await delete_topic(runtime, topic, permanent=permanent)


@router.get("/v1/schemas/{schema_id:int}", operation_id="getSchemaById", dependencies=_READ,
            summary="A schema by its global id",
            description="The schema as JSON and as the registry's exact string, and every "
                        "subject version that uses the id (soft-deleted ones too with "
                        "`deleted=true`).", response_model_by_alias=True)
async def schema_by_id(
        schema_id: Annotated[int, Path(ge=1, le=2**31 - 1, examples=[1],
                                       description="The global schema id")],
        runtime: RuntimeDep, deleted: Deleted = False) -> SchemaByIdOut:
    return await schema_by_id_out(runtime.registry, schema_id, deleted=deleted)
