"""Schemas from a Confluent-compatible registry through the service's own client,
`service.registry.client.HttpSchemaRegistry`, or from AWS Glue's Schema Registry (a
``glue://<registry name>[?region=...&endpoint=...]`` URL) through the service's
`service.registry.glue.GlueSchemaRegistry`, configured by the service's settings class
(`RegistrySettings`). A Glue registry's messages carry Glue's 18-byte frames (`framing_of`
says which, at start-up); AWS credentials and region come from boto3's own chain (the
``AWS_*`` environment, a profile, an instance role).

The registry is ``--registry-url``, else the flatavro service's embedded registry
(``--service-url`` + ``/registry``, its Confluent API), else ``FLATAVRO_REGISTRY_URL``. Basic or
bearer auth (``FLATAVRO_REGISTRY_USERNAME``/``_PASSWORD``, ``_BEARER_TOKEN``: for a service with
``FLATAVRO_API_KEYS``, one of its keys as the bearer token or the password), TLS
(``_VERIFY_TLS``, ``_CA_BUNDLE``), ``_TIMEOUT``, ``_RETRY_BUDGET`` and the breaker come only from
the environment, never from argv (so they stay out of ``ps``). ``FLATAVRO_API_KEY``, one of the
keys of a service run with ``FLATAVRO_API_KEYS`` (and ``FLATAVRO_PROTECT_READS``), is sent as
the bearer token when no other registry credential is set.

Driver only (the jobs' driver modules import it; pydantic-settings and the client are never
imported on executors). Every failure is one `JobError` line naming the subject and the
registry's URL (without credentials).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import ssl
import threading
import uuid
from dataclasses import dataclass
from typing import Any

from pydantic import SecretStr, ValidationError

from service.core.naming import SubjectKind, subject_for
from service.registry.client import HttpSchemaRegistry, RegistryClientConfig
from service.registry.errors import (
    RegistryAuthError,
    RegistryError,
    RegistryUnavailableError,
    RegistryUnsupportedError,
    SubjectNotFoundError,
    VersionNotFoundError,
)
from service.registry.glue import GlueSchemaRegistry, is_glue_url
from service.registry.model import RegisteredSchema
from service.registry.settings import RegistrySettings
from spark_jobs.decoding.schemas import Framing, SubjectVersions, TopicVersions
from spark_jobs.errors import JobError
from spark_jobs.settings.config import SchemaSource

__all__ = ["registry_settings", "resolve_schemas", "framing_of", "API_KEY_VARIABLE",
           "EMBEDDED_REGISTRY_PATH"]

API_KEY_VARIABLE = "FLATAVRO_API_KEY"
"""A key of the service (one of its ``FLATAVRO_API_KEYS``), sent as the bearer token."""

EMBEDDED_REGISTRY_PATH = "/registry"
"""Where ``flatavro serve`` mounts its embedded registry's Confluent API."""

_CREDENTIALS = ("credentials come from FLATAVRO_REGISTRY_USERNAME and "
                "FLATAVRO_REGISTRY_PASSWORD, or FLATAVRO_REGISTRY_BEARER_TOKEN")

_TLS = "TLS is checked with FLATAVRO_REGISTRY_CA_BUNDLE and FLATAVRO_REGISTRY_VERIFY_TLS"

_AWS_CREDENTIALS = ("AWS credentials and region come from boto3's chain: AWS_ACCESS_KEY_ID / "
                    "AWS_SECRET_ACCESS_KEY (or AWS_PROFILE, or the instance's role) and "
                    "AWS_REGION or ?region= in the glue:// URL")

_GLUE: dict[tuple[str, float, str], GlueSchemaRegistry] = {}
"""One Glue client per registry URL for the driver process: it numbers the Glue versions it
meets (1, 2, ...), so a topic's ids stay the same each time its schemas are resolved again."""

_GLUE_LOCK = threading.Lock()


@dataclass(frozen=True, slots=True)
class _Registry:
    """The client, and the service whose embedded registry it reads (None: a registry)."""

    client: HttpSchemaRegistry | GlueSchemaRegistry
    service_url: str | None


