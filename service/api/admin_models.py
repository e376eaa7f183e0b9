"""Models of the registry admin console: subject overviews, diffs, modes, topic and id views.

Each carries a realistic example, since the docs page is where registry admins read them.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from service.api.models import AvroJson, CompatibilityOut, DeletedOut, IncompatibilityOut
from service.registry.compatibility import CompatibilityLevel
from service.registry.model import RegistryMode

__all__ = ["VersionRefOut", "LevelSettingOut", "ModeSettingOut", "SubjectOut", "ModeIn",
           "ModeOut", "ModeRemovedOut", "CompatibilityRemovedOut", "FieldChangeOut",
           "DiffVerdictOut", "VersionDiffOut", "TopicDeletedOut", "SchemaUseOut",
           "SchemaByIdOut"]

_VALUE = "tidb_shop_orders-value"
_ORDERS_V1 = {"type": "record", "name": "orders", "namespace": "default.shop", "fields": [
    {"name": "id", "type": {"type": "long", "connect.parameters": {"tidb_type": "BIGINT"}}}]}
_ORDERS_V1_TEXT = ('{"type":"record","name":"orders","namespace":"default.shop","fields":'
                   '[{"name":"id","type":{"type":"long","connect.parameters":'
                   '{"tidb_type":"BIGINT"}}}]}')
_QTY = ("column `qty` is new and has no default; readers of the new schema cannot read data "
        "written with version 1, which lacks it")


def _examples(*examples: dict[str, Any]) -> ConfigDict:
    return ConfigDict(json_schema_extra={"examples": list(examples)})


class VersionRefOut(BaseModel):
    """A version of a subject and the global id of its schema."""

    model_config = _examples({"version": 2, "id": 7})

    version: int
    id: int


class LevelSettingOut(BaseModel):
    """A compatibility level as configured on the subject, and as in effect."""

    model_config = _examples({"configured": None, "effective": "BACKWARD"},
                             {"configured": "FULL_TRANSITIVE", "effective": "FULL_TRANSITIVE"})

    configured: CompatibilityLevel | None = Field(
        description="Set on the subject itself; null: the global level applies")
    effective: CompatibilityLevel = Field(description="The level registrations meet")


class ModeSettingOut(BaseModel):
    """A mode as configured on the subject, and as in effect."""

    model_config = _examples({"configured": None, "effective": "READWRITE"})

    configured: RegistryMode | None = Field(
        description="Set on the subject itself; null: the global mode applies")
    effective: RegistryMode


class SubjectOut(BaseModel):
    """What the registry holds under one subject, and the rules it applies there."""

    model_config = _examples({
        "subject": _VALUE, "versions": [1, 2, 3], "deleted_versions": [2],
        "latest": {"version": 3, "id": 9},
        "compatibility": {"configured": None, "effective": "BACKWARD"},
        "mode": {"configured": "READONLY", "effective": "READONLY"}})

    subject: str
    versions: list[int] = Field(description="Ascending; soft-deleted ones only with "
                                            "`deleted=true`")
    deleted_versions: list[int] = Field(
        description="Which of `versions` are soft-deleted (empty without `deleted=true`)")
    latest: VersionRefOut | None = Field(
        description="The newest live version; null when every version is soft-deleted")
    compatibility: LevelSettingOut
    mode: ModeSettingOut


class ModeIn(BaseModel):
    """A registry mode: READONLY refuses writes, IMPORT takes registrations with their ids."""

    model_config = ConfigDict(extra="forbid")

    mode: RegistryMode = Field(examples=["READONLY"])


class ModeOut(BaseModel):
    """A subject's (or with `subject` null, the registry's) mode: in effect, and configured."""

    model_config = _examples(
        {"subject": _VALUE, "mode": "READONLY", "configured": "READONLY"},
        {"subject": None, "mode": "READWRITE", "configured": None})

    subject: str | None
    mode: RegistryMode = Field(description="The mode in effect")
    configured: RegistryMode | None = Field(
        description="The mode set on the subject (on the registry for the global mode); "
                    "null: none is set, so the global mode (the default READWRITE) applies")


class ModeRemovedOut(ModeOut):
    """A subject's mode once its own was removed (the global mode applies again)."""

    model_config = _examples({"subject": _VALUE, "mode": "READWRITE", "configured": None,
                              "removed": "READONLY"})

    removed: RegistryMode = Field(description="The subject's mode that was removed")


