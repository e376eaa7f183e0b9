"""Reading the embedded registry's REST requests: query flags, pagination, path parameters and
JSON bodies, refused with Confluent's codes when malformed."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.requests import Request

__all__ = ["BadRequest", "body_of", "flag", "int_id", "optional_int", "page", "references",
           "schema_of", "subject_of"]


class BadRequest(Exception):
    """A request that is not what the endpoint expects (400 / 404 / 413 / 422, with
    Confluent's error code)."""

    def __init__(self, message: str, *, status: int, code: int) -> None:
        """Refuse with `message`, HTTP `status` and Confluent error `code`."""
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def flag(request: Request, *names: str) -> bool:
    """A boolean query parameter (any case); the first of `names` present counts."""
    for name in names:
        if name in request.query_params:
            return request.query_params[name].strip().lower() == "true"
    return False


def page(request: Request, items: list[Any]) -> list[Any]:
    """Confluent's pagination: skip `offset` items, then at most `limit` (negative: all)."""
    offset = _int_param(request, "offset", default=0)
    limit = _int_param(request, "limit", default=-1)
    if offset < 0:
        raise BadRequest(f"query parameter offset must be >= 0 (got {offset})",
                         status=422, code=422)
    return items[offset:] if limit < 0 else items[offset:offset + limit]


def _int_param(request: Request, name: str, *, default: int) -> int:
    """An integer query parameter, `default` when absent or empty."""
    text = request.query_params.get(name, "").strip()
    if not text:
        return default
    try:
        return int(text)
    except ValueError as exc:
        raise BadRequest(f"query parameter {name} must be an integer (got {text!r})",
                         status=422, code=422) from exc


async def body_of(request: Request, max_bytes: int) -> dict[str, Any]:
    """The request's JSON object (``{}`` when empty), at most `max_bytes` long."""
    raw = await request.body()
    if len(raw) > max_bytes:
        raise BadRequest(f"request body of {len(raw)} bytes exceeds {max_bytes}",
                         status=413, code=413)
    try:
        body = orjson.loads(raw or b"{}")
    except orjson.JSONDecodeError as exc:
        raise BadRequest(f"Unrecognized JSON at position {exc.pos}: {exc.msg}",
                         status=400, code=400) from exc
    if not isinstance(body, dict):
        raise BadRequest("request body must be a JSON object", status=400, code=400)
    return body


def schema_of(body: dict[str, Any]) -> str:
    """The body's Avro ``schema`` text (42201 for another type or no string)."""
    schema_type = body.get("schemaType", "AVRO")
    if schema_type not in (None, "AVRO"):
        raise BadRequest(f"schemaType {schema_type!r} is not supported; only AVRO",
                         status=422, code=42201)
    schema = body.get("schema")
    if not isinstance(schema, str):
        raise BadRequest("Empty schema: the body needs \"schema\" as a JSON string",
                         status=422, code=42201)
    return schema


def references(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The body's schema ``references`` ([] when absent; 42201 when not a list of objects)."""
    found = body.get("references")
    if found is None:
        return []
    if not isinstance(found, list) or not all(isinstance(r, dict) for r in found):
        raise BadRequest("\"references\" must be a list of objects with name, subject and "
                         "version", status=422, code=42201)
    return found


def optional_int(body: dict[str, Any], name: str, *, unset: tuple[int, ...]) -> int | None:
    """A register body's ``id`` or ``version``: None when absent, null or one of `unset`
    (Confluent's defaults: id -1, version 0 or -1)."""
    value = body.get(name)
    if value is None or value in unset and not isinstance(value, bool):
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise BadRequest(f"\"{name}\" must be a non-negative integer (got {value!r})",
                         status=422, code=42201)
    return value


def subject_of(request: Request) -> str:
    """The subject in the path."""
    return str(request.path_params["subject"])


def int_id(request: Request) -> int:
    """The schema id in the path (40403 for one that names no schema)."""
    text = str(request.path_params["id"])
    # Ids are SQLite integers (< 2**63): a larger number names no schema either.
    if not text.isascii() or not text.isdigit() or int(text) >= 1 << 63:
        raise BadRequest(f"Schema {text} not found", status=404, code=40403)
    return int(text)
