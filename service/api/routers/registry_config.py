"""Compatibility levels and modes through the service's own auth: ``/v1/config``,
``/v1/mode`` and their per-subject overrides (any registry)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query

from service.api import registry_settings as settings
from service.api.admin_models import CompatibilityRemovedOut, ModeIn, ModeOut, ModeRemovedOut
from service.api.body_route import CheckedBodyRoute
from service.api.deps import RuntimeDep, require_read, require_write
from service.api.models import CompatibilityIn, CompatibilityOut, problem
from service.registry.compatibility import CompatibilityLevel

router = APIRouter(route_class=CheckedBodyRoute,
                   tags=["registry-admin"], responses=problem(401, 502, 503))
_READ, _WRITE = [Depends(require_read)], [Depends(require_write)]
SubjectPath = Annotated[str, Path(examples=["tidb_shop_orders-value"])]
Force = Annotated[bool, Query(description="Set IMPORT although subjects exist")]
_INHERITS = "null `configured`: none set, the global one applies"


@router.get("/v1/config", operation_id="getGlobalCompatibility", dependencies=_READ,
            summary="The global compatibility level",
            description="The level subjects without their own apply; `configured` is null "
                        "until one is set (the default is BACKWARD).")
async def get_global_compatibility(runtime: RuntimeDep) -> CompatibilityOut:
    return await settings.compatibility_out(runtime.registry)


@router.put("/v1/config", operation_id="setGlobalCompatibility", dependencies=_WRITE,
            summary="Set the global compatibility level",
            description="One of the seven Confluent levels, for every subject without its "
                        "own.")
async def set_global_compatibility(body: CompatibilityIn,
                                   runtime: RuntimeDep) -> CompatibilityOut:
    return await settings.set_compatibility(
        runtime.registry, CompatibilityLevel(body.compatibility))


@router.get("/v1/subjects/{subject}/compatibility", operation_id="getCompatibility",
            dependencies=_READ, summary="A subject's compatibility level",
            description=f"The level in effect (the subject's own, else the global one); "
                        f"{_INHERITS}.",
            responses=problem(404))
async def get_compatibility(subject: SubjectPath, runtime: RuntimeDep) -> CompatibilityOut:
    return await settings.compatibility_out(runtime.registry, subject)


@router.put("/v1/subjects/{subject}/compatibility", operation_id="setCompatibility",
            dependencies=_WRITE, summary="Set a subject's compatibility level",
            description="One of the seven Confluent levels, overriding the global one.",
            responses=problem(404))
async def set_compatibility(subject: SubjectPath, body: CompatibilityIn,
                            runtime: RuntimeDep) -> CompatibilityOut:
    return await settings.set_compatibility(
        runtime.registry, CompatibilityLevel(body.compatibility), subject)


@router.delete("/v1/subjects/{subject}/compatibility", operation_id="deleteCompatibility",
               dependencies=_WRITE, summary="Remove a subject's compatibility level",
               description="The subject follows the global level again; `removed` is the "
                           "level it had. 404 `subject_config_not_found` when it had none.",
               responses=problem(404))
async def delete_compatibility(subject: SubjectPath,
                               runtime: RuntimeDep) -> CompatibilityRemovedOut:
    return await settings.remove_compatibility(runtime.registry, subject)


@router.get("/v1/mode", operation_id="getGlobalMode", dependencies=_READ,
            summary="The global mode",
            description="READWRITE, READONLY (writes refused) or IMPORT; `configured` is null "
                        "until one is set (the default is READWRITE).")
async def get_global_mode(runtime: RuntimeDep) -> ModeOut:
    return await settings.mode_out(runtime.registry)


@router.put("/v1/mode", operation_id="setGlobalMode", dependencies=_WRITE,
            summary="Set the global mode",
            description="IMPORT needs an empty registry, or `force=true`.")
async def set_global_mode(body: ModeIn, runtime: RuntimeDep, force: Force = False) -> ModeOut:
    return await settings.set_mode(runtime.registry, body.mode, force=force)


@router.get("/v1/subjects/{subject}/mode", operation_id="getSubjectMode", dependencies=_READ,
            summary="A subject's mode",
            description=f"The mode in effect (the subject's own, else the global one); "
                        f"{_INHERITS}.",
            responses=problem(404))
async def get_subject_mode(subject: SubjectPath, runtime: RuntimeDep) -> ModeOut:
    return await settings.mode_out(runtime.registry, subject)


@router.put("/v1/subjects/{subject}/mode", operation_id="setSubjectMode", dependencies=_WRITE,
            summary="Set a subject's mode",
            description="Overrides the global mode for this subject (READONLY: freeze it).",
            responses=problem(404))
async def set_subject_mode(subject: SubjectPath, body: ModeIn, runtime: RuntimeDep,
                           force: Force = False) -> ModeOut:
    return await settings.set_mode(runtime.registry, body.mode, subject, force=force)


@router.delete("/v1/subjects/{subject}/mode", operation_id="deleteSubjectMode",
               dependencies=_WRITE, summary="Remove a subject's mode",
               description="The subject follows the global mode again; `removed` is the mode "
                           "it had.", responses=problem(404))
async def delete_subject_mode(subject: SubjectPath, runtime: RuntimeDep) -> ModeRemovedOut:
    return await settings.remove_mode(runtime.registry, subject)
