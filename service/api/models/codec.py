"""Models of the topic and codec endpoints: a topic's schemas, ``/encode`` and ``/v1/decode``.

Row data (encode/decode batches) is never parsed into per-record models: those endpoints read
raw bytes with orjson; the models here only describe them in the OpenAPI document.
"""

from __future__ import annotations

from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field

from service.api.models.tables import RegisteredOut
from service.codec.resolver import TopicSchemas
from service.registry.model import RegisteredSchema

__all__ = ["SCHEMA_ID", "AvroJson", "schema_json", "RegisteredSchemaOut", "TopicSchemasOut",
           "EncodeRecord", "EncodeRequest", "EncodedMessage", "EncodeResponse", "DecodeMessage",
           "DecodeRequest", "DecodedMessage", "DecodeResponse"]

AvroJson = dict[str, Any] | list[Any] | str | None
"""An Avro schema as JSON: an object (a record), a list (a union) or a string (a primitive)."""


def schema_json(text: str) -> AvroJson:
    """A registry's schema text as JSON, or None when it is not JSON (a Protobuf schema)."""
    try:
        schema: AvroJson = orjson.loads(text)
    except orjson.JSONDecodeError:  # the text stays available as it is (`schema_text`)
        return None
    return schema


SCHEMA_ID = ("The schema id the frame carries: the registry's global id, or, with AWS Glue's "
              "registry (glue://), the schema version's UUID")

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

    @classmethod
    def of(cls, registered: RegisteredSchema) -> RegisteredSchemaOut:
        """The response model of one registered schema."""
        return cls(subject=registered.subject, id=registered.id, version=registered.version,
                   schema=schema_json(registered.schema), schema_text=registered.schema)


class TopicSchemasOut(BaseModel):
    """A topic's latest key and value schemas."""

    topic: str
    key: RegisteredSchemaOut | None
    value: RegisteredSchemaOut

    @classmethod
    def of(cls, found: TopicSchemas) -> TopicSchemasOut:
        """A topic's latest schemas as the resolver found them."""
        return cls(topic=found.topic,
                   key=None if found.key is None else RegisteredSchemaOut.of(found.key.registered),
                   value=RegisteredSchemaOut.of(found.value.registered))


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
    key_schema_id: int | str | None = Field(description=SCHEMA_ID)
    value_schema_id: int | str = Field(description=SCHEMA_ID)


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
    key_schema_id: int | str | None = Field(description=SCHEMA_ID)
    value: dict[str, Any] | None
    value_schema_id: int | str | None = Field(description=SCHEMA_ID)
    op: Literal["upsert", "delete"]


class DecodeResponse(BaseModel):
    """The decoded messages, in input order."""

    messages: list[DecodedMessage]
