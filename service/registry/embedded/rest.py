"""The embedded registry's Confluent REST API as an ASGI app (the service mounts it at /registry).

Handlers parse the request, call one `EmbeddedRegistry` method and render the result; every
failure becomes Confluent's error body ``{"error_code": N, "message": "..."}`` with the HTTP
status of the code's family, so Confluent's own clients see the errors they know.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Match, Route

from service.core.errors import ServiceError
from service.registry.compatibility import CompatibilityVerdict
from service.registry.embedded.registry import EmbeddedRegistry, parse_level
from service.registry.errors import RegistryError, SubjectModeNotFoundError
from service.registry.model import RegisteredSchema, RegistryMode

__all__ = ["create_registry_app", "CONTENT_TYPE"]

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
Handler = Callable[[Request], Awaitable[Any]]


class _BadRequest(Exception):
    """A body that is not the JSON the endpoint expects (400 / 422 with Confluent's codes)."""

    def __init__(self, status: int, code: int, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def _json(payload: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(payload), status_code=status, media_type=CONTENT_TYPE)


def _error(status: int, code: int, message: str) -> Response:
    return _json({"error_code": code, "message": message}, status)


def _flag(request: Request, name: str) -> bool:
    return request.query_params.get(name, "false").strip().lower() == "true"


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


def _registered(found: RegisteredSchema) -> dict[str, Any]:
    return {"subject": found.subject, "version": found.version, "id": found.id,
            "schema": found.schema}


def _verdict(verdict: CompatibilityVerdict, verbose: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"is_compatible": verdict.compatible}
    if verbose:
        out["messages"] = [
            f"{{errorType:'{i.type}', description:'{i.message}', "
            f"additionalInfo:'{i.direction}'}}, {{location:'{i.location}'}}, "
            f"{{oldSchemaVersion: {i.version}}}"
            for i in verdict.incompatibilities
        ]
    return out


def create_registry_app(registry: EmbeddedRegistry, *, max_body_bytes: int = 1 << 20
                        ) -> Starlette:
    """Build the ASGI app serving `registry` with Confluent's REST API."""

    async def body(request: Request) -> dict[str, Any]:
        return await _body(request, max_body_bytes)

    def subject(request: Request) -> str:
        return str(request.path_params["subject"])

    async def root(request: Request) -> Any:
        return {}

    async def schema_types(request: Request) -> Any:
        return ["AVRO"]

    async def schema_by_id(request: Request) -> Any:
        return {"schema": await registry.schema_by_id(_int_id(request))}

    async def id_subjects(request: Request) -> Any:
        uses = await registry.uses_of(_int_id(request), deleted=_flag(request, "deleted"))
        return sorted({s for s, _ in uses})

    async def id_versions(request: Request) -> Any:
        uses = await registry.uses_of(_int_id(request), deleted=_flag(request, "deleted"))
        return [{"subject": s, "version": v} for s, v in uses]

    async def list_subjects(request: Request) -> Any:
        return await registry.subjects(deleted=_flag(request, "deleted"))

    async def list_versions(request: Request) -> Any:
        return await registry.versions(subject(request), deleted=_flag(request, "deleted"))

    async def register(request: Request) -> Any:
        found = await registry.register(subject(request), _schema_of(await body(request)))
        return {"id": found.id, "version": found.version, "schema": found.schema}

    async def lookup(request: Request) -> Any:
        found = await registry.lookup(subject(request), _schema_of(await body(request)),
                                      deleted=_flag(request, "deleted"))
        return _registered(found)

    async def get_version(request: Request) -> Any:
        found = await registry.get_version(subject(request), request.path_params["version"],
                                           deleted=_flag(request, "deleted"))
        return _registered(found)

    async def get_version_schema(request: Request) -> Any:
        found = await registry.get_version(subject(request), request.path_params["version"],
                                           deleted=_flag(request, "deleted"))
        return Response(found.schema.encode(), media_type=CONTENT_TYPE)

    async def delete_subject(request: Request) -> Any:
        return await registry.delete_subject(subject(request),
                                             permanent=_flag(request, "permanent"))

    async def delete_version(request: Request) -> Any:
        return await registry.delete_version(subject(request), request.path_params["version"],
                                             permanent=_flag(request, "permanent"))

    async def compat_all(request: Request) -> Any:
        verdict = await registry.check_compatibility(subject(request),
                                                     _schema_of(await body(request)))
        return _verdict(verdict, _flag(request, "verbose"))

    async def compat_one(request: Request) -> Any:
        verdict = await registry.check_compatibility(
            subject(request), _schema_of(await body(request)), request.path_params["version"])
        return _verdict(verdict, _flag(request, "verbose"))

    async def config(request: Request) -> Any:
        name = request.path_params.get("subject")
        if request.method == "PUT":
            payload = await body(request)
            level = parse_level(str(payload.get("compatibility")
                                    or payload.get("compatibilityLevel") or ""))
            return {"compatibility": (await registry.set_compatibility(level, name)).value}
        if request.method == "DELETE":
            return {"compatibilityLevel": (await registry.delete_compatibility(name)).value}
        level = await registry.get_compatibility(
            name, default_to_global=_flag(request, "defaultToGlobal"))
        return {"compatibilityLevel": level.value}

    async def mode(request: Request) -> Any:
        name = request.path_params.get("subject")
        if request.method == "PUT":
            wanted = str((await body(request)).get("mode", "")).upper()
            if wanted not in RegistryMode.__members__:
                raise _BadRequest(422, 42204, f"Invalid mode {wanted!r}; valid: "
                                  "READWRITE, READONLY, IMPORT")
            return {"mode": (await registry.set_mode(
                RegistryMode(wanted), name, force=_flag(request, "force"))).value}
        if request.method == "DELETE":
            return {"mode": (await registry.delete_mode(str(name))).value}
        if name is not None and not _flag(request, "defaultToGlobal"):
            configured = await registry.configured_mode(name)
            if configured is None:
                raise SubjectModeNotFoundError(
                    f"Subject '{name}' does not have subject-level mode configured")
            return {"mode": configured.value}
        return {"mode": (await registry.get_mode(name)).value}

    def route(path: str, handler: Handler, methods: list[str]) -> Route:
        return Route(path, _endpoint(handler), methods=methods)

    routes = [
        route("/", root, ["GET"]),
        route("/schemas/types", schema_types, ["GET"]),
        route("/schemas/ids/{id}", schema_by_id, ["GET"]),
        route("/schemas/ids/{id}/subjects", id_subjects, ["GET"]),
        route("/schemas/ids/{id}/versions", id_versions, ["GET"]),
        route("/subjects", list_subjects, ["GET"]),
        route("/subjects/{subject:path}/versions", list_versions, ["GET"]),
        route("/subjects/{subject:path}/versions/{version}/schema", get_version_schema, ["GET"]),
        route("/subjects/{subject:path}/versions/{version}", get_version, ["GET"]),
        route("/subjects/{subject:path}/versions/{version}", delete_version, ["DELETE"]),
        route("/subjects/{subject:path}/versions", register, ["POST"]),
        route("/subjects/{subject:path}", lookup, ["POST"]),
        route("/subjects/{subject:path}", delete_subject, ["DELETE"]),
        route("/compatibility/subjects/{subject:path}/versions/{version}", compat_one, ["POST"]),
        route("/compatibility/subjects/{subject:path}/versions", compat_all, ["POST"]),
        route("/config", config, ["GET", "PUT", "DELETE"]),
        route("/config/{subject:path}", config, ["GET", "PUT", "DELETE"]),
        route("/mode", mode, ["GET", "PUT"]),
        route("/mode/{subject:path}", mode, ["GET", "PUT", "DELETE"]),
    ]
    return Starlette(routes=routes, exception_handlers={HTTPException: _http_error})


def _int_id(request: Request) -> int:
    text = str(request.path_params["id"])
    if not text.isdigit():
        raise _BadRequest(404, 40403, f"Schema {text} not found")
    return int(text)


def _endpoint(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        try:
            result = await handler(request)
            return result if isinstance(result, Response) else _json(result)
        except _BadRequest as exc:
            return _error(exc.status, exc.code, exc.message)
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
