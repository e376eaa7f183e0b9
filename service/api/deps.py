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
    _enforce(runtime, "write", bearer, api_key)


async def require_read(runtime: RuntimeDep,
                 bearer: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)],
                 api_key: Annotated[str | None, Security(_header)]) -> None:
    """Reads need a key only with ``FLATAVRO_PROTECT_READS``."""
    _enforce(runtime, "read", bearer, api_key)


async def may_write(runtime: RuntimeDep,
                    bearer: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)],
                    api_key: Annotated[str | None, Security(_header)]) -> bool:
    """Whether the request may write (for bodies that ask for a write, like register=true)."""
    return runtime.keys.allows(_authorization(bearer), api_key)


def _authorization(bearer: HTTPAuthorizationCredentials | None) -> str | None:
    return f"Bearer {bearer.credentials}" if bearer else None


def _needs_key(runtime: Runtime, level: str) -> bool:
    """Whether a ``write`` or ``read`` operation checks a key (reads: with protected reads)."""
    return level == "write" or runtime.keys.protect_reads


def _enforce(runtime: Runtime, level: str, bearer: HTTPAuthorizationCredentials | None,
             api_key: str | None) -> None:
    if _needs_key(runtime, level):
        runtime.keys.check(_authorization(bearer), api_key)


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
    runtime = runtime_of(request)
    if level is not None and _needs_key(runtime, level):  # headers read only when needed
        _enforce(runtime, level, await _bearer(request), await _header(request))
