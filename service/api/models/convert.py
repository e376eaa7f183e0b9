"""Request and response models of ``POST /v1/convert/{protocol}``, with one example per
protocol (taken from TiCDC's protocol documentation)."""

from __future__ import annotations

import base64
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field

from service.api.models.codec import SCHEMA_ID
from service.api.models.tables import OptionsModel
from service.cdc.large_message import Compression, LargeMessages
from service.codec.convert import ConvertInput

__all__ = ["ConvertRequest", "ConvertResponse", "CONVERT_EXAMPLES"]


class SourceMessageIn(BaseModel):
    """One TiCDC Kafka message: key and value as text (``encoding`` says how)."""

    model_config = ConfigDict(extra="forbid")

    key: str | None = None
    value: str | None = None


class ConvertRequest(BaseModel):
    """TiCDC messages of one protocol, in the order they were consumed."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    messages: list[SourceMessageIn]
    encoding: Literal["utf-8", "base64"] = Field(
        "utf-8", description="How keys and values are written: UTF-8 text (JSON protocols) "
                             "or base64 (any bytes; the Open Protocol's binary framing)")
    topic: str = Field("tidb_{schema}_{table}", description="Topic rule or literal topic")
    register_: bool = Field(
        False, alias="register",
        description="Register missing schemas (needs an API key when keys are configured)")
    options: OptionsModel = Field(default_factory=OptionsModel,
                                  description="Schema options used when registering")
    key_columns: dict[str, list[str]] = Field(
        default_factory=dict,
        description="`schema.table` -> key columns, for a table whose messages name no key "
                    "(Canal-JSON's `pkNames` lists a primary key only, so a table keyed by a "
                    "NOT NULL unique index arrives keyless); used when registering from rows",
        examples=[{"shop.orders": ["a", "b"]}])
    large_message_handle_compression: Literal["none", "snappy", "lz4"] = Field(
        "none", description="The changefeed's `large-message-handle-compression`: every value "
                            "is decompressed first")
    claim_check_storage_uri: str | None = Field(
        None, description="The changefeed's `claim-check-storage-uri` as the service reads it "
                          "(file:///DIR or s3://BUCKET/PREFIX?..., one of the service's "
                          "FLATAVRO_CLAIM_CHECK_STORAGE_URIS, compared as written): a "
                          "claim-check message is replaced by the whole message stored there")
    claim_check_raw_value: bool = Field(
        False, description="The changefeed's `claim-check-raw-value`")

    def to_input(self) -> ConvertInput:
        """As the converter's input."""
        return ConvertInput([(m.key, m.value) for m in self.messages], self.encoding,
                            self.topic, self.register_, self.options.schema_options(),
                            {t: tuple(c) for t, c in self.key_columns.items()},
                            large_messages=LargeMessages(
                                Compression(self.large_message_handle_compression),
                                self.claim_check_storage_uri, self.claim_check_raw_value))


class ConvertedMessage(BaseModel):
    """One flat-avro Kafka message (base64 frames, Confluent's or, with AWS Glue's registry,
    Glue's; value null = tombstone)."""

    topic: str
    key: str | None
    value: str | None
    key_schema_id: int | str | None = Field(description=SCHEMA_ID)
    value_schema_id: int | str = Field(description=SCHEMA_ID)
    op: Literal["insert", "update", "delete"]
    commit_ts: int
    source_index: int = Field(description="The input message that produced it")


class SkippedEvent(BaseModel):
    """An event that produces no flat-avro message (DDL, watermark/resolved, bootstrap)."""

    source_index: int
    kind: Literal["ddl", "watermark", "bootstrap"]
    schema_: str | None = Field(alias="schema")
    table: str | None
    commit_ts: int
    reason: str


class PendingEvent(BaseModel):
    """A Simple-protocol row change whose table schema version is not known yet."""

    source_index: int
    schema_: str = Field(alias="schema")
    table: str
    schema_version: int
    reason: str


class ConvertResponse(BaseModel):
    """The converted messages in input order, and what was skipped or is pending."""

    messages: list[ConvertedMessage]
    skipped: list[SkippedEvent]
    pending: list[PendingEvent]
    notes: list[str] = Field(
        default_factory=list,
        description="What the conversion assumed, one line each: a value schema version "
                    "derived from rows that carry other columns than the registered one (no "
                    "DDL seen), with its new columns made nullable")


def _open_protocol_example() -> dict[str, Any]:
    key = orjson.dumps({"ts": 415508878783938562, "scm": "test", "tbl": "t1", "t": 1})
    value = orjson.dumps({"u": {"id": {"t": 3, "h": True, "f": 11, "v": 1},
                                "val": {"t": 15, "f": 64, "v": "aa"}}})
    framed_key = (1).to_bytes(8, "big") + len(key).to_bytes(8, "big") + key
    framed_value = len(value).to_bytes(8, "big") + value
    return {"messages": [{"key": base64.b64encode(framed_key).decode(),
                          "value": base64.b64encode(framed_value).decode()}],
            "encoding": "base64", "topic": "tidb_{schema}_{table}", "register": False}


