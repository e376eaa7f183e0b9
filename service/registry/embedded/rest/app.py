"""The embedded registry's REST app: Confluent's routes over `Handlers`, and every failure
turned into Confluent's error body with the HTTP status of its code's family."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.convertors import PathConvertor, register_url_convertor
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Match, Route

from service.core.errors import ServiceError
from service.registry.embedded.registry import EmbeddedRegistry
from service.registry.embedded.rest.answers import error_answer, json_answer
from service.registry.embedded.rest.handlers import Handlers
from service.registry.embedded.rest.parsing import BadRequest
from service.registry.embedded.store import RegistryStoreError
from service.registry.errors import RegistryError, RegistryUnavailableError

__all__ = ["create_registry_app"]


class _SubjectConvertor(PathConvertor):
    """A subject in a path: anything, control characters included, so that a subject with a
    newline reaches the handler and is refused as invalid (42208) instead of matching no
    route (Starlette's ``path`` stops at a newline)."""

    regex = "(?s:.*)"


register_url_convertor("subject", _SubjectConvertor())

log = logging.getLogger("flatavro.registry")
Handler = Callable[[Request], Awaitable[Any]]


def create_registry_app(registry: EmbeddedRegistry, *, max_body_bytes: int = 1 << 20
                        ) -> Starlette:
    """Build the ASGI app serving `registry` with Confluent's REST API."""
    h = Handlers(registry, max_body_bytes)
    subject, version = "/subjects/{subject:subject}", "/versions/{version}"
    compatibility = "/compatibility" + subject + "/versions"
    table: list[tuple[str, Handler, list[str]]] = [
        ("/", h.root, ["GET"]),
        ("/schemas", h.list_schemas, ["GET"]),
        ("/schemas/types", h.schema_types, ["GET"]),
        ("/schemas/ids/{id}", h.schema_by_id, ["GET"]),
        ("/schemas/ids/{id}/schema", h.schema_text_by_id, ["GET"]),
        ("/schemas/ids/{id}/subjects", h.id_subjects, ["GET"]),
        ("/schemas/ids/{id}/versions", h.id_versions, ["GET"]),
        ("/subjects", h.list_subjects, ["GET"]),
        (subject + "/versions", h.list_versions, ["GET"]),
        (subject + version + "/schema", h.get_version_schema, ["GET"]),
        (subject + version + "/referencedby", h.referenced_by, ["GET"]),
        (subject + version, h.get_version, ["GET"]),
        (subject + version, h.delete_version, ["DELETE"]),
        (subject + "/versions", h.register, ["POST"]),
        (subject, h.lookup, ["POST"]),
        (subject, h.delete_subject, ["DELETE"]),
        (compatibility + "/{version}", h.compatibility, ["POST"]),
        (compatibility, h.compatibility, ["POST"]),
        ("/config", h.config, ["GET", "PUT", "DELETE"]),
        ("/config/{subject:subject}", h.config, ["GET", "PUT", "DELETE"]),
        ("/mode", h.mode, ["GET", "PUT"]),
        ("/mode/{subject:subject}", h.mode, ["GET", "PUT", "DELETE"]),
    ]
    routes = [Route(path, _endpoint(handler), methods=methods)
              for path, handler, methods in table]
    return Starlette(routes=routes, exception_handlers={HTTPException: _http_error})


def _endpoint(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
    """The route's endpoint: the handler's result as JSON, its failure as Confluent's error."""
    async def endpoint(request: Request) -> Response:
        try:
            result = await handler(request)
            return result if isinstance(result, Response) else json_answer(result)
        except BadRequest as exc:
            return error_answer(exc.message, status=exc.status, code=exc.code)
        except RegistryUnavailableError as exc:  # another worker held the file's write lock
            answer = error_answer(f"Operation timed out: {exc.message}", status=500, code=50002)
            answer.headers["Retry-After"] = str(exc.retry_after or 1)
            return answer
        except (RegistryStoreError, sqlite3.Error) as exc:  # not the caller's fault: a 500
            log.exception("registry store failure", extra={"path": request.url.path})
            return error_answer(f"Error in the backend data store: {exc}", status=500,
                                code=50001)
        except RegistryError as exc:
            code = exc.registry_code
            return error_answer(exc.message, status=_status_of(code), code=code)
        except ServiceError as exc:  # anything else the caller sent wrong
            return error_answer(exc.message, status=422,
                                code=42201 if exc.code == "invalid_schema" else 422)

    return endpoint


def _status_of(code: int) -> int:
    """The HTTP status of a Confluent error code: its first three digits."""
    return code if code < 1000 else int(str(code)[:3])


async def _http_error(request: Request, exc: Exception) -> Response:
    """No route or method: Confluent's error body, with ``Allow`` on a 405."""
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    phrase = {404: "HTTP 404 Not Found", 405: "HTTP 405 Method Not Allowed"}.get(
        status, f"HTTP {status}")
    response = error_answer(phrase, status=status, code=status)
    allow = ", ".join(sorted({m for route in request.app.routes  # every route at the path
                              if route.matches(request.scope)[0] != Match.NONE
                              for m in getattr(route, "methods", None) or ()}))
    if status == 405 and allow:
        response.headers["Allow"] = allow  # RFC 9110 §15.5.6
    return response
