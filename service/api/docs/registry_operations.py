"""Every operation of the embedded registry's Confluent REST API, declared once: parameters,
request examples and the answers it gives (by example name, whose prefix is the HTTP status),
in the order the docs page lists them. `registry_openapi` builds the document from them."""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass

__all__ = ["Operation", "OPERATIONS"]


@dataclass(frozen=True)
class Operation:
    """One documented operation: its answers are example names from
    `registry_examples.ANSWERS`, its requests from `registry_examples.REQUESTS`."""

    method: str
    path: str
    _: KW_ONLY
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


_S, _SV = "/subjects/{subject}", "/subjects/{subject}/versions/{version}"
_PAGE = ("offset", "limit")
_SCHEMA_BODY = ("schema_v1", "schema_v2", "schema_key", "schema_incompatible",
                "schema_bad_default", "schema_missing_reference", "schema_protobuf")
_BAD_BODY = ("400-invalid_json", "413-body_too_large")
_INVALID = ("422-invalid_schema", "422-missing_reference", "422-unsupported_schema_type")

OPERATIONS: tuple[Operation, ...] = (
    Operation("get", "/", operation_id="getRoot", tag="server", summary="The registry's root",
              description="An empty object: Confluent clients call it to see the registry is "
                          "there.", answers=("200-root",), returns="Empty"),
    Operation("get", "/schemas", operation_id="listSchemas", tag="schemas", summary="List schemas",
              description="Every version of every subject (subject, version, id, schema), by "
                          "subject then version; `subjectPrefix` narrows the subjects, "
                          "`latestOnly` keeps each subject's latest version, `deleted` adds "
                          "soft-deleted versions.",
              answers=("200-schemas", "200-schemas_latest", "422-invalid_offset"),
              parameters=("subjectPrefix", "latestOnly", "deletedVersions", *_PAGE),
              returns="Schemas"),
    Operation("get", "/schemas/types", operation_id="listSchemaTypes", tag="schemas",
              summary="Schema types served",
              description="`AVRO` only (Confluent's registry also serves JSON and PROTOBUF).",
              answers=("200-schema_types",), returns="SchemaTypes"),
    Operation("get", "/schemas/ids/{id}", operation_id="getSchemaById", tag="schemas",
              summary="A schema by its id",
              description="The schema string registered under the global id. Ids are never "
                          "reused: after a hard delete of every version using it, the id answers "
                          "40403. `fetchMaxId=true` adds `maxId`, the highest id handed out.",
              answers=("200-schema_by_id", "404-schema_not_found"), parameters=("id", "fetchMaxId"),
              returns="SchemaString"),
    Operation("get", "/schemas/ids/{id}/schema", operation_id="getSchemaTextById", tag="schemas",
              summary="A schema by its id, unwrapped",
              description="The schema itself as JSON (not in a `schema` string).",
              answers=("200-schema_text", "404-schema_not_found"), parameters=("id",),
              returns="AvroSchema"),
    Operation("get", "/schemas/ids/{id}/subjects", operation_id="listSubjectsOfId", tag="schemas",
              summary="The subjects using an id",
              description="Subjects with a version registered under the id; `deleted` adds "
                          "soft-deleted versions.",
              answers=("200-id_subjects", "404-schema_not_found"),
              parameters=("id", "deletedVersions", *_PAGE), returns="Subjects"),
    Operation("get", "/schemas/ids/{id}/versions", operation_id="listVersionsOfId", tag="schemas",
              summary="The subject versions using an id",
              description="Subject and version of each use of the id; `deleted` adds soft-deleted "
                          "versions.", answers=("200-id_versions", "404-schema_not_found"),
              parameters=("id", "deletedVersions", *_PAGE), returns="SubjectVersions"),
    Operation("get", "/subjects", operation_id="listSubjects", tag="subjects",
              summary="List subjects",
              description="Subjects with live versions, sorted; `deleted` adds soft-deleted "
                          "subjects, `deletedOnly` lists only those, `subjectPrefix` narrows the "
                          "list.",
              answers=("200-subjects", "200-subjects_prefix", "200-subjects_deleted_only",
                       "422-invalid_offset"),
              parameters=("subjectPrefix", "deletedSubjects", "deletedOnly", *_PAGE),
              returns="Subjects"),
    Operation("post", _S, operation_id="lookupSchema", tag="subjects",
              summary="Is this schema registered under the subject?",
              description="The version (subject, version, id, schema) registered with this "
                          "schema, compared in the registry's stored form; `normalize` compares "
                          "normalized forms, `deleted` finds soft-deleted versions too "
                          "(Confluent's lookupDeletedSchema).",
              answers=("200-found", "404-subject_not_found", "404-schema_not_in_subject",
                       *_BAD_BODY, "422-unsupported_schema_type"),
              parameters=("subject", "normalize", "lookupDeleted"), body="SchemaRequest",
              requests=("schema_v1", "schema_incompatible"), returns="Schema"),
    Operation("delete", _S, operation_id="deleteSubject", tag="subjects",
              summary="Delete a subject",
              description="Soft-deletes every version (the ids stay readable); with "
                          "`permanent=true`, hard-deletes a subject soft-deleted first. Returns "
                          "the versions deleted.",
              answers=("200-subject_deleted", "200-subject_purged", "404-subject_not_found",
                       "404-subject_soft_deleted", "404-subject_not_soft_deleted", "422-read_only"),
              parameters=("subject", "permanent"), write=True, returns="Versions"),
    Operation("get", f"{_S}/versions", operation_id="listVersions", tag="subjects",
              summary="List a subject's versions",
              description="Live version numbers, ascending; `deleted` adds soft-deleted ones, "
                          "`deletedOnly` lists only those, `deletedAsNegative` adds them as "
                          "negative numbers.",
              answers=("200-versions", "200-versions_deleted", "200-versions_deleted_only",
                       "404-subject_not_found"),
              parameters=("subject", "deletedVersions", "deletedOnly", "deletedAsNegative", *_PAGE),
              returns="Versions"),
    Operation("post", f"{_S}/versions", operation_id="registerSchema", tag="subjects",
              summary="Register a schema",
              description="Registers the schema as the subject's next version, if the subject's "
                          "compatibility level allows it (409 explains why not); registering it "
                          "again returns the same id and version. The schema is validated "
                          "(defaults included) and stored in Java Avro's compact form; "
                          "`normalize=true` stores Confluent's normalized form. In IMPORT mode "
                          "the body names the schema's `id` (and may name its `version`). "
                          "`force=true` skips the compatibility check.",
              answers=("200-registered", "200-imported", "409-incompatible_schema", *_BAD_BODY,
                       *_INVALID, "422-read_only", "422-import_needs_id"),
              parameters=("subject", "normalize", "forceRegister"), body="RegisterSchemaRequest",
              requests=(*_SCHEMA_BODY, "import_v1"), write=True, returns="RegisterSchemaResponse"),
    Operation("get", _SV, operation_id="getVersion", tag="subjects",
              summary="One version of a subject",
              description="Subject, version, id and schema string; `latest` (or -1) is the newest "
                          "live version; `deleted` finds soft-deleted versions too.",
              answers=("200-version", "404-subject_not_found", "404-version_not_found",
                       "422-invalid_version"), parameters=("subject", "version", "deletedVersion"),
              returns="Schema"),
    Operation("delete", _SV, operation_id="deleteVersion", tag="subjects",
              summary="Delete a version",
              description="Soft-deletes the version; with `permanent=true`, hard-deletes a "
                          "version soft-deleted first. Returns the version number.",
              answers=("200-version_deleted", "404-subject_not_found", "404-version_not_found",
                       "404-version_soft_deleted", "404-version_not_soft_deleted",
                       "422-invalid_version", "422-read_only"),
              parameters=("subject", "version", "permanent"), write=True, returns="Version"),
    Operation("get", f"{_SV}/schema", operation_id="getVersionSchema", tag="subjects",
              summary="One version's schema, unwrapped", description="The schema itself as JSON.",
              answers=("200-version_schema", "404-subject_not_found", "404-version_not_found",
                       "422-invalid_version"), parameters=("subject", "version", "deletedVersion"),
              returns="AvroSchema"),
    Operation("get", f"{_SV}/referencedby", operation_id="listReferencedBy", tag="subjects",
              summary="Schemas referencing a version",
              description="The ids of schemas that reference this version: always empty here, as "
                          "the embedded registry stores no references.",
              answers=("200-referenced_by", "404-subject_not_found", "404-version_not_found",
                       "422-invalid_version"),
              parameters=("subject", "version", "deletedVersions", *_PAGE), returns="Ids"),
    Operation("post", "/compatibility/subjects/{subject}/versions/{version}",
              operation_id="checkCompatibilityWithVersion", tag="compatibility",
              summary="Check a schema against one version",
              description="Whether the schema could read and be read as the subject's level "
                          "requires, checked against one version (whatever the level's "
                          "transitivity); `verbose=true` lists Confluent's reasons (an invalid "
                          "schema then answers 200 with the reason).",
              answers=("200-compatible", "200-incompatible_verbose", "404-version_not_found",
                       *_BAD_BODY, *_INVALID, "422-invalid_version"),
              parameters=("subject", "version", "verbose", "normalize"), body="SchemaRequest",
              requests=("schema_incompatible", "schema_v2"), returns="CompatibilityCheckResponse"),
    Operation("post", "/compatibility/subjects/{subject}/versions",
              operation_id="checkCompatibility", tag="compatibility",
              summary="Check a schema against the subject",
              description="Whether registering the schema would be accepted: checked against the "
                          "latest version, or all of them for a transitive level; `verbose=true` "
                          "lists Confluent's reasons.",
              answers=("200-compatible", "200-incompatible_verbose", *_BAD_BODY, *_INVALID),
              parameters=("subject", "verbose", "normalize"), body="SchemaRequest",
              requests=("schema_v2", "schema_incompatible"), returns="CompatibilityCheckResponse"),
    Operation("get", "/config", operation_id="getGlobalLevel", tag="config",
              summary="The global compatibility level",
              description="The level of every subject without its own (BACKWARD until set).",
              answers=("200-level",), returns="Config"),
    Operation("put", "/config", operation_id="setGlobalLevel", tag="config",
              summary="Set the global compatibility level",
              description="One of NONE, BACKWARD, BACKWARD_TRANSITIVE, FORWARD, "
                          "FORWARD_TRANSITIVE, FULL, FULL_TRANSITIVE (any case).",
              answers=("200-level_set", *_BAD_BODY, "422-invalid_level"),
              body="ConfigUpdateRequest", requests=("level_full", "level_invalid"), write=True,
              returns="ConfigUpdated"),
    Operation("delete", "/config", operation_id="deleteGlobalLevel", tag="config",
              summary="Reset the global compatibility level",
              description="The default (BACKWARD) applies again; returns the level the registry "
                          "had.", answers=("200-level_removed",), write=True, returns="Config"),
    Operation("get", "/config/{subject}", operation_id="getSubjectLevel", tag="config",
              summary="A subject's compatibility level",
              description="The subject's own level (40408 when it has none); with "
                          "`defaultToGlobal=true`, the level in effect.",
              answers=("200-subject_level", "200-level", "404-subject_level_not_found"),
              parameters=("subject", "defaultToGlobal"), returns="Config"),
    Operation("put", "/config/{subject}", operation_id="setSubjectLevel", tag="config",
              summary="Set a subject's compatibility level",
              description="Overrides the global level for the subject.",
              answers=("200-subject_level_set", *_BAD_BODY, "422-invalid_level"),
              parameters=("subject",), body="ConfigUpdateRequest",
              requests=("level_none", "level_invalid"), write=True, returns="ConfigUpdated"),
    Operation("delete", "/config/{subject}", operation_id="deleteSubjectLevel", tag="config",
              summary="Remove a subject's compatibility level",
              description="The global level applies to the subject again; returns the level it "
                          "had (40401 when it had none, as Confluent answers).",
              answers=("200-subject_level_removed", "404-subject_not_found"),
              parameters=("subject",), write=True, returns="Config"),
    Operation("get", "/mode", operation_id="getGlobalMode", tag="mode", summary="The global mode",
              description="READWRITE until set.", answers=("200-mode",), returns="Mode"),
    Operation("put", "/mode", operation_id="setGlobalMode", tag="mode",
              summary="Set the global mode",
              description="READWRITE, READONLY (every write refused, 42205) or IMPORT "
                          "(registrations name their ids); IMPORT needs an empty registry, or "
                          "`force=true`.",
              answers=("200-mode_import", *_BAD_BODY, "422-invalid_mode", "422-import_needs_empty"),
              parameters=("force",), body="ModeUpdateRequest",
              requests=("mode_import", "mode_invalid"), write=True, returns="Mode"),
    Operation("get", "/mode/{subject}", operation_id="getSubjectMode", tag="mode",
              summary="A subject's mode",
              description="The subject's own mode (40409 when it has none); with "
                          "`defaultToGlobal=true`, the mode in effect.",
              answers=("200-mode", "404-subject_mode_not_found"),
              parameters=("subject", "defaultToGlobal"), returns="Mode"),
    Operation("put", "/mode/{subject}", operation_id="setSubjectMode", tag="mode",
              summary="Set a subject's mode",
              description="Overrides the global mode for the subject (READONLY: freeze it).",
              answers=("200-mode_set", *_BAD_BODY, "422-invalid_mode"),
              parameters=("subject", "force"), body="ModeUpdateRequest",
              requests=("mode_readonly", "mode_invalid"), write=True, returns="Mode"),
    Operation("delete", "/mode/{subject}", operation_id="deleteSubjectMode", tag="mode",
              summary="Remove a subject's mode",
              description="The global mode applies to the subject again; returns the mode it had "
                          "(40401 when it had none, as Confluent answers).",
              answers=("200-mode_removed", "404-subject_not_found"), parameters=("subject",),
              write=True, returns="Mode"),
)
"""Every operation of the embedded registry's REST app, in the page's order."""
