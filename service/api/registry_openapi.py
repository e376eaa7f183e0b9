"""The OpenAPI document of the embedded registry's Confluent REST API (mounted at
``/registry``), served at ``/openapi-registry.json`` and shown on ``/docs``.

Every operation of ``service/registry/embedded/rest.py`` is declared once in `OPERATIONS`
with its parameters, request examples and the answers it gives (by example name, whose
prefix is the HTTP status); a test keeps the declared set equal to the routes served and
replays the examples against a real registry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from service.api.registry_examples import ANSWERS, REQUESTS, UNAUTHORIZED
from service.api.registry_schemas import PARAMETERS, SCHEMAS
from service.api.spec import AuthDoc

__all__ = ["Operation", "OPERATIONS", "TAGS", "WRITE", "CONTENT_TYPE", "document"]

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


@dataclass(frozen=True)
class Operation:
    """One documented operation: its answers are example names from `ANSWERS`."""

    method: str
    path: str
    operation_id: str
    tag: str
    summary: str
    description: str
    answers: tuple[str, ...]
    parameters: tuple[str, ...] = ()
    body: str | None = None
    requests: tuple[str, ...] = ()
    write: bool = False
    returns: str = "Empty"


def _op(method: str, path: str, operation_id: str, tag: str, summary: str, description: str,
        answers: tuple[str, ...], *parameters: str, body: str | None = None,
        requests: tuple[str, ...] = (), write: bool = False, returns: str) -> Operation:
    return Operation(method, path, operation_id, tag, summary, description, answers,
                     parameters, body, requests, write, returns)


_S, _SV = "/subjects/{subject}", "/subjects/{subject}/versions/{version}"
_PAGE = ("offset", "limit")
_SCHEMA_BODY = ("schema_v1", "schema_v2", "schema_key", "schema_incompatible",
                "schema_bad_default", "schema_missing_reference", "schema_protobuf")
_BAD_BODY = ("400-invalid_json", "413-body_too_large")
_INVALID = ("422-invalid_schema", "422-missing_reference", "422-unsupported_schema_type")

OPERATIONS: tuple[Operation, ...] = (
    _op("get", "/", "getRoot", "server", "The registry's root",
        "An empty object: Confluent clients call it to see the registry is there.",
        ("200-root",), returns="Empty"),
    _op("get", "/schemas", "listSchemas", "schemas", "List schemas",
        "Every version of every subject (subject, version, id, schema), by subject then "
        "version; `subjectPrefix` narrows the subjects, `latestOnly` keeps each subject's "
        "latest version, `deleted` adds soft-deleted versions.",
        ("200-schemas", "200-schemas_latest", "422-invalid_offset"),
        "subjectPrefix", "latestOnly", "deletedVersions", *_PAGE, returns="Schemas"),
    _op("get", "/schemas/types", "listSchemaTypes", "schemas", "Schema types served",
        "`AVRO` only (Confluent's registry also serves JSON and PROTOBUF).",
        ("200-schema_types",), returns="SchemaTypes"),
    _op("get", "/schemas/ids/{id}", "getSchemaById", "schemas", "A schema by its id",
        "The schema string registered under the global id. Ids are never reused: after a "
        "hard delete of every version using it, the id answers 40403. `fetchMaxId=true` "
        "adds `maxId`, the highest id handed out.",
        ("200-schema_by_id", "404-schema_not_found"), "id", "fetchMaxId",
        returns="SchemaString"),
    _op("get", "/schemas/ids/{id}/schema", "getSchemaTextById", "schemas",
        "A schema by its id, unwrapped", "The schema itself as JSON (not in a `schema` "
        "string).", ("200-schema_text", "404-schema_not_found"), "id", returns="AvroSchema"),
    _op("get", "/schemas/ids/{id}/subjects", "listSubjectsOfId", "schemas",
        "The subjects using an id", "Subjects with a version registered under the id; "
        "`deleted` adds soft-deleted versions.",
        ("200-id_subjects", "404-schema_not_found"), "id", "deletedVersions", *_PAGE,
        returns="Subjects"),
    _op("get", "/schemas/ids/{id}/versions", "listVersionsOfId", "schemas",
        "The subject versions using an id", "Subject and version of each use of the id; "
        "`deleted` adds soft-deleted versions.",
        ("200-id_versions", "404-schema_not_found"), "id", "deletedVersions", *_PAGE,
        returns="SubjectVersions"),
    _op("get", "/subjects", "listSubjects", "subjects", "List subjects",
        "Subjects with live versions, sorted; `deleted` adds soft-deleted subjects, "
        "`deletedOnly` lists only those, `subjectPrefix` narrows the list.",
        ("200-subjects", "200-subjects_prefix", "200-subjects_deleted_only",
         "422-invalid_offset"), "subjectPrefix", "deletedSubjects", "deletedOnly", *_PAGE,
        returns="Subjects"),
    _op("post", _S, "lookupSchema", "subjects", "Is this schema registered under the "
        "subject?", "The version (subject, version, id, schema) registered with this "
        "schema, compared in the registry's stored form; `normalize` compares normalized "
        "forms, `deleted` finds soft-deleted versions too (Confluent's lookupDeletedSchema).",
        ("200-found", "404-subject_not_found", "404-schema_not_in_subject", *_BAD_BODY,
         "422-unsupported_schema_type"), "subject", "normalize", "lookupDeleted",
        body="SchemaRequest",
        requests=("schema_v1", "schema_incompatible"), returns="Schema"),
    _op("delete", _S, "deleteSubject", "subjects", "Delete a subject",
        "Soft-deletes every version (the ids stay readable); with `permanent=true`, "
        "hard-deletes a subject soft-deleted first. Returns the versions deleted.",
        ("200-subject_deleted", "200-subject_purged", "404-subject_not_found",
         "404-subject_soft_deleted", "404-subject_not_soft_deleted", "422-read_only"),
        "subject", "permanent", write=True, returns="Versions"),
    _op("get", f"{_S}/versions", "listVersions", "subjects", "List a subject's versions",
        "Live version numbers, ascending; `deleted` adds soft-deleted ones, `deletedOnly` "
        "lists only those, `deletedAsNegative` adds them as negative numbers.",
        ("200-versions", "200-versions_deleted", "200-versions_deleted_only",
         "404-subject_not_found"), "subject", "deletedVersions", "deletedOnly",
        "deletedAsNegative", *_PAGE,
        returns="Versions"),
    _op("post", f"{_S}/versions", "registerSchema", "subjects", "Register a schema",
        "Registers the schema as the subject's next version, if the subject's compatibility "
        "level allows it (409 explains why not); registering it again returns the same id "
        "and version. The schema is validated (defaults included) and stored in Java Avro's "
        "compact form; `normalize=true` stores Confluent's normalized form. In IMPORT mode "
        "the body names the schema's `id` (and may name its `version`). `force=true` skips "
        "the compatibility check.",
        ("200-registered", "200-imported", "409-incompatible_schema", *_BAD_BODY, *_INVALID,
         "422-read_only", "422-import_needs_id"), "subject", "normalize", "forceRegister",
        body="RegisterSchemaRequest", requests=(*_SCHEMA_BODY, "import_v1"), write=True,
        returns="RegisterSchemaResponse"),
    _op("get", _SV, "getVersion", "subjects", "One version of a subject",
        "Subject, version, id and schema string; `latest` (or -1) is the newest live version; "
        "`deleted` finds soft-deleted versions too.",
        ("200-version", "404-subject_not_found", "404-version_not_found",
         "422-invalid_version"), "subject", "version", "deletedVersion", returns="Schema"),
    _op("delete", _SV, "deleteVersion", "subjects", "Delete a version",
        "Soft-deletes the version; with `permanent=true`, hard-deletes a version "
        "soft-deleted first. Returns the version number.",
        ("200-version_deleted", "404-subject_not_found", "404-version_not_found",
         "404-version_soft_deleted", "404-version_not_soft_deleted", "422-invalid_version",
         "422-read_only"), "subject", "version", "permanent", write=True, returns="Version"),
    _op("get", f"{_SV}/schema", "getVersionSchema", "subjects",
        "One version's schema, unwrapped", "The schema itself as JSON.",
        ("200-version_schema", "404-subject_not_found", "404-version_not_found",
         "422-invalid_version"), "subject", "version", "deletedVersion", returns="AvroSchema"),
    _op("get", f"{_SV}/referencedby", "listReferencedBy", "subjects",
        "Schemas referencing a version", "The ids of schemas that reference this version: "
        "always empty here, as the embedded registry stores no references.",
        ("200-referenced_by", "404-subject_not_found", "404-version_not_found",
         "422-invalid_version"), "subject", "version", "deletedVersions", *_PAGE, returns="Ids"),
    _op("post", "/compatibility/subjects/{subject}/versions/{version}",
        "checkCompatibilityWithVersion", "compatibility",
        "Check a schema against one version",
        "Whether the schema could read and be read as the subject's level requires, checked "
        "against one version (whatever the level's transitivity); `verbose=true` lists "
        "Confluent's reasons (an invalid schema then answers 200 with the reason).",
        ("200-compatible", "200-incompatible_verbose", "404-version_not_found", *_BAD_BODY,
         *_INVALID, "422-invalid_version"),
        "subject", "version", "verbose", "normalize", body="SchemaRequest",
        requests=("schema_incompatible", "schema_v2"), returns="CompatibilityCheckResponse"),
    _op("post", "/compatibility/subjects/{subject}/versions",
        "checkCompatibility", "compatibility", "Check a schema against the subject",
        "Whether registering the schema would be accepted: checked against the latest "
        "version, or all of them for a transitive level; `verbose=true` lists Confluent's "
        "reasons.", ("200-compatible", "200-incompatible_verbose", *_BAD_BODY, *_INVALID),
        "subject", "verbose", "normalize", body="SchemaRequest",
        requests=("schema_v2", "schema_incompatible"), returns="CompatibilityCheckResponse"),
    _op("get", "/config", "getGlobalLevel", "config", "The global compatibility level",
        "The level of every subject without its own (BACKWARD until set).", ("200-level",),
        returns="Config"),
    _op("put", "/config", "setGlobalLevel", "config", "Set the global compatibility level",
        "One of NONE, BACKWARD, BACKWARD_TRANSITIVE, FORWARD, FORWARD_TRANSITIVE, FULL, "
        "FULL_TRANSITIVE (any case).", ("200-level_set", *_BAD_BODY, "422-invalid_level"),
        body="ConfigUpdateRequest", requests=("level_full", "level_invalid"), write=True,
        returns="ConfigUpdated"),
    _op("delete", "/config", "deleteGlobalLevel", "config",
        "Reset the global compatibility level", "The default (BACKWARD) applies again; "
        "returns the level the registry had.", ("200-level_removed",), write=True,
        returns="Config"),
    _op("get", "/config/{subject}", "getSubjectLevel", "config",
        "A subject's compatibility level", "The subject's own level (40408 when it has "
        "none); with `defaultToGlobal=true`, the level in effect.",
        ("200-subject_level", "200-level", "404-subject_level_not_found"),
        "subject", "defaultToGlobal", returns="Config"),
    _op("put", "/config/{subject}", "setSubjectLevel", "config",
        "Set a subject's compatibility level", "Overrides the global level for the subject.",
        ("200-subject_level_set", *_BAD_BODY, "422-invalid_level"), "subject",
        body="ConfigUpdateRequest", requests=("level_none", "level_invalid"), write=True,
        returns="ConfigUpdated"),
    _op("delete", "/config/{subject}", "deleteSubjectLevel", "config",
        "Remove a subject's compatibility level", "The global level applies to the subject "
        "again; returns the level it had (40401 when it had none, as Confluent answers).",
        ("200-subject_level_removed", "404-subject_not_found"), "subject", write=True,
        returns="Config"),
    _op("get", "/mode", "getGlobalMode", "mode", "The global mode",
        "READWRITE until set.", ("200-mode",), returns="Mode"),
    _op("put", "/mode", "setGlobalMode", "mode", "Set the global mode",
        "READWRITE, READONLY (every write refused, 42205) or IMPORT (registrations name "
        "their ids); IMPORT needs an empty registry, or `force=true`.",
        ("200-mode_import", *_BAD_BODY, "422-invalid_mode", "422-import_needs_empty"),
        "force", body="ModeUpdateRequest", requests=("mode_import", "mode_invalid"),
        write=True, returns="Mode"),
    _op("get", "/mode/{subject}", "getSubjectMode", "mode", "A subject's mode",
        "The subject's own mode (40409 when it has none); with `defaultToGlobal=true`, the "
        "mode in effect.", ("200-mode", "404-subject_mode_not_found"),
        "subject", "defaultToGlobal", returns="Mode"),
    _op("put", "/mode/{subject}", "setSubjectMode", "mode", "Set a subject's mode",
        "Overrides the global mode for the subject (READONLY: freeze it).",
        ("200-mode_set", *_BAD_BODY, "422-invalid_mode"), "subject", "force",
        body="ModeUpdateRequest", requests=("mode_readonly", "mode_invalid"), write=True,
        returns="Mode"),
    _op("delete", "/mode/{subject}", "deleteSubjectMode", "mode", "Remove a subject's mode",
        "The global mode applies to the subject again; returns the mode it had (40401 when "
        "it had none, as Confluent answers).", ("200-mode_removed", "404-subject_not_found"),
        "subject",
        write=True, returns="Mode"),
)
"""Every operation of the embedded registry's REST app, in the page's order."""


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
                                            ["401-unauthorized"], "application/json")
    return out


def _responses(op: Operation) -> dict[str, Any]:
    by_status: dict[str, list[str]] = {}
    for name in op.answers:
        by_status.setdefault(name[:3], []).append(name)
    answers = {**_RESPONSES, "200": ("OK", op.returns)}
    return {status: _response(*answers[status], names, _media(status))
            for status, names in sorted(by_status.items())}


def _media(status: str) -> str:
    return "application/problem+json" if int(status) in _PROBLEM_STATUSES else CONTENT_TYPE


def _response(description: str, schema: str, names: list[str], media: str
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
