"""Example error bodies for the OpenAPI document, rendered by `problems.problem_response`.

One example instance per class of the `problems.STATUS` table (and a few common codes under
the 422 base), so the documented bodies are exactly what the service sends.
"""

from __future__ import annotations

from typing import Any

import orjson
from starlette.requests import Request

from service.api import problems
from service.api.readiness import NotReadyError
from service.codec.errors import (
    InvalidJsonError,
    InvalidRecordsError,
    InvalidRequestError,
    UnsupportedMediaTypeError,
    WriteKeyRequiredError,
)
from service.core.errors import InvalidDDLError, InvalidInputError, ServiceError
from service.registry import errors as reg
from service.registry.tables import TopicBindingError

__all__ = ["EXAMPLES", "examples_by_status"]

_SUBJECT = "/v1/subjects/tidb_shop_orders-value"
_ACCEPTED = ["application/json"]

EXAMPLES: list[tuple[str, ServiceError]] = [
    ("/v1/schemas/generate", InvalidInputError("the request is invalid", field="options")),
    ("/v1/schemas/generate", InvalidJsonError(
        "the body is not JSON: trailing comma is not allowed at line 1, column 27 "
        "(character 26)", position=26, line=1, column=27)),
    ("/v1/tables/check", InvalidRequestError(
        "the request is invalid: body/ddl: Input should be a valid string",
        errors=[{"location": "body/ddl", "message": "Input should be a valid string"}])),
    ("/v1/schemas/generate", InvalidDDLError(
        "the DDL does not parse: Expecting ) at line 1, column 40", position=39)),
    ("/v1/topics/tidb_shop_orders/encode", InvalidRecordsError([
        {"record_index": 0, "column": "price", "message": "record 0, column price: "
         "'abc' is not a DECIMAL(12,2)"}])),
    ("/v1/subjects/nope-value/versions", reg.SubjectNotFoundError(
        "subject nope-value not found", subject="nope-value")),
    (f"{_SUBJECT}/versions/7", reg.VersionNotFoundError(
        "version 7 of subject tidb_shop_orders-value not found",
        subject="tidb_shop_orders-value", version=7)),
    ("/v1/decode", reg.SchemaNotFoundError("schema id 42 not found", schema_id=42)),
    (_SUBJECT, reg.SubjectSoftDeletedError(
        "subject tidb_shop_orders-value was soft-deleted", subject="tidb_shop_orders-value")),
    (_SUBJECT, reg.SubjectNotSoftDeletedError(
        "subject tidb_shop_orders-value must be soft-deleted before a permanent delete",
        subject="tidb_shop_orders-value")),
    (f"{_SUBJECT}/versions/1", reg.VersionSoftDeletedError(
        "version 1 of subject tidb_shop_orders-value was soft-deleted",
        subject="tidb_shop_orders-value", version=1)),
    (f"{_SUBJECT}/versions/1", reg.VersionNotSoftDeletedError(
        "version 1 of subject tidb_shop_orders-value must be soft-deleted before a "
        "permanent delete", subject="tidb_shop_orders-value", version=1)),
    (f"{_SUBJECT}/compatibility", reg.SubjectConfigNotFoundError(
        "subject tidb_shop_orders-value has no compatibility level of its own",
        subject="tidb_shop_orders-value")),
    ("/v1/nope", problems._RouteNotFound("no route GET /v1/nope")),
    ("/v1/tables/register", reg.IncompatibleSchemaError(
        "the value schema is incompatible with version 1 of tidb_shop_orders-value "
        "(BACKWARD): column note has no default", subject="tidb_shop_orders-value")),
    ("/v1/tables/register", TopicBindingError(
        "topic tidb_shop_orders already carries table shop.orders_v2's schemas",
        topic="tidb_shop_orders")),
    ("/v1/subjects/tidb_shop_orders-value", reg.RegistryError(
        "the registry refused the request: subject name too long")),
    ("/v1/tables/register", reg.ReadOnlyModeError(
        "the registry is in READONLY mode", subject="tidb_shop_orders-value")),
    ("/v1/tables/check", reg.RegistryServerError(
        "the registry answered 500: internal error")),
    ("/v1/tables/check", reg.RegistryUnavailableError(
        "the registry at http://registry:8081 does not answer: connection refused",
        retry_after=5)),
    ("/readyz", NotReadyError("the registry is not ready", retry_after=5, dependencies={
        "registry": {"status": "unreachable", "reason": "connection refused"}})),
    ("/v1/tables/register", problems.ApiKeyError(
        "this request needs an API key (Authorization: Bearer <key> or X-API-Key)")),
    ("/v1/convert/simple", WriteKeyRequiredError(
        "register=true needs an API key with write access")),
    ("/v1/subjects", problems._MethodNotAllowed(
        "POST is not allowed on /v1/subjects; it takes GET, HEAD", allow="GET, HEAD")),
    ("/v1/schemas/generate", UnsupportedMediaTypeError(
        "Content-Type text/plain is not accepted here; send application/json",
        content_type="text/plain", accepted=_ACCEPTED)),
]
"""(instance path, error) for each documented example."""


def _request(path: str) -> Request:
    return Request({"type": "http", "method": "GET", "path": path, "root_path": "",
                    "query_string": b"", "headers": [], "scheme": "http",
                    "server": ("localhost", 8000)})


def examples_by_status() -> dict[int, dict[str, dict[str, Any]]]:
    """Status -> OpenAPI example objects (named by code) of the bodies sent with it."""
    out: dict[int, dict[str, dict[str, Any]]] = {}
    for path, error in EXAMPLES:
        response = problems.problem_response(_request(path), error, retry_after=5)
        name = error.code if error.code not in out.get(response.status_code, {}) \
            else f"{error.code}_{type(error).__name__}"
        out.setdefault(response.status_code, {})[name] = {
            "summary": error.code, "value": orjson.loads(bytes(response.body))}
    return out
