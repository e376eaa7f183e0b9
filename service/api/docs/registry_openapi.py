"""The OpenAPI document of the embedded registry's Confluent REST API (mounted at
``/registry``), served at ``/openapi-registry.json`` and shown on ``/docs``.

Every operation of ``service/registry/embedded/rest/`` is declared once in
`registry_operations.OPERATIONS` with its parameters, request examples and the answers it
gives (by example name, whose prefix is the HTTP status); a test keeps the declared set equal
to the routes served and replays the examples against a real registry.
"""

from __future__ import annotations

from typing import Any

from service.api.docs.registry_examples import ANSWERS, REQUESTS, UNAUTHORIZED
from service.api.docs.registry_operations import OPERATIONS, Operation
from service.api.docs.registry_schemas import PARAMETERS, SCHEMAS
from service.api.docs.spec import AuthDoc

__all__ = ["TAGS", "WRITE", "CONTENT_TYPE", "document"]

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
WRITE = "WRITE: "
"""The summary prefix of every operation that changes the registry."""
_WRITE_NOTE = ("**Changes the registry** (needs an API key when `FLATAVRO_API_KEYS` is "
               "set). ")
_PROBLEM_STATUSES = {413}  # answered by the service in front of the registry
TAGS = [
    {"name": "subjects", "description": "Subjects and their versions: register, look up, "
                                        "read, delete"},
    {"name": "schemas", "description": "Schemas by their global id"},
    {"name": "compatibility", "description": "Would a schema be accepted? (nothing is "
                                             "written)"},
    {"name": "config", "description": "Compatibility levels: global and per subject"},
    {"name": "mode", "description": "Modes (READWRITE, READONLY, IMPORT): global and per "
                                    "subject"},
    {"name": "server", "description": "The registry itself"},
]
DESCRIPTION = """The embedded schema registry's Confluent-compatible REST API (Avro only),
mounted on this service at `/registry`: point Confluent clients, serializers and Kafka Connect
at `http://HOST:PORT/registry`. Errors are Confluent's bodies `{"error_code": N, "message":
"..."}` with the HTTP status of the code's first three digits (40401: 404). Operations whose
summary starts with **WRITE:** change the registry.

Differences from Confluent's registry on purpose: only `AVRO` schemas; schema references are
refused (42201) because the embedded registry stores none."""


def document(auth: AuthDoc) -> dict[str, Any]:
    """The registry's OpenAPI document; operations needing a key under `auth` declare the
    service's security schemes and the 40101 answer."""
    paths: dict[str, dict[str, Any]] = {}
    for op in OPERATIONS:
        paths.setdefault(op.path, {})[op.method] = _operation(op, auth)
    components: dict[str, Any] = {
        "schemas": SCHEMAS, "parameters": PARAMETERS,
        "examples": {**{f"request-{k}": v for k, v in REQUESTS.items()}, **ANSWERS}}
    if auth.keys:
        components["examples"]["401-unauthorized"] = UNAUTHORIZED
        components["securitySchemes"] = {
            "HTTPBearer": {"type": "http", "scheme": "bearer",
                           "description": "An API key from FLATAVRO_API_KEYS"},
            "APIKeyHeader": {"type": "apiKey", "in": "header", "name": "X-API-Key",
                             "description": "An API key from FLATAVRO_API_KEYS"}}
    return {"openapi": "3.1.0",
            "info": {"title": "flatavro embedded schema registry (Confluent REST API)",
                     "version": "0.1.0", "description": DESCRIPTION},
            "servers": [{"url": "/registry", "description": "mounted on this service"}],
            "tags": TAGS, "paths": paths, "components": components}


def _operation(op: Operation, auth: AuthDoc) -> dict[str, Any]:
    out: dict[str, Any] = {
        "tags": [op.tag], "operationId": op.operation_id,
        "summary": (WRITE if op.write else "") + op.summary,
        "description": (_WRITE_NOTE if op.write else "") + op.description,
        "parameters": [{"$ref": f"#/components/parameters/{p}"} for p in op.parameters],
        "responses": _responses(op)}
    if not out["parameters"]:
        del out["parameters"]
    if op.body is not None:
        examples = {name: {"$ref": f"#/components/examples/request-{name}"}
                    for name in op.requests}
        media = {"schema": {"$ref": f"#/components/schemas/{op.body}"}, "examples": examples}
        out["requestBody"] = {"required": True, "content": {CONTENT_TYPE: media,
                                                            "application/json": media}}
    if auth.keys and (op.write or auth.protect_reads):
        out["security"] = [{"HTTPBearer": []}, {"APIKeyHeader": []}]
        out["responses"]["401"] = _response("No API key, or an unknown one", "ErrorMessage",
                                            names=["401-unauthorized"],
                                            media="application/json")
    return out


def _responses(op: Operation) -> dict[str, Any]:
    by_status: dict[str, list[str]] = {}
    for name in op.answers:
        by_status.setdefault(name[:3], []).append(name)
    answers = {**_RESPONSES, "200": ("OK", op.returns)}
    return {status: _response(*answers[status], names=names, media=_media(status))
            for status, names in sorted(by_status.items())}


def _media(status: str) -> str:
    return "application/problem+json" if int(status) in _PROBLEM_STATUSES else CONTENT_TYPE


def _response(description: str, schema: str, *, names: list[str], media: str
              ) -> dict[str, Any]:
    examples = {name.split("-", 1)[1]: {"$ref": f"#/components/examples/{name}"}
                for name in names}
    return {"description": description, "content": {media: {
        "schema": {"$ref": f"#/components/schemas/{schema}"}, "examples": examples}}}


_RESPONSES = {
    "400": ("The body is not a JSON object", "ErrorMessage"),
    "404": ("Not found: the `error_code` says what (40401 subject, 40402 version, 40403 "
            "schema, 40404-40407 delete order, 40408 level, 40409 mode)", "ErrorMessage"),
    "409": ("The subject's compatibility level refuses the schema (40901; `message` lists "
            "Confluent's details)", "ErrorMessage"),
    "413": ("The body is over `FLATAVRO_MAX_BODY_BYTES` (answered by the service, as "
            "problem+json)", "Problem"),
    "422": ("Invalid input or not permitted: 42201 schema, 42202 version, 42203 level, "
            "42204 mode, 42205 the mode forbids it, 422 a query parameter", "ErrorMessage"),
}
