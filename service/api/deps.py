"""FastAPI dependencies: the app's `Runtime` and the API-key checks (as security schemes, so
the docs page offers an Authorize button)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request, Security
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from service.api.runtime import Runtime

__all__ = ["RuntimeDep", "get_runtime", "require_write", "require_read", "may_write"]

_bearer = HTTPBearer(auto_error=False, description="An API key from FLATAVRO_API_KEYS")
_header = APIKeyHeader(name="X-API-Key", auto_error=False,
                       description="An API key from FLATAVRO_API_KEYS")


async def get_runtime(request: Request) -> Runtime:
    """The runtime of the app serving the request."""
    runtime: Runtime = request.app.state.runtime
    return runtime


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
