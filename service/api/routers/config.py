"""``/v1/config``: the registry's global compatibility level (a subject's own is under
``/v1/subjects/{subject}/compatibility``)."""

from __future__ import annotations

from fastapi import APIRouter

from service.api.body_route import CheckedBodyRoute
from service.api.deps import READ, WRITE, RuntimeDep
from service.api.docs.route_docs import problem
from service.api.models import CompatibilityIn, CompatibilityOut
from service.registry.compatibility import CompatibilityLevel
from service.usecases import levels_and_modes as settings

router = APIRouter(route_class=CheckedBodyRoute,
                   tags=["registry-admin"], responses=problem(401, 502, 503))


@router.get("/v1/config", operation_id="getGlobalCompatibility", dependencies=READ,
            summary="The global compatibility level",
            description="The level subjects without their own apply; `configured` is null "
                        "until one is set (the default is BACKWARD).")
async def get_global_compatibility(runtime: RuntimeDep) -> CompatibilityOut:
    """Read the global level, in effect and configured."""
    return CompatibilityOut.of(await settings.compatibility_setting(runtime.registry))


@router.put("/v1/config", operation_id="setGlobalCompatibility", dependencies=WRITE,
            summary="Set the global compatibility level",
            description="One of the seven Confluent levels, for every subject without its "
                        "own.")
async def set_global_compatibility(body: CompatibilityIn,
                                   runtime: RuntimeDep) -> CompatibilityOut:
    """Set the global level."""
    return CompatibilityOut.of(await settings.set_compatibility(
        runtime.registry, CompatibilityLevel(body.compatibility)))