_CANAL = {"id": 0, "database": "test", "table": "tp_int", "pkNames": ["id"], "isDdl": False,
          "type": "INSERT", "es": 1639633141221, "ts": 1639633142960, "sql": "",
          "sqlType": {"id": 4, "c_int": 4}, "mysqlType": {"id": "int", "c_int": "int"},
          "data": [{"id": "2", "c_int": "2147483647"}], "old": None,
          "_tidb": {"commitTs": 429918007904436226}}
_SIMPLE_SCHEMA = {"schema": "simple", "table": "user", "tableID": 148,
                  "version": 447984074911121426,
                  "columns": [{"name": "id", "dataType": {"mysqlType": "int", "charset": "binary",
                                                          "collate": "binary", "length": 11},
                               "nullable": False, "default": None},
                              {"name": "name", "dataType": {"mysqlType": "varchar",
                                                            "charset": "utf8mb4",
                                                            "collate": "utf8mb4_bin",
                                                            "length": 255},
                               "nullable": True, "default": None}],
                  "indexes": [{"name": "primary", "unique": True, "primary": True,
                               "nullable": False, "columns": ["id"]}]}
_SIMPLE = [{"version": 1, "type": "BOOTSTRAP", "commitTs": 0, "buildTs": 1708924603278,
            "tableSchema": _SIMPLE_SCHEMA},
           {"version": 1, "database": "simple", "table": "user", "tableID": 148,
            "type": "INSERT", "commitTs": 447984084414103554, "buildTs": 1708923662983,
            "schemaVersion": 447984074911121426, "data": {"id": "1", "name": "John Doe"}}]

_DEBEZIUM_SOURCE = {"version": "2.4.0.Final", "connector": "TiCDC", "name": "default",
                    "ts_ms": 1701326309000, "snapshot": "false", "db": "test", "table": "t",
                    "server_id": 0, "gtid": None, "file": "", "pos": 0, "row": 0,
                    "thread": 0, "query": None, "commit_ts": 446266911690375169,
                    "cluster_id": "default"}
_DEBEZIUM_FIELDS = [{"tidb_type": "int", "type": "int32", "optional": False, "field": "id"},
                    {"tidb_type": "varchar", "type": "string", "optional": True,
                     "field": "name"}]
_DEBEZIUM = [
    ({"payload": {"databaseName": "test"}},
     {"payload": {"source": {**_DEBEZIUM_SOURCE, "commit_ts": 446266911690375168},
                  "ts_ms": 1701326309100, "databaseName": "test", "schemaName": None,
                  "ddl": "CREATE TABLE test.t (id INT PRIMARY KEY, name VARCHAR(20))",
                  "tableChanges": [{"type": "CREATE", "id": "\"test\".\"t\"", "table": {
                      "defaultCharsetName": "utf8mb4", "primaryKeyColumnNames": ["id"],
                      "columns": [{"name": "id", "typeName": "INT", "length": None,
                                   "scale": None, "optional": False, "position": 1},
                                  {"name": "name", "typeName": "VARCHAR", "length": 20,
                                   "scale": None, "optional": True, "position": 2}]}}]}}),
    ({"payload": {"id": 1}, "schema": {"type": "struct", "name": "default.test.t.Key",
                                       "optional": False, "fields": _DEBEZIUM_FIELDS[:1]}},
     {"payload": {"source": _DEBEZIUM_SOURCE, "ts_ms": 1701326309200, "transaction": None,
                  "op": "c", "before": None, "after": {"id": 1, "name": "Alice"}},
      "schema": {"type": "struct", "optional": False, "name": "default.test.t.Envelope",
                 "version": 1, "fields": [
                     {"type": "struct", "optional": True, "name": "default.test.t.Value",
                      "field": "before", "fields": _DEBEZIUM_FIELDS},
                     {"type": "struct", "optional": True, "name": "default.test.t.Value",
                      "field": "after", "fields": _DEBEZIUM_FIELDS}]}}),
]

CONVERT_EXAMPLES: dict[str, dict[str, Any]] = {
    "canal-json": {"summary": "Canal-JSON: an INSERT (register the table on first use)",
                   "value": {"messages": [{"value": orjson.dumps(_CANAL).decode()}],
                             "encoding": "utf-8", "register": True}},
    "open-protocol": {"summary": "Open Protocol: one row event, binary framing in base64",
                      "value": _open_protocol_example()},
    "simple": {"summary": "Simple protocol: BOOTSTRAP then INSERT",
               "value": {"messages": [{"value": orjson.dumps(m).decode()} for m in _SIMPLE],
                         "encoding": "utf-8", "register": True}},
    "debezium": {"summary": "Debezium: the CREATE TABLE event, then an INSERT (key and value)",
                 "value": {"messages": [{"key": orjson.dumps(k).decode(),
                                         "value": orjson.dumps(v).decode()}
                                        for k, v in _DEBEZIUM],
                           "encoding": "utf-8", "register": True}},
}
