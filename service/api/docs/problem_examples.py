"""Example error bodies for the OpenAPI document, rendered by `problems.problem_response`.

An example for each class of the `problems.STATUS` table an operation can answer, and the
common codes under the 422 base; each is what the service sends in a real case
(tests/api/test_openapi.py replays the cases and compares).
"""

from __future__ import annotations

from typing import Any

import orjson
from starlette.requests import Request

from service.api import problems
from service.api.errors import (
    ApiKeyError,
    BodyTooLargeError,
    MethodNotAllowedError,
    RouteNotFoundError,
    UnsupportedMediaTypeError,
    WriteKeyRequiredError,
)
from service.api.settings import Settings
from service.codec.claim_check import ClaimCheckStorageUnavailableError
from service.codec.errors import (
    InvalidJsonError,
    InvalidMessagesError,
    InvalidRecordsError,
    InvalidRequestError,
    UnconvertibleMessagesError,
)
from service.core import errors as core
from service.core.errors import Fix, InvalidDDLError, ServiceError
from service.registry import errors as reg
from service.registry.tables import TopicBindingError
from service.usecases.readiness import NotReadyError

__all__ = ["EXAMPLES", "examples_by_status"]

_SUBJECT = "/v1/subjects/tidb_shop_orders-value"
_VALUE = "tidb_shop_orders-value"
_GENERATE = "/v1/schemas/generate"
_REGISTER = "/v1/tables/register"
_ENCODE = "/v1/topics/tidb_shop_orders/encode"
_REGISTRY = "http://registry:8081"
_LIMIT = Settings.model_fields["max_body_bytes"].default  # the document shows the defaults
_LONG = "c" * 65
_CLAIM_KEY = "changefeed/4f2b0c8e-6f0a-4c55-9a43-0b5c8b1e2d7a.json"
_CLAIM = f"s3://claims/{_CLAIM_KEY}"
_QTY = ("column `qty` is new and has no default; readers of the new schema cannot read data "
        "written with version 1, which lacks it")
_NO_SCHEMA = ("message 0: topic tidb_shop_refunds has no registered schema "
              "(subject tidb_shop_refunds-value)")
_TRUNCATED = "truncated Confluent header: 3 byte(s), expected at least 5"
_BOUND = ("subject tidb_shop_orders-key already holds table default.shop.orders; table "
          "default.shop.refunds (`shop`.`refunds`) cannot share its topic: one topic carries "
          "one table under TopicNameStrategy")

