"""`create_app(settings)`: the FastAPI application factory (``uvicorn --factory``).

Nothing happens at import time: the registry is opened in the app's lifespan, so building the
app (for the OpenAPI document, say) touches no file and no network.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from typing_extensions import override

from service.api import logs, problems
from service.api.auth import ApiKeys, RegistryGuard
from service.api.console import install_console
from service.api.docs.install import install_docs
from service.api.docs.spec import AuthDoc
from service.api.hints import hint_of
from service.api.metrics import Metrics
from service.api.middleware import AsgiCallable, BodyLimit, RequestContext
from service.api.routers import (
    config,
    convert,
    decode,
    mode,
    ops,
    schemas,
    subjects,
    tables,
    topics,
)
from service.api.settings import Settings
from service.codec.errors import (
    InvalidMessagesError,
    InvalidRecordsError,
    UnconvertibleMessagesError,
)
from service.codec.offload import offload_to_threads
from service.core.errors import ServiceError
from service.registry.embedded.rest import create_registry_app
from service.usecases.runtime import Runtime

__all__ = ["create_app"]

log = logging.getLogger("flatavro.service")
DESCRIPTION = """Flat-avro schemas for TiDB/TiCDC change data, exactly as TiCDC's `avro`
protocol builds them; registration with compatibility checks explained column by column;
batch encode/decode of rows in the Confluent wire format.

Errors are `application/problem+json` with a stable `code`. Writes need an API key when
`FLATAVRO_API_KEYS` is set (Authorize: a Bearer token or `X-API-Key`)."""
ROUTERS = (schemas.router, tables.router, topics.router, decode.router, convert.router,
           subjects.router, config.router, mode.router, ops.router)
_ERROR_DIRECTIONS: dict[type[ServiceError], str] = {
    InvalidRecordsError: "encode", InvalidMessagesError: "decode",
    UnconvertibleMessagesError: "convert"}
"""The refused batches `flatavro_record_errors` counts, by direction."""


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the service app; `settings` default to the ``FLATAVRO_*`` environment."""
    settings = settings or Settings()
    app = FastAPI(title="flatavro", version="0.1.0", description=DESCRIPTION,
                  lifespan=_lifespan(settings), docs_url=None, redoc_url=None, openapi_url=None,
                  openapi_tags=None, separate_input_output_schemas=False)
    for router in ROUTERS:
        app.include_router(router)
    problems.install(app, retry_after=settings.retry_after_seconds, on_error=_count_error)
    install_docs(app, AuthDoc(keys=bool(settings.api_keys),
                              protect_reads=settings.protect_reads),
                 registry=settings.embedded)
    install_console(app)
    if settings.embedded:
        app.mount("/registry", _EmbeddedRegistry(), name="registry")
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes)
    app.add_middleware(RequestContext, metrics=_LazyMetrics(app))
    app.add_middleware(_OneLineStartupFailure, state=app.state)
    return app


def _lifespan(settings: Settings) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """What the app opens on start-up and closes on shutdown: its `Runtime`, metrics and
    API keys (in ``app.state``) and, with the embedded registry, its guarded REST app."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        logs.configure(settings.log_level)
        metrics = Metrics()
        try:
            runtime = Runtime.start(settings, on_registry_call=metrics.count_registry_call,
                                    on_cache_hit=metrics.count_cache_hit)
        except ServiceError as exc:  # an unusable registry path, say: one log line, below
            app.state.startup_error = exc
            raise
        keys = ApiKeys((k.get_secret_value() for k in settings.api_keys),
                       protect_reads=settings.protect_reads)
        app.state.runtime, app.state.metrics, app.state.keys = runtime, metrics, keys
        app.state.claim_checks = frozenset(settings.claim_check_storage_uris)
        offload_to_threads(settings.workers == 1)  # see service/codec/offload.py
        if runtime.embedded is not None:
            app.state.registry_app = RegistryGuard(
                create_registry_app(runtime.embedded, max_body_bytes=settings.max_body_bytes),
                keys)
        log.info("starting", extra={"docs": f"http://{settings.host}:{settings.port}/docs",
                                    "config": settings.redacted(),
                                    "registry": "embedded" if settings.embedded else "remote"})
        # The start-up heap (FastAPI, pydantic, compiled schemas' modules) never dies: keep it
        # out of the collector's full passes, which otherwise stall requests for tens of ms.
        gc.collect()
        gc.freeze()
        try:
            yield
        finally:
            offload_to_threads(True)
            await runtime.stop()
            log.info("stopped")

    return lifespan


class _OneLineStartupFailure(AsgiCallable):
    """Puts a start-up `ServiceError` in uvicorn's "startup failed" log as its one line (code,
    message, hint) instead of the traceback Starlette sends (``uvicorn --factory``)."""

    def __init__(self, app: ASGIApp, state: Any) -> None:
        self.app, self.state = app, state

    @override
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve, rewriting the lifespan's start-up failure message."""
        async def one_line(message: Message) -> None:
            error = getattr(self.state, "startup_error", None)
            if message["type"] == "lifespan.startup.failed" and error is not None:
                hint = hint_of(error)
                line = f"[{error.code}] {error.message}" + (f"; {hint}" if hint else "")
                message = {**message, "message": line}
            await send(message)

        await self.app(scope, receive, one_line if scope["type"] == "lifespan" else send)


class _EmbeddedRegistry(AsgiCallable):
    """The embedded registry's Confluent REST API (built in the lifespan)."""

    @override
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve the request with the registry app the running app holds."""
        await scope["app"].state.registry_app(scope, receive, send)


def _count_error(request: Request, error: ServiceError) -> None:
    direction = _ERROR_DIRECTIONS.get(type(error))
    if direction:
        request.app.state.metrics.record_errors.labels(direction).inc()


class _LazyMetrics:
    """The running app's metrics (they exist only once the lifespan started)."""

    def __init__(self, app: FastAPI) -> None:
        self._app = app

    def observe_request(self, *, method: str, route: str, status: int, seconds: float
                        ) -> None:
        """Count one finished request, once the app runs."""
        metrics = getattr(self._app.state, "metrics", None)
        if metrics is not None:
            metrics.observe_request(method=method, route=route, status=status,
                                    seconds=seconds)
