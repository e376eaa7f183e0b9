"""Request and response models of the v1 API (documentation and validation of small bodies).

Row data (encode/decode batches) is never parsed into per-record models: those endpoints read
raw bytes with orjson; the models here only describe them in the OpenAPI document.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, model_validator

from service.core.ddl import table_from_ddl
from service.core.options import SchemaOptions
from service.core.table import Table
from service.core.table_json import TableSchemaSpec, table_from_spec
from service.registry.model import RegisteredSchema
from service.registry.tables import TableCheck, TableRegistration

DDL_EXAMPLE = ("CREATE TABLE shop.orders (id BIGINT PRIMARY KEY, sku VARCHAR(64) NOT NULL, "
               "price DECIMAL(12,2) NOT NULL, created DATETIME(3))")


class OptionsModel(BaseModel):
    """TiCDC's avro sink options."""

    model_config = ConfigDict(extra="forbid", strict=True)  # a flag is true or false, not "1"

    enable_tidb_extension: bool = False
    decimal_handling_mode: Literal["precise", "string"] = "precise"
    bigint_unsigned_handling_mode: Literal["long", "string"] = "long"
    namespace: str = "default"

    def schema_options(self) -> SchemaOptions:
        """As core `SchemaOptions`."""
        return SchemaOptions.from_strings(**self.model_dump())


class TableInput(BaseModel):
    """A table, as a Simple-protocol `TableSchema` (`table`) or a CREATE TABLE (`ddl`)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={
        "examples": [{"ddl": DDL_EXAMPLE, "options": {"enable_tidb_extension": True}}]})

    table: TableSchemaSpec | None = None
    ddl: str | None = Field(None, examples=[DDL_EXAMPLE])
    database: str | None = Field(
        None, description="The database of a DDL table name without one", examples=["shop"])
    options: OptionsModel = Field(default_factory=OptionsModel)

    @model_validator(mode="after")
    def _one_source(self) -> TableInput:
        if (self.table is None) == (self.ddl is None):
            raise ValueError("give exactly one of `table` (a TableSchema) or `ddl`")
        return self

    def to_table(self) -> Table:
        """The validated table.

        Raises:
            InvalidTableError, InvalidDDLError: the definition is not a usable table.
        """
        if self.table is not None:
            return table_from_spec(self.table)
        assert self.ddl is not None
        return table_from_ddl(self.ddl, schema=self.database)


class TopicTableInput(TableInput):
    """A table and the topic (rule) it goes under."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={
        "examples": [{"ddl": DDL_EXAMPLE, "topic": "tidb_{schema}_{table}"}]})

    topic: str = Field("tidb_{schema}_{table}", description="A rule with {schema} then "
                       "{table}, or a literal topic (binds one table)",
                       examples=["tidb_{schema}_{table}"])


class SchemasOut(BaseModel):
    """The generated schemas."""

    key_schema: dict[str, Any] | None = Field(description="null for a table with no key")
    value_schema: dict[str, Any]
    key_columns: list[str]


class IncompatibilityOut(BaseModel):
    """One reason a schema is incompatible with one registered version."""

    type: str = Field(examples=["READER_FIELD_MISSING_DEFAULT_VALUE"])
    location: str = Field(examples=["/fields/4"])
    message: str
    version: int
    direction: str = Field(examples=["new_reads_old"])


class SubjectVerdictOut(BaseModel):
    """What registering one subject's schema would meet."""

    subject: str = Field(examples=["tidb_shop_orders-value"])
    compatibility_level: str = Field(examples=["BACKWARD"])
    compatible: bool
    incompatibilities: list[IncompatibilityOut]


class TableCheckOut(BaseModel):
    """The dry-run verdict, per subject."""

    topic: str = Field(examples=["tidb_shop_orders"])
    compatible: bool
    subjects: list[SubjectVerdictOut]


class RegisteredOut(BaseModel):
    """A registered schema's coordinates."""

    subject: str = Field(examples=["tidb_shop_orders-value"])
    id: int = Field(examples=[1])
    version: int = Field(examples=[1])


AvroJson = dict[str, Any] | list[Any] | str | None
"""An Avro schema as JSON: an object (a record), a list (a union) or a string (a primitive)."""