class CompatibilityRemovedOut(CompatibilityOut):
    """A subject's level once its own was removed (the global level applies again)."""

    model_config = _examples({"subject": _VALUE, "compatibility": "BACKWARD",
                              "configured": None, "removed": "FULL_TRANSITIVE"})

    removed: str = Field(description="The subject's level that was removed")


class FieldChangeOut(BaseModel):
    """One difference between two versions, naming its column."""

    model_config = _examples(
        {"change": "added", "column": "qty", "before": None,
         "after": {"name": "qty", "type": {"type": "int",
                                           "connect.parameters": {"tidb_type": "INT"}}},
         "message": "column `qty` was added: int [INT], NOT NULL, no default"},
        {"change": "default_changed", "column": "note", "before": {"default": None},
         "after": None, "message": "column `note`: default null -> no default"})

    change: str = Field(description="`added`, `removed`, `type_changed`, `default_changed`, "
                                    "`nullability_changed`, or `schema_changed` (not a "
                                    "column: the record's name, a non-record schema)")
    column: str | None = Field(description="The column (field); null for `schema_changed`")
    before: Any = Field(description="The old state: the field (`removed`), its type without "
                                    "null, nullable or not, `{\"default\": value}` or null "
                                    "for no default")
    after: Any = Field(description="The new state, alike (the field for `added`)")
    message: str


class DiffVerdictOut(BaseModel):
    """Whether `to` may follow `from` under the subject's level, with every reason if not
    (as `/v1/tables/check` explains them)."""

    compatibility_level: CompatibilityLevel = Field(description="The subject's effective level")
    compatible: bool
    incompatibilities: list[IncompatibilityOut]


class VersionDiffOut(BaseModel):
    """Two versions of a subject compared column by column."""

    model_config = ConfigDict(populate_by_name=True, json_schema_extra={"examples": [{
        "subject": _VALUE, "from": {"version": 1, "id": 1}, "to": {"version": 2, "id": 3},
        "changes": [{"change": "added", "column": "qty", "before": None,
                     "after": {"name": "qty", "type": {
                         "type": "int", "connect.parameters": {"tidb_type": "INT"}}},
                     "message": "column `qty` was added: int [INT], NOT NULL, no default"}],
        "compatibility": {
            "compatibility_level": "BACKWARD", "compatible": False, "incompatibilities": [{
                "type": "READER_FIELD_MISSING_DEFAULT_VALUE", "location": "/fields/5",
                "message": _QTY, "version": 1, "direction": "new_reads_old"}]}}]})

    subject: str
    from_: VersionRefOut = Field(alias="from")
    to: VersionRefOut
    changes: list[FieldChangeOut] = Field(description="Empty when the schemas are the same")
    compatibility: DiffVerdictOut


class TopicDeletedOut(BaseModel):
    """What deleting a topic's subjects removed."""

    model_config = _examples({
        "topic": "tidb_shop_orders", "permanent": False, "subjects": [
            {"subject": "tidb_shop_orders-key", "versions": [1], "permanent": False},
            {"subject": _VALUE, "versions": [1, 2], "permanent": False}]})

    topic: str
    permanent: bool
    subjects: list[DeletedOut]


class SchemaUseOut(BaseModel):
    """A subject version that holds a schema."""

    subject: str = Field(examples=[_VALUE])
    version: int = Field(examples=[1])


class SchemaByIdOut(BaseModel):
    """A schema by its global id, and the subject versions that use it."""

    model_config = ConfigDict(populate_by_name=True, json_schema_extra={"examples": [{
        "id": 1, "schema": _ORDERS_V1, "schema_text": _ORDERS_V1_TEXT,
        "versions": [{"subject": _VALUE, "version": 1}]}]})

    id: int
    schema_: AvroJson = Field(alias="schema", description="The schema as JSON (null when "
                                                          "the text is not JSON)")
    schema_text: str = Field(description="The registry's exact string")
    versions: list[SchemaUseOut] = Field(
        description="(subject, version) pairs using the id; soft-deleted ones only with "
                    "`deleted=true`")
