"""`create_app(settings)`: the FastAPI application factory (``uvicorn --factory``).

Nothing happens at import time: the registry is opened in the app's lifespan, so building the
app (for the OpenAPI document, say) touches no file and no network.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from service.api import logs, problems
from service.api.auth import RegistryGuard
from service.api.docs import install_docs
from service.api.hints import hint_of
from service.api.middleware import BodyLimit, RequestContext
from service.api.routers import codec, convert, ops, registry_config, schemas, subjects
from service.api.runtime import Runtime
from service.api.settings import Settings
from service.api.spec import AuthDoc
from service.codec.errors import (
    InvalidMessagesError,
    InvalidRecordsError,
    UnconvertibleMessagesError,
)
from service.codec.offload import offload_to_threads
from service.core.errors import ServiceError
from service.registry.embedded.rest import create_registry_app

__all__ = ["create_app"]

log = logging.getLogger("flatavro.service")
DESCRIPTION = """Flat-avro schemas for TiDB/TiCDC change data, exactly as TiCDC's `avro`
protocol builds them; registration with compatibility checks explained column by column;
batch encode/decode of rows in the Confluent wire format.

Errors are `application/problem+json` with a stable `code`. Writes need an API key when
`FLATAVRO_API_KEYS` is set (Authorize: a Bearer token or `X-API-Key`)."""


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the service app; `settings` default to the ``FLATAVRO_*`` environment."""
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        logs.configure(settings.log_level)
        try:
            runtime = Runtime.start(settings)
        except ServiceError as exc:  # an unusable registry path, say: one log line, below
            app.state.startup_error = exc
            raise
        app.state.runtime = runtime
        offload_to_threads(settings.workers == 1)  # see service/codec/offload.py
        if runtime.embedded is not None:
            app.state.registry_app = RegistryGuard(
                create_registry_app(runtime.embedded, max_body_bytes=settings.max_body_bytes),
                runtime.keys)
        log.info("starting", extra={"config": settings.redacted(),
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

    app = FastAPI(title="flatavro", version="0.1.0", description=DESCRIPTION,
                  lifespan=lifespan, docs_url=None, redoc_url=None,
                  openapi_tags=None, separate_input_output_schemas=False)
    for router in (schemas.router, codec.router, convert.router, subjects.router,
                   registry_config.router, ops.router):
        app.include_router(router)
    problems.install(app, retry_after=settings.retry_after_seconds, on_error=_count_error)
    install_docs(app, AuthDoc(keys=bool(settings.api_keys),
                              protect_reads=settings.protect_reads),
                 registry=settings.embedded)
    if settings.embedded:
        app.mount("/registry", _embedded_registry, name="registry")
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes)
    app.add_middleware(RequestContext, metrics=_LazyMetrics(app))
    app.add_middleware(_OneLineStartupFailure, state=app.state)
    return app


class _OneLineStartupFailure:
    """Puts a start-up `ServiceError` in uvicorn's "startup failed" log as its one line (code,
    message, hint) instead of the traceback Starlette sends (``uvicorn --factory``)."""

    def __init__(self, app: ASGIApp, state: Any) -> None:
        self.app, self.state = app, state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def one_line(message: Message) -> None:
            error = getattr(self.state, "startup_error", None)
            if message["type"] == "lifespan.startup.failed" and error is not None:
                hint = hint_of(error)
                line = f"[{error.code}] {error.message}" + (f"; {hint}" if hint else "")
                message = {**message, "message": line}
            await send(message)

        await self.app(scope, receive, one_line if scope["type"] == "lifespan" else send)


async def _embedded_registry(scope: Scope, receive: Receive, send: Send) -> None:
    """The embedded registry's Confluent REST API (built in the lifespan)."""
    await scope["app"].state.registry_app(scope, receive, send)


def _count_error(request: Request, error: ServiceError) -> None:
    direction = {InvalidRecordsError: "encode", InvalidMessagesError: "decode",
                 UnconvertibleMessagesError: "convert"}.get(
        type(error))
    if direction:
        request.app.state.runtime.metrics.record_errors.labels(direction).inc()


class _LazyMetrics:
    """The running app's metrics (the runtime exists only once the lifespan started)."""

    def __init__(self, app: FastAPI) -> None:
        self._app = app

    def observe_request(self, method: str, route: str, status: int, seconds: float) -> None:
        runtime = getattr(self._app.state, "runtime", None)
        if runtime is not None:
            runtime.metrics.observe_request(method, route, status, seconds)