EXAMPLES: list[tuple[str, ServiceError]] = [
    (_GENERATE, InvalidJsonError(
        "the body is not JSON: trailing comma is not allowed at line 1, column 27 "
        "(character 26)", position=26, line=1, column=27)),
    ("/v1/tables/check", InvalidRequestError(
        "the request is invalid: body/ddl: Input should be a valid string",
        errors=[{"location": "body/ddl", "message": "Input should be a valid string"}])),
    (_GENERATE, InvalidDDLError(
        "DDL does not parse at line 1, column 64: Expecting )", line=1, column=64)),
    (_GENERATE, core.DuplicateColumnError("column `id` is defined twice", column="id")),
    (_GENERATE, core.UnsupportedTypeError(
        "column `g`: MySQL type GEOMETRY has no flat-avro mapping", column="g",
        mysql_type="GEOMETRY")),
    (_GENERATE, core.MissingDatabaseError(
        "CREATE TABLE `orders` names no database (the topic, subjects and Avro namespace are "
        "built from it)", table="orders", fix=[Fix.DATABASE])),
    (_GENERATE, core.NameCollisionError(
        "column `a-b` and column `a_b` both become the Avro field `a_b`", column="a-b",
        other="a_b", avro_name="a_b")),
    (_GENERATE, core.InvalidDefaultError(
        "column `n`: DEFAULT 'x' is not a value of INT: 'x' is not an integer", column="n")),
    (_GENERATE, core.LimitExceededError(
        "identifiers longer than TiDB's 64 characters: column `cccccccccccccccccccc...` "
        "(65 characters)", what="identifier_length", limit=64, value=65,
        identifiers=[{"kind": "column", "name": _LONG, "length": 65}])),
    ("/v1/tables/check", core.InvalidTopicRuleError(
        "topic rule 'tidb_{table}_{schema}' is invalid: {schema} must come before {table}",
        rule="tidb_{table}_{schema}")),
    (f"{_SUBJECT}/versions/2147483648", reg.InvalidVersionError(
        "The specified version '2147483648' is not a valid version id. Allowed values are "
        "between [1, 2^31-1] and the string \"latest\"", version="2147483648")),
    (_ENCODE, InvalidRecordsError([
        {"code": "invalid_value", "message": "record 0: column `price`: 'abc' is not a "
         "decimal number", "column": "price", "reason": "'abc' is not a decimal number",
         "record_index": 0}])),
    ("/v1/decode", InvalidMessagesError([
        {"code": "invalid_message", "message_index": 0, "part": "key",
         "message": f"message 0 key: {_TRUNCATED}", "reason": _TRUNCATED, "offset": 3}])),
    ("/v1/convert/canal-json", UnconvertibleMessagesError([
        {"code": "no_schema", "message": _NO_SCHEMA, "topic": "tidb_shop_refunds",
         "fix": ["register_table", "register_on_convert"], "message_index": 0}],
        failed_messages=[0], converted=0)),
    (_REGISTER, reg.ReadOnlyModeError(
        "Subject tidb_shop_orders-key is in read-only mode", subject="tidb_shop_orders-key")),
    (_REGISTER, reg.RegistryError(  # a remote registry's refusal we have no class for
        "schema registry answered 403 (40301): User is denied operation Write on Subject: "
        f"{_VALUE}", registry_status=403, error_code=40301)),
    ("/v1/subjects/nope-value/versions", reg.SubjectNotFoundError(
        "Subject 'nope-value' not found.", subject="nope-value")),
    (f"{_SUBJECT}/versions/7", reg.VersionNotFoundError(
        "Version 7 not found.", subject=_VALUE, version=7)),
    # /v1/decode reports an unknown id inside invalid_messages; a 404 comes from a registry
    # that answers a registration with the id only and then cannot find it (an older one)
    (_REGISTER, reg.SchemaNotFoundError(
        "schema registry answered 404 (40403): Schema not found", registry_status=404,
        error_code=40403)),
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
    (f"{_SUBJECT}/mode", reg.SubjectModeNotFoundError(
        f"Subject '{_VALUE}' does not have subject-level mode configured", subject=_VALUE)),
    ("/v1/mode", reg.OperationNotPermittedError(
        "Cannot import since found existing subjects; pass force=true")),
    ("/v1/nope", RouteNotFoundError("no route GET /v1/nope")),
    (_REGISTER, reg.IncompatibleSchemaError(
        f"table `shop`.`orders` is incompatible with what topic tidb_shop_orders holds: {_QTY}",
        topic="tidb_shop_orders", subjects=[{
            "subject": _VALUE, "compatibility_level": "BACKWARD", "incompatibilities": [{
                "type": "READER_FIELD_MISSING_DEFAULT_VALUE", "location": "/fields/5",
                "message": _QTY, "version": 1}]}])),
    (_REGISTER, TopicBindingError(
        _BOUND, subject="tidb_shop_orders-key", registered_table="default.shop.orders",
        table="default.shop.refunds")),
    ("/v1/tables/check", reg.RegistryServerError(
        "schema registry answered 500 (50001): Error in the backend data store",
        registry_status=500, error_code=50001)),
    ("/v1/mode", reg.RegistryUnsupportedError(
        f"the schema registry at {_REGISTRY} does not implement PUT /mode (it answered 404 (0): "
        "Operation not supported.); if no call works, the URL is not the root of a "
        "Confluent-compatible API (Apicurio: .../apis/ccompat/v7, flatavro serve: "
        ".../registry)", registry_status=404, error_code=0, operation="PUT /mode")),
    (_REGISTER, reg.RegistryAuthError(
        f"the schema registry at {_REGISTRY} refused this service's credentials (401 (40101): "
        "Unauthorized); set FLATAVRO_REGISTRY_USERNAME and FLATAVRO_REGISTRY_PASSWORD, or "
        "FLATAVRO_REGISTRY_BEARER_TOKEN", registry_status=401, error_code=40101)),
    ("/v1/tables/check", reg.RegistryUnavailableError(
        f"schema registry at {_REGISTRY} is unreachable: connection refused", url=_REGISTRY,
        reason="connection refused")),
    ("/v1/convert/canal-json", ClaimCheckStorageUnavailableError(
        f"claim-check object '{_CLAIM}': access denied to {_CLAIM} (bucket claims, key "
        f"{_CLAIM_KEY}) at https://s3.eu-west-1.amazonaws.com: AccessDenied: Access Denied; do "
        "the credentials allow s3:GetObject there? (without s3:ListBucket a missing object is "
        "denied too)", field="claimCheckLocation", location=_CLAIM, bucket="claims",
        key=_CLAIM_KEY)),
    ("/readyz", NotReadyError(
        f"not ready: the schema registry at {_REGISTRY} is unreachable (connection refused)",
        dependencies={"registry": {"status": "unreachable", "url": _REGISTRY,
                                   "reason": "connection refused"}})),
    (_REGISTER, ApiKeyError(
        "this operation needs an API key (Authorization: Bearer <key> or X-API-Key: <key>)")),
    ("/v1/convert/simple", WriteKeyRequiredError(
        "register=true registers schemas: it needs an API key (Authorization: Bearer <key> "
        "or X-API-Key)")),
    ("/v1/subjects", MethodNotAllowedError(
        "POST is not allowed on /v1/subjects; it takes GET", allow="GET")),
    (_GENERATE, BodyTooLargeError(
        f"the request body is over the limit of {_LIMIT} bytes (FLATAVRO_MAX_BODY_BYTES)",
        limit=_LIMIT)),
    (_GENERATE, UnsupportedMediaTypeError(
        "Content-Type text/plain is not accepted here; send application/json",
        content_type="text/plain", accepted=["application/json"])),
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