def registry_settings(source: SchemaSource) -> RegistrySettings:
    """The ``FLATAVRO_REGISTRY_*`` settings, with ``--registry-url`` (or the service's
    embedded registry, ``--service-url`` + ``/registry``) instead of ``FLATAVRO_REGISTRY_URL``
    when given.

    Raises:
        JobError: a setting is invalid (each named by its variable), or no URL at all.
    """
    url = source.registry_url or (
        source.service_url.rstrip("/") + EMBEDDED_REGISTRY_PATH if source.service_url else None)
    # Unset, the field is read from the environment (an argument would override it).
    overrides: dict[str, Any] = {} if url is None else {"registry_url": url}
    try:
        settings = RegistrySettings(**overrides)
    except ValidationError as exc:
        problems = "; ".join(f"FLATAVRO_{'_'.join(map(str, e['loc'])).upper()}: {e['msg']}"
                             for e in exc.errors())
        raise JobError(f"invalid settings: {problems}") from exc
    if not settings.registry_url:
        raise JobError("no schema source: pass --service-url or --registry-url, or set "
                       "FLATAVRO_REGISTRY_URL")
    return _with_api_key(settings)


def _with_api_key(settings: RegistrySettings) -> RegistrySettings:
    """`settings` with ``FLATAVRO_API_KEY`` (the name case-insensitive) as the bearer token.

    Raises:
        JobError: the key and another registry credential are both set.
    """
    keys = [value for name, value in os.environ.items()
            if name.upper() == API_KEY_VARIABLE and value]
    if not keys:
        return settings
    if settings.registry_bearer_token or settings.registry_username or (
            settings.registry_password):
        raise JobError(f"{API_KEY_VARIABLE} and FLATAVRO_REGISTRY_BEARER_TOKEN (or "
                       f"FLATAVRO_REGISTRY_USERNAME/_PASSWORD) are both set: keep one")
    return settings.model_copy(update={"registry_bearer_token": SecretStr(keys[-1])})


def framing_of(source: SchemaSource) -> Framing:
    """How the messages of `source`'s topics are framed: AWS Glue's frames for a ``glue://``
    registry, else Confluent's (also when the settings are wrong: resolving the schemas
    names the fault)."""
    try:
        url = registry_settings(source).registry_url
    except JobError:
        return Framing.CONFLUENT
    return Framing.GLUE if is_glue_url(url) else Framing.CONFLUENT


def _glue(settings: RegistrySettings) -> GlueSchemaRegistry:
    """The driver's client of the Glue registry `settings` name (one per URL).

    Raises:
        JobError: the URL is not a valid glue:// URL, or boto3 is not installed.
    """
    assert settings.registry_url is not None
    key = (settings.registry_url, settings.registry_timeout,
           settings.registry_glue_compatibility)
    with _GLUE_LOCK:
        found = _GLUE.get(key)
        if found is None:
            try:
                found = _GLUE[key] = settings.glue_registry()
            except (ValueError, RegistryError) as exc:
                raise JobError(f"invalid settings: FLATAVRO_REGISTRY_URL / --registry-url: "
                               f"{exc}") from exc
        return found


def resolve_schemas(source: SchemaSource, topic: str | None = None) -> TopicVersions:
    """The versions of `topic` (default: the source's own topic) as its registry answers them:
    ``--registry-url``, else the service's embedded registry, else ``FLATAVRO_REGISTRY_URL``
    (see the module's docstring). From AWS Glue's registry, each version's Glue UUID too
    (`SubjectVersions.glue_ids`).

    Raises:
        JobError: invalid settings or no registry URL; the registry is unreachable, refuses
            the credentials or answers an error (a service without an embedded registry: no
            ``/registry``); the topic has no value subject.
    """
    settings = registry_settings(source)
    client: RegistryClientConfig | GlueSchemaRegistry = (
        _glue(settings) if is_glue_url(settings.registry_url) else settings.client_config())
    service_url = None if source.registry_url else source.service_url
    resolve = _resolve(client, topic=topic or source.topic, service_url=service_url)
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # the usual driver: no event loop here
        return asyncio.run(resolve)
    # Called from a running loop (a notebook calling the job's `run`): a loop of its own
    # in a worker thread, as asyncio.run cannot nest.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, resolve).result()


async def _resolve(client: RegistryClientConfig | GlueSchemaRegistry, *, topic: str,
                   service_url: str | None) -> TopicVersions:
    registry = _Registry(HttpSchemaRegistry(client) if isinstance(client, RegistryClientConfig)
                         else client, service_url)
    try:
        value = await _subject(registry, subject_for(topic, SubjectKind.VALUE), required=True)
        key = await _subject(registry, subject_for(topic, SubjectKind.KEY), required=False)
    finally:
        await registry.client.aclose()
    assert value is not None
    return TopicVersions(topic, key, value)


async def _subject(registry: _Registry, subject: str, *, required: bool
                   ) -> SubjectVersions | None:
    client = registry.client
    try:
        versions = await client.versions(subject)
    except SubjectNotFoundError:
        versions = []
    except RegistryError as exc:
        raise _failed(registry, subject=subject, exc=exc) from exc
    if not versions:
        if required:
            raise JobError(f"subject {subject} is not registered at {client.url} "
                           f"(unknown topic?)")
        return None
    by_id: dict[int, str] = {}
    glue_ids: dict[int, uuid.UUID] = {}
    latest = None
    for version in sorted(versions):
        found = await _version(registry, subject, version=version)
        if found is None:
            continue  # deleted between the two calls
        by_id[found.id] = found.schema
        if found.glue_id is not None:  # an AWS Glue version: its frames carry the UUID
            glue_ids[found.id] = found.glue_id
        latest = found
    if latest is None:
        raise JobError(f"subject {subject} has no live version at {client.url}")
    return SubjectVersions(subject, latest.schema, latest.id, by_id, glue_ids)


async def _version(registry: _Registry, subject: str, *, version: int
                   ) -> RegisteredSchema | None:
    """One version of `subject` (None: deleted meanwhile).

    Raises:
        JobError: the registry fails, or the version is not an Avro schema.
    """
    client = registry.client
    try:
        found = await client.get_version(subject, version)
    except (SubjectNotFoundError, VersionNotFoundError):
        return None
    except RegistryError as exc:
        raise _failed(registry, subject=subject, exc=exc) from exc
    if found.schema_type.upper() != "AVRO":
        raise JobError(f"subject {subject} version {version} at {client.url} is a "
                       f"{found.schema_type} schema, not Avro")
    return found


def _failed(registry: _Registry, *, subject: str, exc: RegistryError) -> JobError:
    """One line for a registry failure: unreachable (with the reason), refused credentials
    (naming the variables), a service without an embedded registry, or the registry's
    answer."""
    url = registry.client.url
    if isinstance(exc, RegistryUnavailableError):
        tls = _tls_failure(exc)
        if tls is not None:
            return JobError(f"cannot reach {url} (reading subject {subject}): TLS: {tls} "
                            f"({_TLS})")
        return JobError(f"cannot reach {url} (reading subject {subject}): "
                        f"{exc.details.get('reason') or exc.message}")
    if isinstance(registry.client, GlueSchemaRegistry) and isinstance(exc, RegistryAuthError):
        return JobError(f"AWS Glue refused access to schema {subject} at {url}: "
                        f"{' '.join(exc.message.split())} ({_AWS_CREDENTIALS})")
    status = exc.details.get("registry_status")
    if isinstance(exc, RegistryAuthError) or status == 403:
        # The job's settings are at fault, whatever the client's message says.
        return JobError(f"the schema registry at {url} refused access to subject {subject} "
                        f"({status}); {_CREDENTIALS}")
    if isinstance(exc, RegistryUnsupportedError) and registry.service_url is not None:
        return JobError(f"the service at {registry.service_url} serves no embedded registry at "
                        f"{EMBEDDED_REGISTRY_PATH} (it uses an external one): pass that "
                        f"registry as --registry-url")
    return JobError(f"reading subject {subject} from {url} failed: "
                    f"{' '.join(exc.message.split())}")


def _tls_failure(exc: BaseException) -> str | None:
    """The TLS error under an unreachable registry, if that is why (its ``reason`` is the OS
    error's text, which for a certificate check says little)."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, ssl.SSLCertVerificationError):
            return f"certificate verify failed: {cause.verify_message}"
        if isinstance(cause, ssl.SSLError):
            return str(cause.reason or cause).lower()
        cause = cause.__cause__ or cause.__context__
    return None
