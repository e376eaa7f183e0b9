"""Models of the registry admin console: subject overviews, version diffs, deletes (of
versions, subjects, topics) and schemas by global id.

Each carries a realistic example, since the docs page is where registry admins read them.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from service.api.models.codec import AvroJson, schema_json
from service.api.models.example_config import examples as _examples
from service.api.models.tables import IncompatibilityOut
from service.registry.compatibility import CompatibilityLevel
from service.registry.model import RegistryMode
from service.usecases.subject_overview import SchemaUses, SubjectFacts, VersionRef
from service.usecases.topic_deletion import TopicDeletion
from service.usecases.version_diff import VersionDiff

__all__ = ["VersionRefOut", "LevelSettingOut", "ModeSettingOut", "SubjectOut", "FieldChangeOut",
           "DiffVerdictOut", "VersionDiffOut", "DeletedOut", "TopicDeletedOut", "SchemaUseOut",
           "SchemaByIdOut"]

_VALUE = "tidb_shop_orders-value"
_ORDERS_V1 = {"type": "record", "name": "orders", "namespace": "default.shop", "fields": [
    {"name": "id", "type": {"type": "long", "connect.parameters": {"tidb_type": "BIGINT"}}}]}
_ORDERS_V1_TEXT = ('{"type":"record","name":"orders","namespace":"default.shop","fields":'
                   '[{"name":"id","type":{"type":"long","connect.parameters":'
                   '{"tidb_type":"BIGINT"}}}]}')
_QTY = ("column `qty` is new and has no default; readers of the new schema cannot read data "
        "written with version 1, which lacks it")


class VersionRefOut(BaseModel):
    """A version of a subject and the global id of its schema."""

    model_config = _examples({"version": 2, "id": 7})

    version: int
    id: int

    @classmethod
    def of(cls, ref: VersionRef) -> VersionRefOut:
        """The version and id of `ref`."""
        return cls(version=ref.version, id=ref.id)


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

    @classmethod
    def of(cls, facts: SubjectFacts) -> SubjectOut:
        """The response model of one subject's facts."""
        return cls(
            subject=facts.subject, versions=facts.versions,
            deleted_versions=facts.deleted_versions,
            latest=None if facts.latest is None else VersionRefOut.of(facts.latest),
            compatibility=LevelSettingOut(configured=facts.compatibility.configured,
                                          effective=facts.compatibility.effective),
            mode=ModeSettingOut(configured=facts.mode.configured, effective=facts.mode.effective))


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

    model_config = _examples({
        "subject": _VALUE, "from": {"version": 1, "id": 1}, "to": {"version": 2, "id": 3},
        "changes": [{"change": "added", "column": "qty", "before": None,
                     "after": {"name": "qty", "type": {
                         "type": "int", "connect.parameters": {"tidb_type": "INT"}}},
                     "message": "column `qty` was added: int [INT], NOT NULL, no default"}],
        "compatibility": {
            "compatibility_level": "BACKWARD", "compatible": False, "incompatibilities": [{
                "type": "READER_FIELD_MISSING_DEFAULT_VALUE", "location": "/fields/5",
                "message": _QTY, "version": 1, "direction": "new_reads_old"}]}},
        populate_by_name=True)

    subject: str
    from_: VersionRefOut = Field(alias="from")
    to: VersionRefOut
    changes: list[FieldChangeOut] = Field(description="Empty when the schemas are the same")
    compatibility: DiffVerdictOut

    @classmethod
    def of(cls, diff: VersionDiff) -> VersionDiffOut:
        """The response model of a diff (built by alias: `from` is a Python keyword)."""
        return cls.model_validate({
            "subject": diff.subject, "from": VersionRefOut.of(diff.old),
            "to": VersionRefOut.of(diff.new),
            "changes": [FieldChangeOut(change=c.kind.value, column=c.column, before=c.before,
                                       after=c.after, message=c.message)
                        for c in diff.changes],
            "compatibility": DiffVerdictOut(
                compatibility_level=diff.level, compatible=diff.compatible,
                incompatibilities=[IncompatibilityOut.of(i) for i in diff.incompatibilities])})


class DeletedOut(BaseModel):
    """What a delete removed."""

    subject: str
    versions: list[int]
    permanent: bool


class TopicDeletedOut(BaseModel):
    """What deleting a topic's subjects removed."""

    model_config = _examples({
        "topic": "tidb_shop_orders", "permanent": False, "subjects": [
            {"subject": "tidb_shop_orders-key", "versions": [1], "permanent": False},
            {"subject": _VALUE, "versions": [1, 2], "permanent": False}]})

    topic: str
    permanent: bool
    subjects: list[DeletedOut]

    @classmethod
    def of(cls, done: TopicDeletion) -> TopicDeletedOut:
        """What deleting a topic's subjects removed, subject by subject."""
        return cls(topic=done.topic, permanent=done.permanent, subjects=[
            DeletedOut(subject=s.subject, versions=s.versions, permanent=s.permanent)
            for s in done.subjects])


class SchemaUseOut(BaseModel):
    """A subject version that holds a schema."""

    subject: str = Field(examples=[_VALUE])
    version: int = Field(examples=[1])


class SchemaByIdOut(BaseModel):
    """A schema by its global id, and the subject versions that use it."""

    model_config = _examples({
        "id": 1, "schema": _ORDERS_V1, "schema_text": _ORDERS_V1_TEXT,
        "versions": [{"subject": _VALUE, "version": 1}]}, populate_by_name=True)

    id: int
    schema_: AvroJson = Field(alias="schema", description="The schema as JSON (null when "
                                                          "the text is not JSON)")
    schema_text: str = Field(description="The registry's exact string")
    versions: list[SchemaUseOut] = Field(
        description="(subject, version) pairs using the id; soft-deleted ones only with "
                    "`deleted=true`")

    @classmethod
    def of(cls, uses: SchemaUses) -> SchemaByIdOut:
        """A schema by id (as JSON and as text) and the subject versions using it."""
        return cls(id=uses.id, schema_=schema_json(uses.text), schema_text=uses.text,
                   versions=[SchemaUseOut(subject=s, version=v) for s, v in uses.versions])
