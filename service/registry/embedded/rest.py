"""The embedded registry's Confluent REST API as an ASGI app (the service mounts it at /registry).

Handlers parse the request, call one `EmbeddedRegistry` method and render the result; every
failure becomes Confluent's error body ``{"error_code": N, "message": "..."}`` with the HTTP
status of the code's family, so Confluent's own clients see the errors they know.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import orjson
from starlette.applications import Starlette
from starlette.convertors import PathConvertor, register_url_convertor
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Match, Route

from service.core.errors import ServiceError
from service.registry.compatibility import CompatibilityVerdict
from service.registry.embedded.registry import EmbeddedRegistry, parse_level
from service.registry.embedded.store import RegistryStoreError
from service.registry.errors import (
    InvalidSchemaError,
    RegistryError,
    RegistryUnavailableError,
    SubjectConfigNotFoundError,
    SubjectModeNotFoundError,
    SubjectNotFoundError,
)
from service.registry.model import RegisteredSchema, RegistryMode

__all__ = ["create_registry_app", "CONTENT_TYPE"]


class _SubjectConvertor(PathConvertor):
    """A subject in a path: anything, control characters included, so that a subject with a
    newline reaches the handler and is refused as invalid (42208) instead of matching no
    route (Starlette's ``path`` stops at a newline)."""

    regex = "(?s:.*)"


register_url_convertor("subject", _SubjectConvertor())

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
log = logging.getLogger("flatavro.registry")
Handler = Callable[[Request], Awaitable[Any]]
T = TypeVar("T")


class _BadRequest(Exception):
    """A body that is not the JSON the endpoint expects (400 / 422 with Confluent's codes)."""

    def __init__(self, status: int, code: int, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def _json(payload: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(payload), status_code=status, media_type=CONTENT_TYPE)


def _error(status: int, code: int, message: str) -> Response:
    return _json({"error_code": code, "message": message}, status)


def _flag(request: Request, *names: str) -> bool:
    """A boolean query parameter (any case); the first of `names` present counts."""
    for name in names:
        if name in request.query_params:
            return request.query_params[name].strip().lower() == "true"
    return False


def _page(request: Request, items: list[Any]) -> list[Any]:
    """Confluent's pagination: skip `offset` items, then at most `limit` (negative: all)."""
    offset, limit = _int_param(request, "offset", 0), _int_param(request, "limit", -1)
    if offset < 0:
        raise _BadRequest(422, 422, f"query parameter offset must be >= 0 (got {offset})")
    return items[offset:] if limit < 0 else items[offset:offset + limit]


def _int_param(request: Request, name: str, default: int) -> int:
    text = request.query_params.get(name, "").strip()
    if not text:
        return default
    try:
        return int(text)
    except ValueError as exc:
        raise _BadRequest(422, 422, f"query parameter {name} must be an integer (got "
                          f"{text!r})") from exc


async def _body(request: Request, max_bytes: int) -> dict[str, Any]:
    raw = await request.body()
    if len(raw) > max_bytes:
        raise _BadRequest(413, 413, f"request body of {len(raw)} bytes exceeds {max_bytes}")
    try:
        body = orjson.loads(raw or b"{}")
    except orjson.JSONDecodeError as exc:
        raise _BadRequest(400, 400, f"Unrecognized JSON at position {exc.pos}: {exc.msg}") \
            from exc
    if not isinstance(body, dict):
        raise _BadRequest(400, 400, "request body must be a JSON object")
    return body


def _schema_of(body: dict[str, Any]) -> str:
    schema_type = body.get("schemaType", "AVRO")
    if schema_type not in (None, "AVRO"):
        raise _BadRequest(422, 42201, f"schemaType {schema_type!r} is not supported; only AVRO")
    schema = body.get("schema")
    if not isinstance(schema, str):
        raise _BadRequest(422, 42201, "Empty schema: the body needs \"schema\" as a JSON string")
    return schema


def _references(body: dict[str, Any]) -> list[dict[str, Any]]:
    references = body.get("references")
    if references is None:
        return []
    if not isinstance(references, list) or not all(isinstance(r, dict) for r in references):
        raise _BadRequest(422, 42201, "\"references\" must be a list of objects with name, "
                          "subject and version")
    return references


def _optional_int(body: dict[str, Any], name: str, unset: tuple[int, ...]) -> int | None:
    """A register body's ``id`` or ``version``: None when absent, null or one of `unset`
    (Confluent's defaults: id -1, version 0 or -1)."""
    value = body.get(name)
    if value is None or value in unset and not isinstance(value, bool):
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _BadRequest(422, 42201, f"\"{name}\" must be a non-negative integer (got "
                          f"{value!r})")
    return value


def _registered(found: RegisteredSchema) -> dict[str, Any]:
    return {"subject": found.subject, "version": found.version, "id": found.id,
            "schema": found.schema}


def _verdict(report: tuple[CompatibilityVerdict, list[str]], verbose: bool) -> dict[str, Any]:
    verdict, messages = report
    out: dict[str, Any] = {"is_compatible": verdict.compatible}
    if verbose:
        out["messages"] = messages
    return out


class _Handlers:
    """The REST handlers of one registry: each parses the request, calls one
    `EmbeddedRegistry` method and returns what is rendered (`_endpoint` maps errors)."""

    def __init__(self, registry: EmbeddedRegistry, max_body_bytes: int) -> None:
        self.registry, self.max_body_bytes = registry, max_body_bytes

    async def body(self, request: Request) -> dict[str, Any]:
        return await _body(request, self.max_body_bytes)

    async def root(self, request: Request) -> Any:
        return {}

    async def schema_types(self, request: Request) -> Any:
        return ["AVRO"]

    async def schema_by_id(self, request: Request) -> Any:
        found: dict[str, Any] = {"schema": await self.registry.schema_by_id(_int_id(request))}
        if _flag(request, "fetchMaxId"):  # the highest id handed out, deleted ones included
            found["maxId"] = await self.registry.max_id()
        return found

    async def schema_text_by_id(self, request: Request) -> Any:
        text = await self.registry.schema_by_id(_int_id(request))
        return Response(text.encode(), media_type=CONTENT_TYPE)

    async def list_schemas(self, request: Request) -> Any:
        found = await self.registry.schemas(prefix=request.query_params.get("subjectPrefix", ""),
                                       deleted=_flag(request, "deleted"),
                                       latest_only=_flag(request, "latestOnly"))
        return _page(request, [_registered(f) for f in found])

    async def id_subjects(self, request: Request) -> Any:
        uses = await self.registry.uses_of(_int_id(request), deleted=_flag(request, "deleted"))
        return _page(request, sorted({s for s, _ in uses}))

    async def id_versions(self, request: Request) -> Any:
        uses = await self.registry.uses_of(_int_id(request), deleted=_flag(request, "deleted"))
        return _page(request, [{"subject": s, "version": v} for s, v in uses])

    async def list_subjects(self, request: Request) -> Any:
        # confluent-kafka's Python client sends `deleted_only`; Confluent reads `deletedOnly`
        return _page(request, await self.registry.subjects(
            deleted=_flag(request, "deleted"),
            deleted_only=_flag(request, "deletedOnly", "deleted_only"),
            prefix=request.query_params.get("subjectPrefix", "")))

    async def list_versions(self, request: Request) -> Any:
        return _page(request, await self.registry.versions(
            _subject(request), deleted=_flag(request, "deleted"),
            deleted_only=_flag(request, "deletedOnly", "deleted_only"),
            deleted_as_negative=_flag(request, "deletedAsNegative")))

    async def referenced_by(self, request: Request) -> Any:
        return _page(request, await self.registry.referenced_by(
            _subject(request), request.path_params["version"], deleted=_flag(request, "deleted")))

    async def register(self, request: Request) -> Any:
        payload = await self.body(request)
        found = await self.registry.register(
            _subject(request), _schema_of(payload), normalize=_flag(request, "normalize"),
            references=_references(payload), schema_id=_optional_int(payload, "id", (-1,)),
            version=_optional_int(payload, "version", (0, -1)), force=_flag(request, "force"))
        return {"id": found.id, "version": found.version, "schema": found.schema}

    async def lookup(self, request: Request) -> Any:
        payload = await self.body(request)
        found = await self.registry.lookup(_subject(request), _schema_of(payload),
                                      deleted=_flag(request, "deleted"),
                                      normalize=_flag(request, "normalize"),
                                      references=_references(payload))
        return _registered(found)

    async def get_version(self, request: Request) -> Any:
        found = await self.registry.get_version(_subject(request), request.path_params["version"],
                                           deleted=_flag(request, "deleted"))
        return _registered(found)

    async def get_version_schema(self, request: Request) -> Any:
        found = await self.registry.get_version(_subject(request), request.path_params["version"],
                                           deleted=_flag(request, "deleted"))
        return Response(found.schema.encode(), media_type=CONTENT_TYPE)

    async def delete_subject(self, request: Request) -> Any:
        return await self.registry.delete_subject(_subject(request),
                                             permanent=_flag(request, "permanent"))

    async def delete_version(self, request: Request) -> Any:
        return await self.registry.delete_version(_subject(request), request.path_params["version"],
                                             permanent=_flag(request, "permanent"))

    async def compatibility(self, request: Request) -> Any:
        payload, verbose = await self.body(request), _flag(request, "verbose")
        try:
            report = await self.registry.compatibility_report(
                _subject(request), _schema_of(payload), request.path_params.get("version"),
                normalize=_flag(request, "normalize"), references=_references(payload))
        except InvalidSchemaError as exc:
            if not verbose:
                raise
            # Confluent: a verbose check of an invalid schema answers 200 with the reason
            report = (CompatibilityVerdict(False), [exc.message])
        return _verdict(report, verbose)

    async def config(self, request: Request) -> Any:
        name = request.path_params.get("subject")
        if request.method == "PUT":
            payload = await self.body(request)
            level = parse_level(str(payload.get("compatibility")
                                    or payload.get("compatibilityLevel") or ""))
            return {"compatibility": (await self.registry.set_compatibility(level, name)).value}
        if request.method == "DELETE":
            removed = await _removed_setting(self.registry.delete_compatibility(name), name)
            return {"compatibilityLevel": removed.value}
        level = await self.registry.get_compatibility(
            name, default_to_global=_flag(request, "defaultToGlobal"))
        return {"compatibilityLevel": level.value}

    async def mode(self, request: Request) -> Any:
        name = request.path_params.get("subject")
        if request.method == "PUT":
            wanted = str((await self.body(request)).get("mode", "")).upper()
            if wanted not in RegistryMode.__members__:
                raise _BadRequest(422, 42204, f"Invalid mode {wanted!r}; valid: "
                                  "READWRITE, READONLY, IMPORT")
            return {"mode": (await self.registry.set_mode(
                RegistryMode(wanted), name, force=_flag(request, "force"))).value}
        if request.method == "DELETE":
            removed = await _removed_setting(self.registry.delete_mode(str(name)), name)
            return {"mode": removed.value}
        if name is not None and not _flag(request, "defaultToGlobal"):
            configured = await self.registry.configured_mode(name)
            if configured is None:
                raise SubjectModeNotFoundError(
                    f"Subject '{name}' does not have subject-level mode configured")
            return {"mode": configured.value}
        return {"mode": (await self.registry.get_mode(name)).value}


def create_registry_app(registry: EmbeddedRegistry, *, max_body_bytes: int = 1 << 20
                        ) -> Starlette:
    """Build the ASGI app serving `registry` with Confluent's REST API."""
    h = _Handlers(registry, max_body_bytes)

    def route(path: str, handler: Handler, methods: list[str]) -> Route:
        return Route(path, _endpoint(handler), methods=methods)

    routes = [
        route("/", h.root, ["GET"]),
        route("/schemas", h.list_schemas, ["GET"]),
        route("/schemas/types", h.schema_types, ["GET"]),
        route("/schemas/ids/{id}", h.schema_by_id, ["GET"]),
        route("/schemas/ids/{id}/schema", h.schema_text_by_id, ["GET"]),
        route("/schemas/ids/{id}/subjects", h.id_subjects, ["GET"]),
        route("/schemas/ids/{id}/versions", h.id_versions, ["GET"]),
        route("/subjects", h.list_subjects, ["GET"]),
        route("/subjects/{subject:subject}/versions", h.list_versions, ["GET"]),
        route("/subjects/{subject:subject}/versions/{version}/schema", h.get_version_schema,
              ["GET"]),
        route("/subjects/{subject:subject}/versions/{version}/referencedby", h.referenced_by,
              ["GET"]),
        route("/subjects/{subject:subject}/versions/{version}", h.get_version, ["GET"]),
        route("/subjects/{subject:subject}/versions/{version}", h.delete_version, ["DELETE"]),
        route("/subjects/{subject:subject}/versions", h.register, ["POST"]),
        route("/subjects/{subject:subject}", h.lookup, ["POST"]),
        route("/subjects/{subject:subject}", h.delete_subject, ["DELETE"]),
        route("/compatibility/subjects/{subject:subject}/versions/{version}", h.compatibility,
              ["POST"]),
        route("/compatibility/subjects/{subject:subject}/versions", h.compatibility, ["POST"]),
        route("/config", h.config, ["GET", "PUT", "DELETE"]),
        route("/config/{subject:subject}", h.config, ["GET", "PUT", "DELETE"]),
        route("/mode", h.mode, ["GET", "PUT"]),
        route("/mode/{subject:subject}", h.mode, ["GET", "PUT", "DELETE"]),
    ]
    return Starlette(routes=routes, exception_handlers={HTTPException: _http_error})


def _subject(request: Request) -> str:
    return str(request.path_params["subject"])


async def _removed_setting(removal: Awaitable[T], subject: str | None) -> T:
    """Confluent answers DELETE /config/{s} and /mode/{s} for a subject without a setting of
    its own with 40401 "Subject not found" (not the 40408 / 40409 of a GET)."""
    try:
        return await removal
    except (SubjectConfigNotFoundError, SubjectModeNotFoundError) as exc:
        raise SubjectNotFoundError(f"Subject '{subject}' not found.", subject=subject) from exc


def _int_id(request: Request) -> int:
    text = str(request.path_params["id"])
    # Ids are SQLite integers (< 2**63): a larger number names no schema either.
    if not text.isascii() or not text.isdigit() or int(text) >= 1 << 63:
        raise _BadRequest(404, 40403, f"Schema {text} not found")
    return int(text)


def _endpoint(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        try:
            result = await handler(request)
            return result if isinstance(result, Response) else _json(result)
        except _BadRequest as exc:
            return _error(exc.status, exc.code, exc.message)
        except RegistryUnavailableError as exc:  # another worker held the file's write lock
            answer = _error(500, 50002, f"Operation timed out: {exc.message}")
            answer.headers["Retry-After"] = str(exc.retry_after or 1)
            return answer
        except (RegistryStoreError, sqlite3.Error) as exc:  # not the caller's fault: a 500
            log.exception("registry store failure", extra={"path": request.url.path})
            return _error(500, 50001, f"Error in the backend data store: {exc}")
        except RegistryError as exc:
            code = exc.registry_code
            return _error(_status_of(code), code, exc.message)
        except ServiceError as exc:  # anything else the caller sent wrong
            return _error(422, 42201 if exc.code == "invalid_schema" else 422, exc.message)

    return endpoint


def _status_of(code: int) -> int:
    return code if code < 1000 else int(str(code)[:3])


async def _http_error(request: Request, exc: Exception) -> Response:
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    phrase = {404: "HTTP 404 Not Found", 405: "HTTP 405 Method Not Allowed"}.get(
        status, f"HTTP {status}")
    response = _error(status, status, phrase)
    allow = ", ".join(sorted({m for route in request.app.routes  # every route at the path
                              if route.matches(request.scope)[0] != Match.NONE
                              for m in getattr(route, "methods", None) or ()}))
    if status == 405 and allow:
        response.headers["Allow"] = allow  # RFC 9110 §15.5.6
    return response
