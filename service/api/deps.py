"""FastAPI dependencies: the app's `Runtime` and the API-key checks (as security schemes, so
the docs page offers an Authorize button)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Request, Security
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from service.api.runtime import Runtime

__all__ = ["RuntimeDep", "get_runtime", "require_write", "require_read", "may_write",
           "check_access", "access_level", "runtime_of"]

_bearer = HTTPBearer(auto_error=False, description="An API key from FLATAVRO_API_KEYS")
_header = APIKeyHeader(name="X-API-Key", auto_error=False,
                       description="An API key from FLATAVRO_API_KEYS")


def runtime_of(request: Request) -> Runtime:
    """The runtime of the app serving the request."""
    runtime: Runtime = request.app.state.runtime
    return runtime


async def get_runtime(request: Request) -> Runtime:
    """The runtime of the app serving the request (as a dependency)."""
    return runtime_of(request)


RuntimeDep = Annotated[Runtime, Depends(get_runtime)]


async def require_write(runtime: RuntimeDep,
                  bearer: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)],
                  api_key: Annotated[str | None, Security(_header)]) -> None:
    """Writes need a key when keys are configured."""
    runtime.keys.check(f"Bearer {bearer.credentials}" if bearer else None, api_key)


async def require_read(runtime: RuntimeDep,
                 bearer: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)],
                 api_key: Annotated[str | None, Security(_header)]) -> None:
    """Reads need a key only with ``FLATAVRO_PROTECT_READS``."""
    if runtime.keys.protect_reads:
        runtime.keys.check(f"Bearer {bearer.credentials}" if bearer else None, api_key)


async def may_write(runtime: RuntimeDep,
                    bearer: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)],
                    api_key: Annotated[str | None, Security(_header)]) -> bool:
    """Whether the request may write (for bodies that ask for a write, like register=true)."""
    return runtime.keys.allows(f"Bearer {bearer.credentials}" if bearer else None, api_key)


def access_level(calls: set[Any]) -> str | None:
    """``write``, ``read`` or None: the key check an operation whose dependencies call
    `calls` makes (`require_write`, `require_read`, or neither)."""
    if require_write in calls:
        return "write"
    return "read" if require_read in calls else None


async def check_access(request: Request, level: str | None) -> None:
    """The check `require_write` (``write``) or `require_read` (``read``) makes, on the same
    headers read the same way, for routes served without FastAPI's dependency solving
    (`service.api.body_route.served_by`)."""
    if level is None:
        return
    runtime = runtime_of(request)
    if level == "write" or runtime.keys.protect_reads:
        bearer, api_key = await _bearer(request), await _header(request)
        runtime.keys.check(f"Bearer {bearer.credentials}" if bearer else None, api_key)
