"""The JSON Schemas and shared parameters of the embedded registry's OpenAPI document
(Confluent's request and answer shapes, Avro only)."""

from __future__ import annotations

from typing import Any

from service.registry.compatibility import CompatibilityLevel
from service.registry.model import RegistryMode

__all__ = ["SCHEMAS", "PARAMETERS"]

_LEVELS = [level.value for level in CompatibilityLevel]
_MODES = [mode.value for mode in RegistryMode]
_INT = {"type": "integer", "format": "int32"}


def _object(required: list[str], **properties: Any) -> dict[str, Any]:
    return {"type": "object", "required": required, "properties": properties}


def _string(description: str, **extra: Any) -> dict[str, Any]:
    return {"type": "string", "description": description, **extra}


_SCHEMA_TEXT = _string("The Avro schema as a JSON string (Confluent's wire shape)")
_REFERENCE = _object(["name", "subject", "version"], name=_string("The referenced name"),
                     subject=_string("The subject holding it"),
                     version={**_INT, "description": "The version"})
_SCHEMA_TYPE = _string("AVRO (the default); other types are refused (42201)", enum=["AVRO"])
_REFERENCES = {"type": "array", "items": {"$ref": "#/components/schemas/SchemaReference"},
               "description": "Refused when present (42201): the embedded registry stores "
                              "no references"}

SCHEMAS: dict[str, Any] = {
    "ErrorMessage": _object(["error_code", "message"],
                            error_code={**_INT, "description": "Confluent's error code; its "
                                        "first three digits are the HTTP status"},
                            message=_string("What went wrong")),
    "Problem": {"type": "object", "description": "RFC 9457 problem+json, as the service's "
                "own errors (see the flatavro API's document)",
                "required": ["type", "title", "status", "code"],
                "properties": {"type": {"type": "string"}, "title": {"type": "string"},
                               "status": {"type": "integer"}, "code": {"type": "string"}}},
    "SchemaReference": _REFERENCE,
    "SchemaRequest": _object(["schema"], schema=_SCHEMA_TEXT, schemaType=_SCHEMA_TYPE,
                             references=_REFERENCES),
    "RegisterSchemaRequest": _object(
        ["schema"], schema=_SCHEMA_TEXT, schemaType=_SCHEMA_TYPE, references=_REFERENCES,
        id={**_INT, "description": "IMPORT mode: the id to keep (-1 or absent: none)"},
        version={**_INT, "description": "The version to create (0, -1 or absent: the next "
                                        "one; any other only in IMPORT mode)"}),
    "RegisterSchemaResponse": _object(
        ["id"], id={**_INT, "description": "The global schema id"},
        version={**_INT, "description": "The subject version"},
        schema=_string("The schema as stored")),
    "Schema": _object(["subject", "version", "id", "schema"], subject=_string("The subject"),
                      version=_INT, id=_INT, schema=_string("The schema as stored")),
    "Schemas": {"type": "array", "items": {"$ref": "#/components/schemas/Schema"}},
    "SchemaString": _object(["schema"], schema=_string("The schema as stored"),
                            maxId={**_INT, "description": "With `fetchMaxId=true`: the "
                                   "highest id handed out (deleted ones included)"}),
    "AvroSchema": {"description": "An Avro schema as JSON: an object, an array (a union) or "
                                  "a string (a primitive type)"},
    "SchemaTypes": {"type": "array", "items": {"type": "string", "enum": ["AVRO"]}},
    "SubjectVersion": _object(["subject", "version"], subject=_string("The subject"),
                              version=_INT),
    "SubjectVersions": {"type": "array",
                        "items": {"$ref": "#/components/schemas/SubjectVersion"}},
    "Subjects": {"type": "array", "items": {"type": "string"}},
    "Versions": {"type": "array", "items": _INT},
    "Version": {**_INT, "description": "The version deleted"},
    "Ids": {"type": "array", "items": _INT},
    "Empty": {"type": "object", "maxProperties": 0},
    "CompatibilityCheckResponse": _object(
        ["is_compatible"], is_compatible={"type": "boolean"},
        messages={"type": "array", "items": {"type": "string"},
                  "description": "verbose=true: Confluent's reasons"}),
    "Config": _object(["compatibilityLevel"],
                      compatibilityLevel=_string("The level", enum=_LEVELS)),
    "ConfigUpdateRequest": _object(["compatibility"], compatibility=_string(
        "The level (any case)", examples=["FULL"])),
    "ConfigUpdated": _object(["compatibility"],
                             compatibility=_string("The level set", enum=_LEVELS)),
    "Mode": _object(["mode"], mode=_string("The mode", enum=_MODES)),
    "ModeUpdateRequest": _object(["mode"], mode=_string("The mode (any case)",
                                                        examples=["READONLY"])),
}


def _query(name: str, description: str, *, schema: dict[str, Any] | None = None
           ) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "description": description,
            "schema": schema or {"type": "boolean", "default": False}}


def _path(name: str, description: str, *, schema: dict[str, Any], example: Any
          ) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "description": description,
            "schema": schema, "example": example}


PARAMETERS: dict[str, Any] = {
    "subject": _path("subject", "The subject (TopicNameStrategy: `<topic>-key`, "
                     "`<topic>-value`); control characters are refused (42208)",
                     schema={"type": "string", "pattern": "^[^\\u0000-\\u001f\\u007f]+$"},
                     example="tidb_shop_orders-value"),
    "version": _path("version", "1, 2, ... up to 2^31-1, or `latest` (`-1` too); any other "
                     "number: 42202",
                     schema={"type": "string", "pattern": "^(latest|-1|[0-9]+)$"},
                     example="latest"),
    "id": _path("id", "The global schema id (a 32-bit integer, as Confluent's)",
                schema={"type": "integer", "minimum": 1, "maximum": 2**31 - 1}, example=1),
    "subjectPrefix": _query("subjectPrefix", "Only subjects starting with this",
                            schema={"type": "string"}),
    "latestOnly": _query("latestOnly", "Only each subject's latest version"),
    "deletedSubjects": _query("deleted", "Include soft-deleted subjects"),
    "deletedVersions": _query("deleted", "Include soft-deleted versions"),
    "deletedVersion": _query("deleted", "Find a soft-deleted version too"),
    "deletedOnly": _query("deletedOnly", "Only the soft-deleted ones"),
    "lookupDeleted": _query("deleted", "Find soft-deleted versions too (Confluent's "
                            "lookupDeletedSchema)"),
    "permanent": _query("permanent", "Hard delete (after a soft delete)"),
    "normalize": _query("normalize", "Use Confluent's normalized form of the schema"),
    "verbose": _query("verbose", "List the reasons of an incompatibility"),
    "defaultToGlobal": _query("defaultToGlobal", "Without a setting of its own, answer the "
                              "global one"),
    "force": _query("force", "Set IMPORT although subjects exist"),
    "forceRegister": _query("force", "Register without checking compatibility"),
    "fetchMaxId": _query("fetchMaxId", "Also answer `maxId`, the highest id handed out"),
    "deletedAsNegative": _query("deletedAsNegative", "Include soft-deleted versions, as "
                                "negative numbers"),
    "offset": _query("offset", "Skip this many items",
                     schema={"type": "integer", "minimum": 0, "default": 0}),
    "limit": _query("limit", "At most this many items (negative: all)",
                    schema={"type": "integer", "default": -1}),
}
