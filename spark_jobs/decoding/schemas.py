"""The schemas a job decodes with, resolved on the driver: the latest key/value schemas of a
topic (the reader schemas) and every registered version of its subjects by id (the writer
schemas).

`spark_jobs.decoding.registry.resolve_schemas` reads them on the driver with the service's own
registry client (subjects follow TopicNameStrategy through `service.core.naming`). This module
imports only the standard library, so the modules executors may import
(`spark_jobs.decoding.transforms` takes the dataclasses and `for_spark` from here) need no HTTP
client or pydantic-settings.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

__all__ = ["SubjectVersions", "TopicVersions", "for_spark", "SPARK_MAX_DECIMAL_PRECISION"]

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
    version's schema by id (the writers)."""

    subject: str
    latest: str
    latest_id: int
    by_id: dict[int, str]

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
