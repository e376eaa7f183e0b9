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
    InvalidMessagesError,
    InvalidRecordsError,
    InvalidRequestError,
    UnconvertibleMessagesError,
    UnsupportedMediaTypeError,
    WriteKeyRequiredError,
)
from service.core import errors as core
from service.core.errors import Fix, InvalidDDLError, InvalidInputError, ServiceError
from service.registry import errors as reg
from service.registry.tables import TopicBindingError

__all__ = ["EXAMPLES", "examples_by_status"]

_SUBJECT = "/v1/subjects/tidb_shop_orders-value"
_VALUE = "tidb_shop_orders-value"
_GENERATE = "/v1/schemas/generate"
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
    (_GENERATE, core.DuplicateColumnError("column `id` is defined twice", column="id")),
    (_GENERATE, core.UnsupportedTypeError(
        "column `g`: MySQL type GEOMETRY has no flat-avro mapping", column="g",
        type="geometry")),
    (_GENERATE, core.MissingDatabaseError(
        "CREATE TABLE `orders` names no database (the topic, subjects and Avro namespace are "
        "built from it)", table="orders", fix=[Fix.DATABASE])),
    (_GENERATE, core.NameCollisionError(
        "column `a_b` and column `a-b` both become the Avro field `a_b`", column="a_b",
        other="a-b", avro_name="a_b")),
    (_GENERATE, core.InvalidDefaultError(
        "column `n`: DEFAULT 'x' is not a value of INT: 'x' is not an integer", column="n")),
    (_GENERATE, core.LimitExceededError(
        "table `orders` has 4097 columns; TiDB allows at most 4096", what="columns",
        limit=4096, value=4097, table="orders")),
    ("/v1/tables/check", core.InvalidTopicRuleError(
        "topic rule 'tidb_{table}_{schema}' is invalid: {schema} must come before {table}",
        rule="tidb_{table}_{schema}")),
    (f"{_SUBJECT}/versions/2147483648", reg.InvalidVersionError(
        "The specified version '2147483648' is not a valid version id. Allowed values are "
        "between [1, 2^31-1] and the string \"latest\"", version="2147483648")),
    ("/v1/decode", InvalidMessagesError([
        {"code": "invalid_message", "message_index": 0, "part": "key",
         "message": "message 0 key: truncated Confluent header: 3 byte(s), expected at "
                    "least 5",
         "reason": "truncated Confluent header: 3 byte(s), expected at least 5", "offset": 3}])),
    ("/v1/convert/canal-json", UnconvertibleMessagesError([
        {"code": "no_schema", "message": "message 0: topic tidb_shop_orders has no "
         "registered schema (subject tidb_shop_orders-value)", "topic": "tidb_shop_orders",
         "fix": ["register_table", "register_on_convert"], "message_index": 0}],
        failed_messages=[0], converted=0)),
    ("/v1/subjects/nope-value/versions", reg.SubjectNotFoundError(
        "Subject 'nope-value' not found.", subject="nope-value")),
    (f"{_SUBJECT}/versions/7", reg.VersionNotFoundError(
        "Version 7 not found.", subject=_VALUE, version=7)),
    ("/v1/decode", reg.SchemaNotFoundError("Schema 42 not found", schema_id=42)),
    (_SUBJECT, reg.SubjectSoftDeletedError(
        f"Subject '{_VALUE}' was soft deleted.Set permanent=true to delete permanently",
        subject=_VALUE)),
    (_SUBJECT, reg.SubjectNotSoftDeletedError(
        f"Subject '{_VALUE}' was not deleted first before being permanently deleted",
        subject=_VALUE)),
    (f"{_SUBJECT}/versions/1", reg.VersionSoftDeletedError(
        f"Subject '{_VALUE}' Version 1 was soft deleted.Set permanent=true to delete "
        "permanently", subject=_VALUE)),
    (f"{_SUBJECT}/versions/1", reg.VersionNotSoftDeletedError(
        f"Subject '{_VALUE}' Version 1 was not deleted first before being permanently "
        "deleted", subject=_VALUE)),
    (f"{_SUBJECT}/compatibility", reg.SubjectConfigNotFoundError(
        f"Subject '{_VALUE}' does not have subject-level compatibility configured",
        subject=_VALUE)),
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
        f"Subject {_VALUE} is in read-only mode", subject=_VALUE)),
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
