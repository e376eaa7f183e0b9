"""``/v1/subjects``: registry admin through the service's own auth (any registry): subjects
at a glance, their versions, diffs between versions, deletes, and each subject's own
compatibility level and mode."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from service.api.body_route import CheckedBodyRoute
from service.api.deps import READ, WRITE, RuntimeDep
from service.api.docs.route_docs import problem
from service.api.models import (
    CompatibilityIn,
    CompatibilityOut,
    CompatibilityRemovedOut,
    DeletedOut,
    ModeIn,
    ModeOut,
    ModeRemovedOut,
    RegisteredSchemaOut,
    SubjectOut,
    VersionDiffOut,
)
from service.api.routers.params import (
    VERSION_PATTERN,
    VERSION_TEXT,
    Deleted,
    Force,
    Permanent,
    SubjectPath,
    VersionPath,
)
from service.registry.compatibility import CompatibilityLevel
from service.usecases import levels_and_modes as settings
from service.usecases.subject_overview import all_subject_facts, subject_facts
from service.usecases.version_diff import diff_versions

router = APIRouter(route_class=CheckedBodyRoute, tags=["registry-admin"])
_ANSWERS = problem(401, 404, 502, 503)
_SETTING_ANSWERS = problem(401, 502, 503) | problem(404)
"""A subject's level or mode: the same statuses, listed in the document's own order."""
_INHERITS = "null `configured`: none set, the global one applies"


@router.get("/v1/subjects", operation_id="listSubjects", dependencies=READ,
            responses=_ANSWERS, summary="List subjects, or an overview of every subject",
            description="All subjects, sorted. With `detail=true`, each subject's versions, "
                        "latest version and id, configured and effective compatibility level "
                        "and mode, in one call: the registry at a glance.")
async def list_subjects(
        *, runtime: RuntimeDep, deleted: Deleted = False,
        detail: Annotated[bool, Query(description="Each subject's facts, not only its name")
                          ] = False) -> list[str] | list[SubjectOut]:
    """List the subjects' names, or with `detail` each subject's facts."""
    if detail:
        return [SubjectOut.of(f) for f in await all_subject_facts(runtime.registry,
                                                                    deleted=deleted)]
    return await runtime.registry.subjects(deleted=deleted)


@router.get("/v1/subjects/{subject}", operation_id="getSubject", dependencies=READ,
            responses=_ANSWERS, summary="A subject at a glance",
            description="Versions (with `deleted=true` the soft-deleted ones too, listed again "
                        "in `deleted_versions`), the latest live version and its schema id, "
                        "the compatibility level and the mode: each as configured on the "
                        "subject (null: inherited) and as in effect.")
async def get_subject(subject: SubjectPath, *, runtime: RuntimeDep,
                      deleted: Deleted = False) -> SubjectOut:
    """Read one subject's facts."""
    return SubjectOut.of(await subject_facts(runtime.registry, subject, deleted=deleted))


@router.get("/v1/subjects/{subject}/versions", operation_id="listVersions",
            dependencies=READ, responses=_ANSWERS, summary="List a subject's versions",
            description="Version numbers, ascending.")
async def list_versions(subject: SubjectPath, *, runtime: RuntimeDep,
                        deleted: Deleted = False) -> list[int]:
    """List the subject's version numbers."""
    return await runtime.registry.versions(subject, deleted=deleted)


@router.get("/v1/subjects/{subject}/versions/{version}", operation_id="getVersion",
            dependencies=READ, responses=_ANSWERS, summary="One version of a subject",
            description="The schema registered as `version` (or the latest live one): "
                        "`schema` as JSON, `schema_text` as the registry's exact string.")
async def get_version(subject: SubjectPath, version: VersionPath, *, runtime: RuntimeDep,
                      deleted: Deleted = False) -> RegisteredSchemaOut:
    """Read one version of the subject."""
    return RegisteredSchemaOut.of(
        await runtime.registry.get_version(subject, version, deleted=deleted))


@router.get("/v1/subjects/{subject}/diff", operation_id="diffVersions", dependencies=READ,
            responses=_ANSWERS, summary="Compare two versions column by column",
            description="The columns added and removed, and each column whose type, "
                        "nullability or default changed, from version `from` to version `to`; "
                        "and whether `to` is compatible with `from` at the subject's "
                        "effective level, every incompatibility explained as "
                        "`/v1/tables/check` does. Live versions only (a soft-deleted one: "
                        "404 `version_soft_deleted`); `from` equal to `to` has no changes.",
            response_model_by_alias=True)
async def diff(subject: SubjectPath, runtime: RuntimeDep, *,
               from_: Annotated[str, Query(alias="from", description=VERSION_TEXT,
                                           pattern=VERSION_PATTERN, examples=["1"])],
               to: Annotated[str, Query(description=VERSION_TEXT, pattern=VERSION_PATTERN,
                                        examples=["latest"])]) -> VersionDiffOut:
    """Compare two live versions of the subject."""
    return VersionDiffOut.of(
        await diff_versions(runtime.registry, subject, old_spec=from_, new_spec=to))


