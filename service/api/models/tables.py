"""Request and response models of the table endpoints: ``/v1/schemas/generate`` and
``/v1/tables/{check,register}`` (a table, its options and topic; schemas, verdicts,
registrations)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from service.core.options import SchemaOptions
from service.core.schema import SchemaPair
from service.core.table_json import TableSchemaSpec
from service.registry.compatibility import Incompatibility
from service.registry.model import RegisteredSchema
from service.registry.tables import TableCheck, TableRegistration
from service.usecases.tables import TableSource

__all__ = ["DDL_EXAMPLE", "OptionsModel", "TableInput", "TopicTableInput", "SchemasOut",
           "IncompatibilityOut", "SubjectVerdictOut", "TableCheckOut", "RegisteredOut",
           "TableRegistrationOut"]

DDL_EXAMPLE = ("CREATE TABLE shop.orders (id BIGINT PRIMARY KEY, sku VARCHAR(64) NOT NULL, "
               "price DECIMAL(12,2) NOT NULL, created DATETIME(3))")


class OptionsModel(BaseModel):
    """TiCDC's avro sink options."""

    model_config = ConfigDict(extra="forbid", strict=True)  # a flag is true or false, not "1"

    enable_tidb_extension: bool = False
    decimal_handling_mode: Literal["precise", "string"] = "precise"
    bigint_unsigned_handling_mode: Literal["long", "string"] = "long"
    namespace: str = "default"
    ticdc_release: Literal["newest", "tiflow-v8.5.2", "tiflow-v8.3"] = Field(
        "newest", description="The TiCDC release line whose schemas to write where releases "
                              "differ: newest; tiflow-v8.5.2 (tiflow v8.5.2 to v8.5.7, "
                              "v9.0.0-beta.2.pre); tiflow-v8.3 (tiflow v8.3 to v8.5.1)")

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

    def to_source(self) -> TableSource:
        """As the table use-cases' `TableSource`."""
        return TableSource(spec=self.table, ddl=self.ddl, database=self.database,
                           options=self.options.schema_options())


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

    @classmethod
    def of(cls, pair: SchemaPair) -> SchemasOut:
        """The generated schemas of `pair`."""
        return cls(key_schema=pair.key_schema, value_schema=pair.value_schema,
                   key_columns=list(pair.key_columns))


class IncompatibilityOut(BaseModel):
    """One reason a schema is incompatible with one registered version."""

    type: str = Field(examples=["READER_FIELD_MISSING_DEFAULT_VALUE"])
    location: str = Field(examples=["/fields/4"])
    message: str
    version: int
    direction: str = Field(examples=["new_reads_old"])

    @classmethod
    def of(cls, reason: Incompatibility) -> IncompatibilityOut:
        """One reason of a verdict."""
        return cls(type=reason.type, location=reason.location, message=reason.message,
                   version=reason.version, direction=reason.direction)


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

    @classmethod
    def of(cls, check: TableCheck) -> TableCheckOut:
        """The response model of a dry run."""
        return cls(topic=check.topic, compatible=check.compatible, subjects=[
            SubjectVerdictOut(
                subject=v.subject, compatibility_level=v.compatibility_level.value,
                compatible=v.compatible,
                incompatibilities=[IncompatibilityOut.of(i) for i in v.incompatibilities])
            for v in check.subjects])


class RegisteredOut(BaseModel):
    """A registered schema's coordinates."""

    subject: str = Field(examples=["tidb_shop_orders-value"])
    id: int = Field(examples=[1])
    version: int = Field(examples=[1])

    @classmethod
    def of(cls, registered: RegisteredSchema) -> RegisteredOut:
        """The coordinates of a registered schema."""
        return cls(subject=registered.subject, id=registered.id, version=registered.version)


class TableRegistrationOut(BaseModel):
    """The registrations a table got."""

    model_config = ConfigDict(json_schema_extra={"examples": [{
        "topic": "tidb_shop_orders",
        "key": {"subject": "tidb_shop_orders-key", "id": 1, "version": 1},
        "value": {"subject": "tidb_shop_orders-value", "id": 2, "version": 1}}]})

    topic: str
    key: RegisteredOut | None
    value: RegisteredOut

    @classmethod
    def of(cls, done: TableRegistration) -> TableRegistrationOut:
        """The response model of a registration."""
        return cls(topic=done.topic, key=None if done.key is None else RegisteredOut.of(done.key),
                   value=RegisteredOut.of(done.value))
