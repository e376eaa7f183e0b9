"""`CheckedBodyRoute`: every request body goes through one gate before FastAPI sees it.

The Content-Type must be one the operation documents (``application/json``, ``+json`` types
and a charset included; ``application/octet-stream`` where the operation takes raw bytes), else
415. Bodies FastAPI validates into a model are parsed first by the one JSON parser
(`service.codec.body.parse_json_body`), so a syntax error says what and where on every
endpoint, the same way; raw-body endpoints parse with it themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from fastapi import Request, Response
from fastapi.routing import APIRoute

from service.api.deps import (
    API_KEY_HEADER,
    BEARER,
    access_level,
    check_access,
    get_keys,
    get_runtime,
    require_read,
    require_write,
)
from service.api.errors import UnsupportedMediaTypeError
from service.codec.body import parse_json_body

__all__ = ["CheckedBodyRoute", "media_type", "served_by"]

Handler = Callable[[Request], Coroutine[Any, Any, Response]]
Endpoint = TypeVar("Endpoint", bound=Callable[..., Coroutine[Any, Any, Response]])

_SERVABLE = frozenset({get_runtime, get_keys, require_read, require_write, BEARER,
                       API_KEY_HEADER})
"""What a `served_by` operation may depend on: the runtime and the API-key checks, which the
route makes itself (`check_access`)."""
_SERVED_BY = "served_by"
"""The endpoint attribute naming its `served_by` handler."""


def served_by(handler: Handler) -> Callable[[Endpoint], Endpoint]:
    """Serve the decorated endpoint's requests with `handler(request)`.

    FastAPI documents the operation from the endpoint's signature as usual (parameters,
    security, body), but requests skip its per-request dependency solving: the route checks
    the Content-Type and the API key itself (the same checks, `check_access`) and calls
    `handler`, which reads path parameters from ``request.path_params``. For the hot codec
    paths: FastAPI's solving of the key-check dependencies was ~50 of the ~190 µs a
    single-record encode took in-process (bench_http's latency line). The endpoint only
    documents; it must depend on nothing but the runtime and the key checks, and take path
    parameters as plain strings (checked when the route is built).
    """
    def mark(endpoint: Endpoint) -> Endpoint:
        setattr(endpoint, _SERVED_BY, handler)
        return endpoint

    return mark


_JSON = "application/json"
_WITH_BODY = frozenset({"POST", "PUT", "PATCH"})


class CheckedBodyRoute(APIRoute):
    """An `APIRoute` that checks the Content-Type (and JSON syntax) of request bodies."""

    def get_route_handler(self) -> Handler:
        """The handler FastAPI builds (or the `served_by` one), behind the body checks."""
        served = getattr(self.endpoint, _SERVED_BY, None)
        handler = super().get_route_handler() if served is None else self._served(served)
        documented = (self.openapi_extra or {}).get("requestBody", {}).get("content", {})
        accepted = [_JSON, *(m for m in documented if m != _JSON)]
        modelled = self.body_field is not None

        async def checked(request: Request) -> Response:
            if request.method in _WITH_BODY:
                media = media_type(request)
                if not _accepts(accepted, media):
                    raise UnsupportedMediaTypeError(
                        f"Content-Type {media or '(none)'} is not accepted here; send "
                        + " or ".join(accepted), content_type=media or None, accepted=accepted)
                if modelled:
                    parse_json_body(await request.body())
            return await handler(request)

        return checked

    def _served(self, served: Handler) -> Handler:
        calls = _calls(self.dependant.dependencies)
        params = self.dependant
        if not calls <= _SERVABLE or params.query_params or params.header_params \
                or params.cookie_params or params.body_params \
                or any(p.field_info.annotation is not str for p in params.path_params):
            raise TypeError(f"{self.path}: served_by needs an endpoint depending only on the "
                            "runtime and the key checks, with str path parameters")
        level = access_level(calls)

        async def serve(request: Request) -> Response:
            await check_access(request, level)
            return await served(request)

        return serve


def _calls(dependencies: list[Any]) -> set[Any]:
    found: set[Any] = set()
    for sub in dependencies:
        found |= {sub.call} | _calls(sub.dependencies)
    return found


def media_type(request: Request) -> str:
    """The request's media type without parameters, lower-cased (RFC 9110 §8.3.1: media
    types are case-insensitive); empty when there is no Content-Type."""
    return request.headers.get("content-type", "").split(";", 1)[0].strip().lower()


def _accepts(accepted: list[str], media: str) -> bool:
    if media in accepted:
        return True
    suffixed = media.startswith("application/") and media.endswith("+json") \
        and len(media) > len("application/+json")  # a subtype before the suffix
    return _JSON in accepted and suffixed