class RegisteredSchemaOut(RegisteredOut):
    """A registered schema: as JSON, and as the registry's exact string."""

    schema_: AvroJson = Field(
        alias="schema", serialization_alias="schema",
        description="The schema as JSON (null when the registry's text is not JSON: a "
                    "Protobuf schema of a remote registry)",
        examples=[{"type": "record", "name": "orders", "namespace": "default.shop",
                   "fields": [{"name": "id", "type": {
                       "type": "long", "connect.parameters": {"tidb_type": "BIGINT"}}}]}])
    schema_text: str = Field(
        description="The registry's exact string (what Confluent clients compare)",
        examples=['{"type":"record","name":"orders","namespace":"default.shop","fields":['
                  '{"name":"id","type":{"type":"long","connect.parameters":'
                  '{"tidb_type":"BIGINT"}}}]}'])


class TableRegistrationOut(BaseModel):
    """The registrations a table got."""

    model_config = ConfigDict(json_schema_extra={"examples": [{
        "topic": "tidb_shop_orders",
        "key": {"subject": "tidb_shop_orders-key", "id": 1, "version": 1},
        "value": {"subject": "tidb_shop_orders-value", "id": 2, "version": 1}}]})

    topic: str
    key: RegisteredOut | None
    value: RegisteredOut


class TopicSchemasOut(BaseModel):
    """A topic's latest key and value schemas."""

    topic: str
    key: RegisteredSchemaOut | None
    value: RegisteredSchemaOut


class EncodeRecord(BaseModel):
    """One change; rows are plain JSON keyed by column name."""

    op: Literal["insert", "update", "delete"]
    row: dict[str, Any] | None = Field(None, description="The new row (delete: the old row "
                                       "if `old_row` is absent)")
    old_row: dict[str, Any] | None = Field(
        None, description="The row before an update (splits key changes) or a delete")
    commit_ts: int | None = Field(None, description="TiDB TSO; fills the extension fields")


class EncodeRequest(BaseModel):
    """A batch of changes for one topic."""

    model_config = ConfigDict(json_schema_extra={"examples": [{
        "records": [{"op": "insert", "commit_ts": 449_522_326_498_394_113,
                     "row": {"id": 1, "sku": "A-1", "price": "9.90",
                             "created": "2024-03-11 08:51:01.461"}},
                    {"op": "delete", "row": {"id": 1}}],
        "encoding": "base64"}]})

    records: list[EncodeRecord]
    encoding: Literal["base64", "hex"] = "base64"


class EncodedMessage(BaseModel):
    """One Kafka message (Confluent-framed key and value; value null = tombstone)."""

    key: str | None
    value: str | None
    record_index: int = Field(description="The input record that produced this message")


class EncodeResponse(BaseModel):
    """The messages of a batch, in input order."""

    topic: str
    messages: list[EncodedMessage]
    key_schema_id: int | None
    value_schema_id: int


class DecodeMessage(BaseModel):
    """One Kafka message as text."""

    key: str | None = None
    value: str | None = None


class DecodeRequest(BaseModel):
    """Messages to decode."""

    model_config = ConfigDict(json_schema_extra={"examples": [{
        "messages": [{"key": "AAAAAAECAg==", "value": None}], "encoding": "base64"}]})

    messages: list[DecodeMessage]
    encoding: Literal["base64", "hex"] = "base64"


class DecodedMessage(BaseModel):
    """A decoded message: rows in plain JSON."""

    key: dict[str, Any] | None
    key_schema_id: int | None
    value: dict[str, Any] | None
    value_schema_id: int | None
    op: Literal["upsert", "delete"]


class DecodeResponse(BaseModel):
    """The decoded messages, in input order."""

    messages: list[DecodedMessage]


class CompatibilityIn(BaseModel):
    """A compatibility level."""

    compatibility: Literal["NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD",
                           "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE"] = Field(
        examples=["FULL_TRANSITIVE"])


class CompatibilityOut(BaseModel):
    """A subject's (or with `subject` null, the registry's) compatibility level: the one in
    effect, and the one configured there."""

    subject: str | None = Field(examples=["tidb_shop_orders-value"])
    compatibility: str = Field(description="The level in effect", examples=["BACKWARD"])
    configured: str | None = Field(
        description="The level set on the subject (on the registry for the global level); "
                    "null: none is set, so the global level (the default BACKWARD) applies",
        examples=[None])


class DeletedOut(BaseModel):
    """What a delete removed."""

    subject: str
    versions: list[int]
    permanent: bool


