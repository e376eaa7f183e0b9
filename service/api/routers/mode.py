"""``/v1/mode``: the registry's global mode (a subject's own is under
``/v1/subjects/{subject}/mode``)."""

from __future__ import annotations

from fastapi import APIRouter

from service.api.body_route import CheckedBodyRoute
from service.api.deps import READ, WRITE, RuntimeDep
from service.api.docs.route_docs import problem
from service.api.models import ModeIn, ModeOut
from service.api.routers.params import Force
from service.usecases import levels_and_modes as settings

router = APIRouter(route_class=CheckedBodyRoute,
                   tags=["registry-admin"], responses=problem(401, 502, 503))


@router.get("/v1/mode", operation_id="getGlobalMode", dependencies=READ,
            summary="The global mode",
            description="READWRITE, READONLY (writes refused) or IMPORT; `configured` is null "
                        "until one is set (the default is READWRITE).")
async def get_global_mode(runtime: RuntimeDep) -> ModeOut:
    """Read the global mode, in effect and configured."""
    return ModeOut.of(await settings.mode_setting(runtime.registry))


@router.put("/v1/mode", operation_id="setGlobalMode", dependencies=WRITE,
            summary="Set the global mode",
            description="IMPORT needs an empty registry, or `force=true`.")
async def set_global_mode(body: ModeIn, runtime: RuntimeDep, *,
                          force: Force = False) -> ModeOut:
    """Set the global mode."""
    return ModeOut.of(await settings.set_mode(runtime.registry, body.mode, force=force))
