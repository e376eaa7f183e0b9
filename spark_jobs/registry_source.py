"""Schemas from a Confluent-compatible registry through the service's own client,
`service.registry.client.HttpSchemaRegistry`, configured by the service's settings class
(`RegistrySettings`): ``--registry-url`` wins over ``FLATAVRO_REGISTRY_URL``; basic or bearer
auth (``FLATAVRO_REGISTRY_USERNAME``/``_PASSWORD``, ``_BEARER_TOKEN``), TLS
(``_VERIFY_TLS``, ``_CA_BUNDLE``), ``_TIMEOUT``, ``_RETRY_BUDGET`` and the breaker come only
from the environment, never from argv (so they stay out of ``ps``).

Driver only, imported by `resolve_schemas` when it runs (pydantic-settings and the client are
never imported on executors). Every failure is one `JobError` line naming the subject and the
registry's URL (without credentials).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import ssl

from pydantic import ValidationError

from service.core.naming import SubjectKind, subject_for
from service.registry.client import HttpSchemaRegistry, RegistryClientConfig
from service.registry.errors import (
    RegistryError,
    RegistryUnavailableError,
    SubjectNotFoundError,
    VersionNotFoundError,
)
from service.registry.settings import RegistrySettings
from spark_jobs.errors import JobError
from spark_jobs.schemas import SubjectSchemas, TopicSchemas

__all__ = ["registry_settings", "resolve_from_registry"]

_CREDENTIALS = ("credentials come from FLATAVRO_REGISTRY_USERNAME and "
                "FLATAVRO_REGISTRY_PASSWORD, or FLATAVRO_REGISTRY_BEARER_TOKEN")

_TLS = "TLS is checked with FLATAVRO_REGISTRY_CA_BUNDLE and FLATAVRO_REGISTRY_VERIFY_TLS"


def registry_settings(registry_url: str | None) -> RegistrySettings:
    """The ``FLATAVRO_REGISTRY_*`` settings, with `registry_url` (``--registry-url``) instead
    of ``FLATAVRO_REGISTRY_URL`` when given.

    Raises:
        JobError: a setting is invalid (each named by its variable), or no URL at all.
    """
    try:
        settings = RegistrySettings(**({"registry_url": registry_url} if registry_url else {}))
    except ValidationError as exc:
        problems = "; ".join(f"FLATAVRO_{'_'.join(map(str, e['loc'])).upper()}: {e['msg']}"
                             for e in exc.errors())
        raise JobError(f"invalid settings: {problems}") from exc
    if not settings.registry_url:
        raise JobError("no schema source: pass --service-url or --registry-url, or set "
                       "FLATAVRO_REGISTRY_URL")
    return settings


def resolve_from_registry(registry_url: str | None, topic: str) -> TopicSchemas:
    """The topic's schemas as the registry answers them (see the module's docstring).

    Raises:
        JobError: invalid settings or no registry URL; the registry is unreachable, refuses
            the credentials or answers an error; the topic has no value subject.
    """
    config = registry_settings(registry_url).client_config()
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # the usual driver: no event loop here
        return asyncio.run(_resolve(config, topic))
    # Called from a running loop (a notebook calling the job's `run`): a loop of its own
    # in a worker thread, as asyncio.run cannot nest.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, _resolve(config, topic)).result()


async def _resolve(config: RegistryClientConfig, topic: str) -> TopicSchemas:
    registry = HttpSchemaRegistry(config)
    try:
        value = await _subject(registry, subject_for(topic, SubjectKind.VALUE), required=True)
        key = await _subject(registry, subject_for(topic, SubjectKind.KEY), required=False)
    finally:
        await registry.aclose()
    assert value is not None
    return TopicSchemas(topic, key, value)


async def _subject(registry: HttpSchemaRegistry, subject: str, *, required: bool
                   ) -> SubjectSchemas | None:
    try:
        versions = await registry.versions(subject)
    except SubjectNotFoundError:
        versions = []
    except RegistryError as exc:
        raise _failed(registry, subject, exc) from exc
    if not versions:
        if required:
            raise JobError(f"subject {subject} is not registered at {registry.url} "
                           f"(unknown topic?)")
        return None
    by_id: dict[int, str] = {}
    latest = None
    for version in sorted(versions):
        try:
            found = await registry.get_version(subject, version)
        except (SubjectNotFoundError, VersionNotFoundError):
            continue  # deleted between the two calls
        except RegistryError as exc:
            raise _failed(registry, subject, exc) from exc
        if found.schema_type.upper() != "AVRO":
            raise JobError(f"subject {subject} version {version} at {registry.url} is a "
                           f"{found.schema_type} schema, not Avro")
        by_id[found.id] = found.schema
        latest = found
    if latest is None:
        raise JobError(f"subject {subject} has no live version at {registry.url}")
    return SubjectSchemas(subject, latest.schema, latest.id, by_id)


def _failed(registry: HttpSchemaRegistry, subject: str, exc: RegistryError) -> JobError:
    """One line for a registry failure: unreachable (with the reason), refused credentials
    (naming the variables), or the registry's answer."""
    if isinstance(exc, RegistryUnavailableError):
        tls = _tls_failure(exc)
        if tls is not None:
            return JobError(f"cannot reach {registry.url} (reading subject {subject}): TLS: "
                            f"{tls} ({_TLS})")
        return JobError(f"cannot reach {registry.url} (reading subject {subject}): "
                        f"{exc.details.get('reason') or exc.message}")
    status = exc.details.get("registry_status")
    if status in (401, 403):  # the job's settings are at fault, whatever the client says
        return JobError(f"the schema registry at {registry.url} refused access to subject "
                        f"{subject} ({status}); {_CREDENTIALS}")
    return JobError(f"reading subject {subject} from {registry.url} failed: "
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