class Problem(BaseModel):
    """RFC 9457 problem details; `code` is stable, the optional members depend on the error
    (each status's examples show them)."""

    type: str = Field(examples=["urn:flatavro:problem:subject_not_found"])
    title: str = Field(examples=["Subject not found"])
    status: int = Field(ge=400, le=599, examples=[404])
    detail: str = Field(description="What is at fault, and the hint when there is one")
    instance: str = Field(description="The request path", examples=["/v1/subjects/x-value"])
    code: str = Field(examples=["subject_not_found"])
    message: str | None = Field(None, description="`detail` without the hint")
    hint: str | None = Field(None, description="What to change in the request to get past "
                                               "the error")
    fix: list[str] | None = Field(None, description="The settings `hint` names")
    errors: list[dict[str, Any]] | None = Field(
        None, description="Every problem of a batch or of a request's fields, each with its "
                          "location (index, field, column, byte offset) and message")
    registry_error_code: int | None = Field(None, description="Confluent's `error_code`")
    field: str | None = None
    column: str | int | None = Field(None, description="A table column, or the column of "
                                                     "a JSON syntax error (1-based)")
    position: int | None = Field(None, description="The character of a JSON or DDL error")
    line: int | None = None
    byte_offset: int | None = Field(None, description="The first byte that is not UTF-8")
    accepted: list[str] | None = Field(None, description="415: the accepted media types")
    allow: str | None = Field(None, description="405: the allowed methods (also `Allow`)")
    limit: int | None = Field(None, description="The limit a request went over")
    retry_after: int | None = Field(None, description="503: seconds until it may work again")
    dependencies: dict[str, Any] | None = Field(
        None, description="503 from /readyz: each dependency's status and reason")
    subject: str | None = None
    version: int | str | None = None
    topic: str | None = None
    table: str | None = None
    mysql_type: str | None = Field(None, description="The MySQL type at fault")
    avro_name: str | None = Field(None, description="The Avro name two columns both become")
    other: str | None = Field(None, description="The other column of a name collision")
    rule: str | None = Field(None, description="The topic rule at fault")
    what: str | None = Field(None, description="Which limit (`columns`, `indexes`, ...)")
    value: int | None = Field(None, description="The value past `limit`")
    content_type: str | None = Field(None, description="415: the media type that was sent")
    converted: int | None = Field(None, description="Messages converted (0: a batch converts "
                                                    "whole or not at all)")
    failed_messages: list[int] | None = Field(None, description="Indexes of the messages "
                                                                "that cannot be converted")
    registry_status: int | None = Field(None, description="The HTTP status the registry "
                                                          "answered")
    error_code: int | None = Field(None, description="The `error_code` the registry answered")
    operation: str | None = Field(None, description="registry_unsupported: the Confluent API "
                                                    "call the registry does not implement")
    url: str | None = Field(None, description="The registry that does not answer")
    reason: str | None = Field(None, description="Why it does not answer")
    subjects: list[dict[str, Any]] | None = Field(
        None, description="409: each refusing subject with every incompatibility")
    registered_table: str | None = Field(None, description="409: the table the topic holds")
    identifiers: list[dict[str, Any]] | None = Field(
        None, description="Every identifier past TiDB's length limit")


def problem(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses` entries for problem+json statuses (422 always: request validation
    answers problem+json too). `Problem` joins the components in `service.api.docs`."""
    return {s: {"description": HTTPStatus(s).phrase, "content": {"application/problem+json": {
        "schema": {"$ref": "#/components/schemas/Problem"}}}}  # one dict each: examples differ
            for s in sorted({422, *statuses})}


def check_out(check: TableCheck) -> TableCheckOut:
    """The response model of a dry run."""
    return TableCheckOut(topic=check.topic, compatible=check.compatible, subjects=[
        SubjectVerdictOut(
            subject=v.subject, compatibility_level=v.compatibility_level.value,
            compatible=v.compatible,
            incompatibilities=[IncompatibilityOut(
                type=i.type, location=i.location, message=i.message, version=i.version,
                direction=i.direction) for i in v.incompatibilities])
        for v in check.subjects])


def registration_out(done: TableRegistration) -> TableRegistrationOut:
    """The response model of a registration."""
    def coords(r: RegisteredSchema | None) -> RegisteredOut | None:
        return None if r is None else RegisteredOut(subject=r.subject, id=r.id,
                                                    version=r.version)

    value = coords(done.value)
    assert value is not None
    return TableRegistrationOut(topic=done.topic, key=coords(done.key), value=value)


def schema_json(text: str) -> AvroJson:
    """A registry's schema text as JSON, or None when it is not JSON (a Protobuf schema)."""
    try:
        return orjson.loads(text)  # type: ignore[no-any-return]
    except orjson.JSONDecodeError:  # the text stays available as it is (`schema_text`)
        return None


def registered_schema_out(r: RegisteredSchema) -> RegisteredSchemaOut:
    """The response model of one registered schema."""
    return RegisteredSchemaOut(subject=r.subject, id=r.id, version=r.version,
                               schema=schema_json(r.schema), schema_text=r.schema)
