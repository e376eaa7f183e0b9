"""`CheckedBodyRoute`: every request body goes through one gate before FastAPI sees it.

The Content-Type must be one the operation documents (``application/json``, ``+json`` types
and a charset included; ``application/octet-stream`` where the operation takes raw bytes), else
415. Bodies FastAPI validates into a model are parsed first by the one JSON parser
(`service.codec.body.parse_json_body`), so a syntax error says what and where on every
endpoint, the same way; raw-body endpoints parse with it themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.routing import APIRoute

from service.codec.body import parse_json_body
from service.codec.errors import UnsupportedMediaTypeError

__all__ = ["CheckedBodyRoute", "media_type"]

_JSON = "application/json"
_WITH_BODY = frozenset({"POST", "PUT", "PATCH"})


class CheckedBodyRoute(APIRoute):
    """An `APIRoute` that checks the Content-Type (and JSON syntax) of request bodies."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
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
