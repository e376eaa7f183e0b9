"""FastAPI dependencies: the app's `Runtime`, its metrics, and the API-key checks (as security
schemes, so the docs page offers an Authorize button)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Request, Security
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from service.api.auth import ApiKeys
from service.api.metrics import Metrics
from service.usecases.runtime import Runtime

__all__ = ["RuntimeDep", "MetricsDep", "get_runtime", "get_metrics", "get_keys", "require_write",
           "require_read", "may_write", "check_access", "access_level", "runtime_of",
           "metrics_of", "BEARER", "API_KEY_HEADER", "READ", "WRITE"]

BEARER = HTTPBearer(auto_error=False, description="An API key from FLATAVRO_API_KEYS")
API_KEY_HEADER = APIKeyHeader(name="X-API-Key", auto_error=False,
                              description="An API key from FLATAVRO_API_KEYS")


def runtime_of(request: Request) -> Runtime:
    """The runtime of the app serving the request (registry, resolver, converter)."""
    runtime: Runtime = request.app.state.runtime
    return runtime


def metrics_of(request: Request) -> Metrics:
    """The metrics of the app serving the request."""
    metrics: Metrics = request.app.state.metrics
    return metrics


def _keys_of(request: Request) -> ApiKeys:
    keys: ApiKeys = request.app.state.keys
    return keys


async def get_runtime(request: Request) -> Runtime:
    """The runtime of the app serving the request (as a dependency)."""
    return runtime_of(request)


async def get_metrics(request: Request) -> Metrics:
    """The metrics of the app serving the request (as a dependency)."""
    return metrics_of(request)


async def get_keys(request: Request) -> ApiKeys:
    """The API keys of the app serving the request (as a dependency)."""
    return _keys_of(request)


async def get_claim_checks(request: Request) -> frozenset[str]:
    """The claim-check storages a convert request may name
    (``FLATAVRO_CLAIM_CHECK_STORAGE_URIS``)."""
    claim_checks: frozenset[str] = getattr(request.app.state, "claim_checks", frozenset())
    return claim_checks


RuntimeDep = Annotated[Runtime, Depends(get_runtime)]
ClaimChecksDep = Annotated[frozenset[str], Depends(get_claim_checks)]
MetricsDep = Annotated[Metrics, Depends(get_metrics)]
_KeysDep = Annotated[ApiKeys, Depends(get_keys)]
_Bearer = Annotated[HTTPAuthorizationCredentials | None, Security(BEARER)]
_ApiKey = Annotated[str | None, Security(API_KEY_HEADER)]


async def require_write(*, keys: _KeysDep, bearer: _Bearer, api_key: _ApiKey) -> None:
    """Writes need a key when keys are configured."""
    _enforce(keys, "write", bearer=bearer, api_key=api_key)


async def require_read(*, keys: _KeysDep, bearer: _Bearer, api_key: _ApiKey) -> None:
    """Reads need a key only with ``FLATAVRO_PROTECT_READS``."""
    _enforce(keys, "read", bearer=bearer, api_key=api_key)


async def may_write(*, keys: _KeysDep, bearer: _Bearer, api_key: _ApiKey) -> bool:
    """Whether the request may write (for bodies that ask for a write, like register=true)."""
    return keys.allows(_authorization(bearer), api_key)


def _authorization(bearer: HTTPAuthorizationCredentials | None) -> str | None:
    return f"Bearer {bearer.credentials}" if bearer else None


def _needs_key(keys: ApiKeys, level: str) -> bool:
    """Whether a ``write`` or ``read`` operation checks a key (reads: with protected reads)."""
    return level == "write" or keys.protect_reads


def _enforce(keys: ApiKeys, level: str, *, bearer: HTTPAuthorizationCredentials | None,
             api_key: str | None) -> None:
    if _needs_key(keys, level):
        keys.check(_authorization(bearer), api_key)


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
    keys = _keys_of(request)
    if level is not None and _needs_key(keys, level):  # headers read only when needed
        _enforce(keys, level, bearer=await BEARER(request),
                 api_key=await API_KEY_HEADER(request))


READ = [Depends(require_read)]
"""`dependencies=` of an operation that reads (a key only with protected reads)."""
WRITE = [Depends(require_write)]
"""`dependencies=` of an operation that writes (a key whenever keys are configured)."""
