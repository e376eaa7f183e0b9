"""Schema resolution on the driver, once at start-up: the topic's latest key/value schemas
(the reader schemas) and every registered version of its subjects by id (the writer schemas).

Subjects follow TopicNameStrategy through the same `service.core.naming` the service uses.
From the service: ``GET {url}/v1/subjects/{subject}/versions[/{v}]``; from a registry:
``GET {url}/subjects/{subject}/versions[/{v}]`` (both answer Confluent's shape).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import httpx

from service.core.naming import SubjectKind, subject_for
from spark_jobs.config import SchemaSource
from spark_jobs.errors import JobError

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
    """Fetch the topic's schemas from the service or the registry.

    Raises:
        JobError: the service/registry is unreachable or answers an error, or the topic has
            no value subject.
    """
    base = (f"{config.service_url.rstrip('/')}/v1" if config.service_url
            else str(config.registry_url).rstrip("/"))
    with httpx.Client(base_url=base, timeout=timeout) as http:
        value = _subject(http, subject_for(config.topic, SubjectKind.VALUE), required=True)
        key = _subject(http, subject_for(config.topic, SubjectKind.KEY), required=False)
    assert value is not None
    return TopicSchemas(config.topic, key, value)


def _get(http: httpx.Client, path: str) -> Any:
    try:
        response = http.get(path)
    except httpx.HTTPError as exc:
        raise JobError(f"cannot reach {http.base_url}: {exc}") from exc
    if response.status_code == 404:
        return None
    if response.status_code != 200:
        raise JobError(f"{http.base_url}{path} answered {response.status_code}: "
                       f"{response.text[:200]}")
    return response.json()


def _subject(http: httpx.Client, subject: str, *, required: bool) -> SubjectSchemas | None:
    versions = _get(http, f"/subjects/{subject}/versions")
    if not versions:
        if required:
            raise JobError(f"subject {subject} is not registered at {http.base_url} "
                           f"(unknown topic?)")
        return None
    by_id: dict[int, str] = {}
    latest: dict[str, Any] = {}
    for version in sorted(versions):
        found = _get(http, f"/subjects/{subject}/versions/{version}")
        if found is None:
            continue  # deleted between the two calls
        by_id[int(found["id"])] = _schema_text(found)
        latest = found
    if not latest:
        raise JobError(f"subject {subject} has no live version at {http.base_url}")
    return SubjectSchemas(subject, _schema_text(latest), int(latest["id"]), by_id)


def _schema_text(found: dict[str, Any]) -> str:
    """The registered schema string: the service's ``schema_text`` (its ``schema`` is the
    parsed object), a Confluent registry's ``schema``."""
    return str(found["schema_text"] if "schema_text" in found else found["schema"])
