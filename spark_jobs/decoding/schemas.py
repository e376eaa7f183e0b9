"""The schemas a job decodes with, resolved on the driver: the latest key/value schemas of a
topic (the reader schemas) and every registered version of its subjects by id (the writer
schemas).

`spark_jobs.decoding.registry.resolve_schemas` reads them on the driver with the service's own
registry client (subjects follow TopicNameStrategy through `service.core.naming`), from a
Confluent-compatible registry or AWS Glue's (`Framing`). This module imports only the standard
library and `service.core.framing` (which does too), so the modules executors may import
(`spark_jobs.decoding.transforms` takes the dataclasses and `for_spark` from here) need no HTTP
client, boto3 or pydantic-settings.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import uuid
from dataclasses import dataclass

from service.core.framing import (
    GLUE_HEADER_SIZE,
    GLUE_HEADER_VERSION,
    GLUE_UNCOMPRESSED,
    HEADER_SIZE,
    frame,
)

__all__ = ["Framing", "SubjectVersions", "TopicVersions", "WriterId", "for_spark",
           "SPARK_MAX_DECIMAL_PRECISION"]

WriterId = int | uuid.UUID
"""What a frame's header names its writer schema by: a Confluent schema id, or the UUID of an
AWS Glue schema version."""


class Framing(enum.Enum):
    """How the topic's messages are framed, known at start-up from the kind of registry
    (`spark_jobs.decoding.registry.framing_of`): Confluent's 5-byte header (``0x00`` and the
    schema id), or AWS Glue's 18 bytes (``0x03``, the compression byte, the schema version's
    UUID) for a ``glue://`` registry."""

    CONFLUENT = "confluent"
    GLUE = "glue"

    @property
    def header_size(self) -> int:
        """The header's length: the Avro body starts after it."""
        return GLUE_HEADER_SIZE if self is Framing.GLUE else HEADER_SIZE

SPARK_MAX_DECIMAL_PRECISION = 38
"""Spark decimals hold at most 38 digits; TiDB's DECIMAL up to 65."""


def for_spark(schema_text: str) -> str:
    """The schema as Spark reads it: a DECIMAL wider than Spark's 38 digits loses its
    ``decimal`` logical type, so the column comes out as its Avro bytes (the unscaled value,
    big-endian two's complement) instead of failing the job."""
    schema = json.loads(schema_text)
    for field in schema.get("fields", ()):
        branches = field["type"] if isinstance(field["type"], list) else [field["type"]]
        for branch in branches:
            if isinstance(branch, dict) and branch.get("logicalType") == "decimal" and \
                    int(branch.get("precision", 0)) > SPARK_MAX_DECIMAL_PRECISION:
                del branch["logicalType"]
    return json.dumps(schema)


@dataclass(frozen=True, slots=True)
class SubjectVersions:
    """Every registered version of one subject: the latest schema (the reader) and each
    version's schema by id (the writers).

    From AWS Glue's registry, `glue_ids` holds each id's Glue schema version UUID (the ids are
    then numbers the driver process gave the versions: its frames name the UUID); empty for a
    Confluent registry."""

    subject: str
    latest: str
    latest_id: int
    by_id: dict[int, str]
    glue_ids: dict[int, uuid.UUID] = dataclasses.field(default_factory=dict)

    @property
    def framing(self) -> Framing:
        """How the subject's messages are framed."""
        return Framing.GLUE if self.glue_ids else Framing.CONFLUENT

    def header(self, schema_id: int) -> bytes:
        """The frame header of writer `schema_id`'s messages: ``0x00`` and the id, or for a
        Glue version ``0x03 0x00`` (uncompressed) and its UUID."""
        glue_id = self.glue_ids.get(schema_id)
        if glue_id is None:
            if self.glue_ids:
                raise KeyError(f"schema id {schema_id} of {self.subject} has no Glue version")
            return frame(schema_id, b"")
        return bytes((GLUE_HEADER_VERSION, GLUE_UNCOMPRESSED)) + glue_id.bytes

    def writer_ids(self) -> set[WriterId]:
        """What frames name the writers by: the ids, or the Glue versions' UUIDs."""
        return set(self.glue_ids.values()) if self.glue_ids else set(self.by_id)

    def only(self, schema_id: int) -> SubjectVersions:
        """The subject as if `schema_id`'s version were its only and latest one."""
        glue_id = self.glue_ids.get(schema_id)
        return SubjectVersions(self.subject, self.by_id[schema_id], schema_id,
                               {schema_id: self.by_id[schema_id]},
                               {} if glue_id is None else {schema_id: glue_id})

    def field_names(self) -> list[str]:
        """The latest record's field names, in order."""
        return [f["name"] for f in json.loads(self.latest)["fields"]]

    def table_name(self) -> tuple[str, str]:
        """(database, table) as TiCDC names the record: the namespace is ``<changefeed
        namespace>.<database>`` (the first part sanitized, so it holds no ``.``) and the name
        is the table; a namespace without a ``.`` has no database ("")."""
        record = json.loads(self.latest)
        _, _, database = str(record.get("namespace") or "").partition(".")
        return database, str(record["name"])


@dataclass(frozen=True, slots=True)
class TopicVersions:
    """The versions of a topic's key (None for a keyless table) and value subjects: what the
    jobs decode its messages with. (Not `service.codec.resolver.TopicSchemas`, which is the
    latest key and value schemas the service encodes with.)"""

    topic: str
    key: SubjectVersions | None
    value: SubjectVersions

    @property
    def framing(self) -> Framing:
        """How the topic's messages are framed (the value's registry says: one per job)."""
        return self.value.framing
