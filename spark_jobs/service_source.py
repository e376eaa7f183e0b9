"""Schemas from the flatavro service (``--service-url``): plain ``GET``s of its
``/v1/subjects/{subject}/versions[/{v}]`` (Confluent's shape; ``schema_text`` is the registered
string), one attempt each, no API key: a service run with ``FLATAVRO_API_KEYS`` and
``FLATAVRO_PROTECT_READS`` refuses them: read its Confluent API then, ``--registry-url
<service>/registry`` with the key in ``FLATAVRO_REGISTRY_BEARER_TOKEN``. Driver only, imported
by `resolve_schemas`.
"""

from __future__ import annotations

from typing import Any

import httpx

from service.core.naming import SubjectKind, subject_for
from spark_jobs.errors import JobError
from spark_jobs.schemas import SubjectSchemas, TopicSchemas

__all__ = ["resolve_from_service"]


def resolve_from_service(service_url: str, topic: str, *, timeout: float = 10.0
                         ) -> TopicSchemas:
    """The topic's schemas as the service at `service_url` answers them.

    Raises:
        JobError: the service is unreachable or answers an error, or the topic has no value
            subject.
    """
    with httpx.Client(base_url=f"{service_url.rstrip('/')}/v1", timeout=timeout) as http:
        value = _subject(http, subject_for(topic, SubjectKind.VALUE), required=True)
        key = _subject(http, subject_for(topic, SubjectKind.KEY), required=False)
    assert value is not None
    return TopicSchemas(topic, key, value)


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
    parsed object)."""
    return str(found["schema_text"] if "schema_text" in found else found["schema"])