@router.delete("/v1/subjects/{subject}/versions/{version}", operation_id="deleteVersion",
               dependencies=WRITE, responses=_ANSWERS, summary="Delete one version",
               description="Soft delete, or with `permanent=true` hard delete a version that "
                           "was soft-deleted first (Confluent's rules).")
async def delete_version(subject: SubjectPath, version: VersionPath, *, runtime: RuntimeDep,
                         permanent: Permanent = False) -> DeletedOut:
    """Delete one version of the subject."""
    number = await runtime.delete_version(subject, version, permanent=permanent)
    return DeletedOut(subject=subject, versions=[number], permanent=permanent)


@router.delete("/v1/subjects/{subject}", operation_id="deleteSubject", dependencies=WRITE,
               responses=_ANSWERS, summary="Delete a subject",
               description="Soft delete every version, or with `permanent=true` hard delete "
                           "a soft-deleted subject.")
async def delete_subject(subject: SubjectPath, *, runtime: RuntimeDep,
                         permanent: Permanent = False) -> DeletedOut:
    """Delete every version of the subject."""
    numbers = await runtime.delete_subject(subject, permanent=permanent)
    return DeletedOut(subject=subject, versions=numbers, permanent=permanent)


@router.get("/v1/subjects/{subject}/compatibility", operation_id="getCompatibility",
            dependencies=READ, responses=_SETTING_ANSWERS,
            summary="A subject's compatibility level",
            description=f"The level in effect (the subject's own, else the global one); "
                        f"{_INHERITS}.")
async def get_compatibility(subject: SubjectPath, runtime: RuntimeDep) -> CompatibilityOut:
    """Read the subject's level, in effect and configured."""
    return CompatibilityOut.of(await settings.compatibility_setting(runtime.registry, subject))


@router.put("/v1/subjects/{subject}/compatibility", operation_id="setCompatibility",
            dependencies=WRITE, responses=_SETTING_ANSWERS,
            summary="Set a subject's compatibility level",
            description="One of the seven Confluent levels, overriding the global one.")
async def set_compatibility(subject: SubjectPath, body: CompatibilityIn, *,
                            runtime: RuntimeDep) -> CompatibilityOut:
    """Set the subject's own level."""
    return CompatibilityOut.of(await settings.set_compatibility(
        runtime.registry, CompatibilityLevel(body.compatibility), subject=subject))


@router.delete("/v1/subjects/{subject}/compatibility", operation_id="deleteCompatibility",
               dependencies=WRITE, responses=_SETTING_ANSWERS,
               summary="Remove a subject's compatibility level",
               description="The subject follows the global level again; `removed` is the "
                           "level it had. 404 `subject_config_not_found` when it had none.")
async def delete_compatibility(subject: SubjectPath,
                               runtime: RuntimeDep) -> CompatibilityRemovedOut:
    """Remove the subject's own level."""
    return CompatibilityRemovedOut.of(
        await settings.remove_compatibility(runtime.registry, subject))


@router.get("/v1/subjects/{subject}/mode", operation_id="getSubjectMode", dependencies=READ,
            responses=_SETTING_ANSWERS, summary="A subject's mode",
            description=f"The mode in effect (the subject's own, else the global one); "
                        f"{_INHERITS}.")
async def get_subject_mode(subject: SubjectPath, runtime: RuntimeDep) -> ModeOut:
    """Read the subject's mode, in effect and configured."""
    return ModeOut.of(await settings.mode_setting(runtime.registry, subject))


@router.put("/v1/subjects/{subject}/mode", operation_id="setSubjectMode", dependencies=WRITE,
            responses=_SETTING_ANSWERS, summary="Set a subject's mode",
            description="Overrides the global mode for this subject (READONLY: freeze it).")
async def set_subject_mode(subject: SubjectPath, body: ModeIn, *, runtime: RuntimeDep,
                           force: Force = False) -> ModeOut:
    """Set the subject's own mode."""
    return ModeOut.of(await settings.set_mode(runtime.registry, body.mode, subject=subject,
                                              force=force))


@router.delete("/v1/subjects/{subject}/mode", operation_id="deleteSubjectMode",
               dependencies=WRITE, responses=_SETTING_ANSWERS,
               summary="Remove a subject's mode",
               description="The subject follows the global mode again; `removed` is the mode "
                           "it had.")
async def delete_subject_mode(subject: SubjectPath, runtime: RuntimeDep) -> ModeRemovedOut:
    """Remove the subject's own mode."""
    return ModeRemovedOut.of(await settings.remove_mode(runtime.registry, subject))
