"""Schema resolution on the driver, once at start-up: the topic's latest key/value schemas
(the reader schemas) and every registered version of its subjects by id (the writer schemas).

Subjects follow TopicNameStrategy through the same `service.core.naming` the service uses. Two
sources, each in its own module, imported only when `resolve_schemas` runs (on the driver):

- a Confluent-compatible registry (``--registry-url``, else ``FLATAVRO_REGISTRY_URL``):
  `spark_jobs.registry_source`, the service's own client (`HttpSchemaRegistry`) with auth, TLS,
  retries and breaker from the same ``FLATAVRO_REGISTRY_*`` settings as the service;
- the flatavro service (``--service-url``): `spark_jobs.service_source`, plain ``GET``s of its
  ``/v1/subjects/{subject}/versions[/{v}]``.

This module itself imports neither (only the standard library), so the modules executors may
import (`spark_jobs.transforms` takes the dataclasses and `for_spark` from here) need no HTTP
client or pydantic-settings.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from spark_jobs.config import SchemaSource

__all__ = ["SubjectSchemas", "TopicSchemas", "resolve_schemas", "for_spark",
           "SPARK_MAX_DECIMAL_PRECISION"]

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
class SubjectSchemas:
    """One subject: its latest schema (the reader) and every version's schema by id."""

    subject: str
    latest: str
    latest_id: int
    by_id: dict[int, str]

    def field_names(self) -> list[str]:
        """The record's field names, in order."""
        return [f["name"] for f in json.loads(self.latest)["fields"]]


@dataclass(frozen=True, slots=True)
class TopicSchemas:
    """The key (None for a keyless table) and value subjects of a topic."""

    topic: str
    key: SubjectSchemas | None
    value: SubjectSchemas


def resolve_schemas(config: SchemaSource, *, timeout: float = 10.0) -> TopicSchemas:
    """Fetch the topic's schemas from the service (`config.service_url`) or else the registry
    (`config.registry_url`, else ``FLATAVRO_REGISTRY_URL``); `timeout` is the service
    reader's (the registry's is ``FLATAVRO_REGISTRY_TIMEOUT``).

    Raises:
        JobError: the service/registry is unreachable or answers an error, the registry
            settings are invalid or name no registry, or the topic has no value subject.
    """
    if config.service_url:
        from spark_jobs.service_source import resolve_from_service

        return resolve_from_service(config.service_url, config.topic, timeout=timeout)
    from spark_jobs.registry_source import resolve_from_registry

    return resolve_from_registry(config.registry_url, config.topic)
