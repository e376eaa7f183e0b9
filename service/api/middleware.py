"""Pure-ASGI middleware: request id, access log and metrics; the request body size limit."""

from __future__ import annotations

import logging
import time
import uuid
from typing import Any, Protocol

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from typing_extensions import override

from service.api.errors import BodyTooLargeError
from service.api.logs import request_id
from service.api.problems import problem_response

__all__ = ["AsgiCallable", "RequestObserver", "RequestContext", "BodyLimit"]

access_log = logging.getLogger("flatavro.access")


class AsgiCallable:
    """The service's own ASGI parts: the server calls one with ``(scope, receive, send)``.

    The signature is the ASGI specification's, so subclasses implement it with
    ``@override`` (the type checker then holds them to it).
    """

    __call__: ASGIApp


class RequestObserver(Protocol):
    """What counts finished requests (`service.api.metrics.Metrics` and the app's proxy)."""

    def observe_request(self, *, method: str, route: str, status: int, seconds: float
                        ) -> None:
        """Count one request."""


class RequestContext(AsgiCallable):
    """Gives each request an id (``X-Request-ID``, echoed back), logs one access line and
    counts it under its route template (not the raw path: topics would explode cardinality)."""

    def __init__(self, app: ASGIApp, *, metrics: RequestObserver) -> None:
        self.app, self.metrics = app, metrics

    @override
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve the request with its id, then count and log it."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = dict(scope["headers"]).get(b"x-request-id", b"").decode("latin-1")
        rid = given[:64] if given.isprintable() and given else uuid.uuid4().hex
        token = request_id.set(rid)
        start, status = time.perf_counter(), 500

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", []),
                                      (b"x-request-id", rid.encode("latin-1"))]
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            seconds = time.perf_counter() - start
            route = _route_of(scope)
            self.metrics.observe_request(method=scope["method"], route=route, status=status,
                                         seconds=seconds)
            access_log.info("request", extra={
                "method": scope["method"], "path": scope["path"], "route": route,
                "status": status, "duration_ms": round(seconds * 1000, 3)})
            request_id.reset(token)


def _route_of(scope: Scope) -> str:
    route: Any = scope.get("route")
    if route is not None and hasattr(route, "path"):
        return str(route.path)
    return scope.get("root_path") or "unmatched"  # a mount: /registry, /docs/assets


class BodyLimit(AsgiCallable):
    """Refuses bodies over `max_bytes` with 413 problem+json: by ``Content-Length`` up front,
    and for chunked bodies by reading them here, up to the limit and no further; the app then
    gets the whole body at once, so no handler ever sees part of one."""

    def __init__(self, app: ASGIApp, *, max_bytes: int) -> None:
        self.app, self.max_bytes = app, max_bytes

    @override
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuse the request if its body is over the limit, else pass it on whole."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.max_bytes:
            await self._refuse(scope, send)
            return
        chunks: list[bytes] = []
        seen = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return  # the client left: nobody to answer
            chunk = message.get("body", b"")
            seen += len(chunk)
            if seen > self.max_bytes:
                await self._refuse(scope, send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        await self.app(scope, _replay(b"".join(chunks), receive), send)

    async def _refuse(self, scope: Scope, send: Send) -> None:
        error = BodyTooLargeError(f"the request body is over the limit of {self.max_bytes} "
                                  "bytes (FLATAVRO_MAX_BODY_BYTES)", limit=self.max_bytes)
        response = problem_response(Request(scope), error, retry_after=0)  # like every error
        await send({"type": "http.response.start", "status": response.status_code,
                    "headers": response.raw_headers})
        await send({"type": "http.response.body", "body": response.body})


def _replay(body: bytes, receive: Receive) -> Receive:
    """A `receive` that hands over the body read already, then waits on the real one
    (which reports the client's disconnect)."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay
