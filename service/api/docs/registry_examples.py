"""Example requests and answers of the embedded registry's Confluent API, for its OpenAPI
document.

They tell one story in order: the value subject of ``shop.orders`` gets two versions and the
key subject one; a change without a default is refused; levels and modes are set and removed;
versions and subjects are deleted, then one schema is imported with its id. The answers are
what the embedded registry answers at that point of the story (ids 1, 2, 3 in registration
order), and ``tests/api/test_registry_openapi.py`` replays the story to prove it. The schemas
are TiCDC flat-avro ones (`connect.parameters` name the TiDB type); the registry stores Java
Avro's compact ``Schema.toString()`` form (``"default"`` after ``"type"``), whatever the
spacing and member order sent.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["SUBJECT", "KEY_SUBJECT", "OTHER_SUBJECT", "REQUESTS", "ANSWERS", "UNAUTHORIZED",
           "example"]

SUBJECT, KEY_SUBJECT = "tidb_shop_orders-value", "tidb_shop_orders-key"
OTHER_SUBJECT = "tidb_shop_refunds-value"  # never registered


def _typed(avro_type: str, tidb_type: str) -> dict[str, Any]:
    return {"type": avro_type, "connect.parameters": {"tidb_type": tidb_type}}


def _record(*fields: dict[str, Any]) -> dict[str, Any]:
    return {"type": "record", "name": "orders", "namespace": "default.shop",
            "fields": list(fields)}


def _compact(schema: dict[str, Any]) -> str:
    return json.dumps(schema, separators=(",", ":"))


_ID = {"name": "id", "type": _typed("long", "BIGINT")}
_SKU = {"name": "sku", "type": _typed("string", "TEXT")}
_NOTE_SENT = {"default": None, "name": "note", "type": ["null", _typed("string", "TEXT")]}
_NOTE = {"name": "note", "type": ["null", _typed("string", "TEXT")], "default": None}
_QTY = {"name": "qty", "type": _typed("int", "INT")}  # no default: BACKWARD refuses it

V1, V2, KEY = _record(_ID, _SKU), _record(_ID, _SKU, _NOTE), _record(_ID)
V1_TEXT, V2_TEXT, KEY_TEXT = _compact(V1), _compact(V2), _compact(KEY)
_INCOMPATIBLE = _record(_ID, _SKU, _NOTE_SENT, _QTY)
_BAD_DEFAULT = _record({"name": "note", "type": "string", "default": None})
_REFERENCE = {"name": "default.shop.customer", "subject": "tidb_shop_customers-value",
              "version": 1}
_DIFFERENCE = ("{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE', description:'The field 'qty' "
               "at path '/fields/3' in the new schema has no default value and is missing in "
               "the old schema', additionalInfo:'qty'}")
_VERBOSE = [_DIFFERENCE, "{oldSchemaVersion: 2}", f"{{oldSchema: '{V2_TEXT}'}}",
            "{validateFields: 'false', compatibility: 'BACKWARD'}"]


def example(summary: str, value: Any) -> dict[str, Any]:
    """An OpenAPI Example Object."""
    return {"summary": summary, "value": value}


def _error(code: int, message: str) -> Any:
    return {"error_code": code, "message": message}


REQUESTS: dict[str, dict[str, Any]] = {
    "schema_v1": example("Version 1 of shop.orders' value schema (as a client sends it)",
                         {"schema": json.dumps(_record(_ID, _SKU))}),
    "schema_v2": example("Version 2: adds the nullable column `note` (default null)",
                         {"schema": json.dumps(_record(_ID, _SKU, _NOTE_SENT))}),
    "schema_key": example("The key schema (the primary key `id`)",
                          {"schema": json.dumps(KEY)}),
    "schema_incompatible": example("Adds `qty INT NOT NULL`: a column with no default",
                                   {"schema": json.dumps(_INCOMPATIBLE)}),
    "schema_bad_default": example("A default that does not match its type",
                                  {"schema": json.dumps(_BAD_DEFAULT)}),
    "schema_missing_reference": example("A reference to a subject that does not exist", {
        "schema": json.dumps(_record(_ID, _SKU)), "references": [_REFERENCE]}),
    "schema_protobuf": example("A schema type the registry does not serve", {
        "schema": json.dumps(_record(_ID, _SKU)), "schemaType": "PROTOBUF"}),
    "import_v1": example("IMPORT mode: version 1 with the id it had in the source registry", {
        "schema": json.dumps(_record(_ID, _SKU)), "id": 100, "version": 1}),
    "level_full": example("FULL for every subject without its own",
                          {"compatibility": "FULL"}),
    "level_none": example("NONE: no checks for this subject", {"compatibility": "NONE"}),
    "level_invalid": example("Not a level", {"compatibility": "SIDEWAYS"}),
    "mode_readonly": example("Freeze: writes are refused", {"mode": "READONLY"}),
    "mode_import": example("IMPORT: register schemas with their ids", {"mode": "IMPORT"}),
    "mode_invalid": example("Not a mode", {"mode": "SLEEPING"}),
}
"""Request bodies by name (``components/examples``)."""

_V1_AT_1 = {"subject": SUBJECT, "version": 1, "id": 1, "schema": V1_TEXT}
_V2_AT_2 = {"subject": SUBJECT, "version": 2, "id": 2, "schema": V2_TEXT}
_KEY_AT_3 = {"subject": KEY_SUBJECT, "version": 1, "id": 3, "schema": KEY_TEXT}
_SOFT = "was soft deleted.Set permanent=true to delete permanently"  # sic, as Confluent
_NOT_FIRST = "was not deleted first before being permanently deleted"
_NO_LEVEL = "does not have subject-level compatibility configured"
_NO_MODE = "does not have subject-level mode configured"

ANSWERS: dict[str, dict[str, Any]] = {
    "200-root": example("An empty object (Confluent's root)", {}),
    "200-schema_types": example("Avro only", ["AVRO"]),
    "200-registered": example("Version 1 got the global id 1; the schema as stored",
                              {"id": 1, "version": 1, "schema": V1_TEXT}),
    "200-imported": example("Imported with its id", {"id": 100, "version": 1,
                                                     "schema": V1_TEXT}),
    "200-schemas": example("Every live version of every subject", [
        _KEY_AT_3, _V1_AT_1, _V2_AT_2]),
    "200-schemas_latest": example("subjectPrefix=tidb_shop_orders-v&latestOnly=true",
                                  [_V2_AT_2]),
    "200-schema_by_id": example("The schema string of id 1", {"schema": V1_TEXT}),
    "200-schema_text": example("The schema itself, not wrapped", V1),
    "200-id_subjects": example("The subjects using id 1", [SUBJECT]),
    "200-id_versions": example("The subject versions using id 1",
                               [{"subject": SUBJECT, "version": 1}]),
    "200-subjects": example("Every live subject", [KEY_SUBJECT, SUBJECT]),
    "200-subjects_prefix": example("subjectPrefix=tidb_shop_orders-v", [SUBJECT]),
    "200-subjects_deleted_only": example("deletedOnly=true: soft-deleted subjects only",
                                         [SUBJECT]),
    "200-found": example("The version registered with this schema", _V1_AT_1),
    "200-versions": example("Live versions, ascending", [1, 2]),
    "200-versions_deleted": example("deleted=true: soft-deleted ones too", [1, 2]),
    "200-versions_deleted_only": example("deletedOnly=true: soft-deleted ones only", [2]),
    "200-version": example("Version 2", _V2_AT_2),
    "200-version_schema": example("The schema of the latest version, not wrapped", V2),
    "200-referenced_by": example("The ids of schemas referencing it (none)", []),
    "200-compatible": example("Compatible", {"is_compatible": True}),
    "200-incompatible_verbose": example("verbose=true: Confluent's reasons", {
        "is_compatible": False, "messages": _VERBOSE}),
    "200-level": example("The level", {"compatibilityLevel": "BACKWARD"}),
    "200-level_set": example("The level set", {"compatibility": "FULL"}),
    "200-level_removed": example("The level the registry had (the default applies again)",
                                 {"compatibilityLevel": "FULL"}),
    "200-subject_level_set": example("The subject's level set", {"compatibility": "NONE"}),
    "200-subject_level": example("The subject's own level", {"compatibilityLevel": "NONE"}),
    "200-subject_level_removed": example("The level the subject had (the global one applies "
                                         "again)", {"compatibilityLevel": "NONE"}),
    "200-mode": example("The mode", {"mode": "READWRITE"}),
    "200-mode_set": example("The mode set", {"mode": "READONLY"}),
    "200-mode_import": example("IMPORT set (force=true: subjects existed)", {"mode": "IMPORT"}),
    "200-mode_removed": example("The mode the subject had (the global one applies again)",
                                {"mode": "READONLY"}),
    "200-version_deleted": example("The version deleted", 2),
    "200-subject_deleted": example("The versions soft-deleted", [1]),
    "200-subject_purged": example("permanent=true: every version hard-deleted", [1, 2]),
    "400-invalid_json": example("The body is not JSON", _error(
        400, "Unrecognized JSON at position 23: trailing comma is not allowed")),
    "404-subject_not_found": example("40401: no such subject", _error(
        40401, f"Subject '{OTHER_SUBJECT}' not found.")),
    "404-version_not_found": example("40402: no such version", _error(
        40402, "Version 7 not found.")),
    "404-schema_not_found": example("40403: no schema has this id (or it was hard-deleted)",
                                    _error(40403, "Schema 99 not found")),
    "404-schema_not_in_subject": example("40403: the subject has no version with this schema",
                                         _error(40403, "Schema not found")),
    "404-subject_soft_deleted": example("40404: soft-deleted already", _error(
        40404, f"Subject '{SUBJECT}' {_SOFT}")),
    "404-subject_not_soft_deleted": example("40405: a hard delete needs a soft delete first",
                                            _error(40405, f"Subject '{KEY_SUBJECT}' "
                                                          f"{_NOT_FIRST}")),
    "404-version_soft_deleted": example("40406: soft-deleted already", _error(
        40406, f"Subject '{SUBJECT}' Version 2 {_SOFT}")),
    "404-version_not_soft_deleted": example("40407: a hard delete needs a soft delete first",
                                            _error(40407, f"Subject '{SUBJECT}' Version 1 "
                                                          f"{_NOT_FIRST}")),
    "404-subject_level_not_found": example("40408: no level of its own", _error(
        40408, f"Subject '{SUBJECT}' {_NO_LEVEL}")),
    "404-subject_mode_not_found": example("40409: no mode of its own", _error(
        40409, f"Subject '{SUBJECT}' {_NO_MODE}")),
    "409-incompatible_schema": example("40901: refused by the subject's level", _error(
        40901, f"Schema being registered is incompatible with an earlier schema for subject "
               f"\"{SUBJECT}\", details: [{', '.join(_VERBOSE)}]")),
    "413-body_too_large": example("Over FLATAVRO_MAX_BODY_BYTES (the service answers)", {
        "code": "body_too_large",
        "message": "the request body is over the limit of 16777216 bytes "
                   "(FLATAVRO_MAX_BODY_BYTES)",
        "limit": 16777216, "type": "urn:flatavro:problem:body_too_large",
        "title": "Body too large", "status": 413,
        "detail": "the request body is over the limit of 16777216 bytes "
                  "(FLATAVRO_MAX_BODY_BYTES)",
        "instance": f"/registry/subjects/{SUBJECT}/versions"}),
    "422-invalid_schema": example("42201: a default that does not match its type", _error(
        42201, "Invalid schema: Invalid default for field note: null not a \"string\" "
               "(record default.shop.orders, at /fields/0/default)")),
    "422-missing_reference": example("42201: a reference that does not resolve", _error(
        42201, "Invalid schema: references[0] (name 'default.shop.customer', subject "
               "'tidb_shop_customers-value', version 1): subject 'tidb_shop_customers-value' "
               "version 1 not found")),
    "422-unsupported_schema_type": example("42201: only AVRO", _error(
        42201, "schemaType 'PROTOBUF' is not supported; only AVRO")),
    "422-invalid_version": example("42202: not a version", _error(
        42202, "The specified version '0' is not a valid version id. Allowed values are "
               "between [1, 2^31-1] and the string \"latest\"")),
    "422-invalid_level": example("42203: not a level", _error(
        42203, "Invalid compatibility level. Valid values are none, backward, forward, full, "
               "backward_transitive, forward_transitive, and full_transitive (got "
               "'SIDEWAYS')")),
    "422-invalid_mode": example("42204: not a mode", _error(
        42204, "Invalid mode 'SLEEPING'; valid: READWRITE, READONLY, IMPORT")),
    "422-read_only": example("42205: the subject is READONLY", _error(
        42205, f"Subject {SUBJECT} is in read-only mode")),
    "422-import_needs_empty": example("42205: IMPORT with subjects, without force=true",
                                      _error(42205, "Cannot import since found existing "
                                                    "subjects; pass force=true")),
    "422-import_needs_id": example("42205: in IMPORT mode a registration names its id", _error(
        42205, f"Subject {SUBJECT} is not in read-write mode; in IMPORT mode a schema is "
               "registered with an explicit \"id\"")),
    "422-invalid_offset": example("422: a negative offset", _error(
        422, "query parameter offset must be >= 0 (got -1)")),
}
"""Answers by name (``components/examples``); the name starts with the HTTP status."""

UNAUTHORIZED = example("40101: no API key (FLATAVRO_API_KEYS is set)", _error(
    40101, "this operation needs an API key (Authorization: Bearer <key> or X-API-Key: <key>)"))
"""The answer to a request without a key where one is needed (documented only then)."""
