"""`SchemaRegistry` over HTTP, for any Confluent-compatible registry (Confluent, Karapace,
Apicurio's ``/apis/ccompat/v7``, flatavro's own ``/registry``).

Requests go through `RegistryTransport` (retries, circuit breaker, error answers as our registry
errors); `RegistryCache` keeps schema texts by id and registrations; `ConfigModeCalls` reads and
writes levels and modes. Registries speak Confluent's API in dialects; the client takes each
answer as a user of that registry would and records what it learnt in `Dialect`
(docs/registry.md lists the dialects, measured): a compatibility check of a subject that does
not exist yet is compatible; the check's reasons come as ``messages`` (Confluent) or ``reason``
(Apicurio); a register answer without ``version`` is completed by a lookup. An operation the
registry does not implement at all is `RegistryUnsupportedError`, never "not found".
"""

from __future__ import annotations

from typing import Any

import httpx

from service.registry.breaker import Breaker
from service.registry.client_cache import RegistryCache
from service.registry.client_config import ConfigModeCalls
from service.registry.compatibility import (
    CompatibilityLevel,
    CompatibilityVerdict,
    Incompatibility,
)
from service.registry.dialect import Dialect
from service.registry.errors import SubjectNotFoundError, VersionNotFoundError
from service.registry.interface import VersionSpec
from service.registry.model import RegisteredSchema, RegistryMode
from service.registry.transport import (
    RegistryClientConfig,
    RegistryTransport,
    path_part,
    query_flag,
)

__all__ = ["RegistryClientConfig", "HttpSchemaRegistry", "Dialect"]


class HttpSchemaRegistry:
    """A `SchemaRegistry` client over httpx; also counts calls and cache hits for metrics."""

    def __init__(self, config: RegistryClientConfig,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        """Reach the registry `config` names (`transport`: an httpx transport, for tests)."""
        self._config = config
        self._transport = RegistryTransport(config, transport)
        self._request = self._transport.request
        self._cache = RegistryCache(config.cache_size)
        self.dialect = Dialect()
        self._settings = ConfigModeCalls(self._transport, self.dialect)

    @property
    def cache_hits(self) -> int:
        """Answers served from the cache so far."""
        return self._cache.hits

    @property
    def breaker(self) -> Breaker:
        """The circuit breaker in front of the registry."""
        return self._transport.breaker

    @property
    def calls(self) -> int:
        """HTTP requests sent so far (retries included)."""
        return self._transport.calls

    @property
    def url(self) -> str:
        """The registry's URL, without credentials (for messages)."""
        return self._transport.url

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._transport.aclose()

    async def probe(self, timeout: float) -> None:
        """One cheap call, no retry (`RegistryTransport.probe`)."""
        await self._transport.probe(timeout)

    # -- SchemaRegistry -------------------------------------------------------------------
    async def register(self, subject: str, schema: str) -> RegisteredSchema:
        """Register `schema` under `subject` (remembered: asked once per process)."""
        key = self._cache.key(subject, schema)
        cached = self._cache.registration(key)
        if cached is not None:
            return cached
        body = await self._request("POST", f"subjects/{path_part(subject)}/versions",
                                   json={"schema": schema})
        version = body.get("version")
        if version is None:  # older registries answer with the id only
            found = await self.lookup(subject, schema)
        else:
            found = RegisteredSchema(subject, int(version), int(body["id"]), schema)
        self._cache.remember_registration(key, found)
        self._cache.remember_text(found.id, schema)
        return found

    async def lookup(self, subject: str, schema: str, *, deleted: bool = False
                     ) -> RegisteredSchema:
        """The registration of `schema` under `subject`."""
        body = await self._request("POST", f"subjects/{path_part(subject)}",
                                   json={"schema": schema},
                                   params={"deleted": query_flag(deleted)})
        return _registered(body, subject)

    async def schema_by_id(self, schema_id: int) -> str:
        """The schema text of a global id (remembered; one call for concurrent askers)."""
        async def fetch() -> str:
            return str((await self._request("GET", f"schemas/ids/{schema_id}"))["schema"])

        return await self._cache.text(schema_id, fetch)

    async def uses_of(self, schema_id: int, *, deleted: bool = False) -> list[tuple[str, int]]:
        """The (subject, version) pairs that hold a global id."""
        body = await self._request("GET", f"schemas/ids/{schema_id}/versions",
                                   params={"deleted": query_flag(deleted)})
        return [(str(use["subject"]), int(use["version"])) for use in body]

    async def get_version(self, subject: str, version: VersionSpec = "latest", *,
                          deleted: bool = False) -> RegisteredSchema:
        """One version of a subject (its schema text is remembered by id)."""
        body = await self._request("GET", f"subjects/{path_part(subject)}/versions/{version}",
                                   params={"deleted": query_flag(deleted)})
        found = _registered(body, subject)
        self._cache.remember_text(found.id, found.schema)
        return found

    async def subjects(self, *, deleted: bool = False) -> list[str]:
        """Subjects, as the registry lists them."""
        return list(await self._request("GET", "subjects",
                                        params={"deleted": query_flag(deleted)}))

    async def versions(self, subject: str, *, deleted: bool = False) -> list[int]:
        """Version numbers of a subject, ascending."""
        return list(await self._request("GET", f"subjects/{path_part(subject)}/versions",
                                        params={"deleted": query_flag(deleted)}))

    async def delete_subject(self, subject: str, *, permanent: bool = False) -> list[int]:
        """Soft- (or, after a soft delete, hard-) delete a subject; returns its versions."""
        return list(await self._request("DELETE", f"subjects/{path_part(subject)}",
                                        params={"permanent": query_flag(permanent)}))

    async def delete_version(self, subject: str, version: VersionSpec, *,
                             permanent: bool = False) -> int:
        """Soft- (or, after a soft delete, hard-) delete one version; returns its number."""
        return int(await self._request(
            "DELETE", f"subjects/{path_part(subject)}/versions/{version}",
            params={"permanent": query_flag(permanent)}))

    async def check_compatibility(self, subject: str, schema: str, *,
                                  version: VersionSpec | None = None) -> CompatibilityVerdict:
        """The registry's verdict on `schema` (against one `version`, or as a registration
        would meet it); a subject with nothing registered yet is compatible."""
        path = f"compatibility/subjects/{path_part(subject)}/versions"
        if version is not None:
            path += f"/{version}"
        try:
            body = await self._request("POST", path, json={"schema": schema},
                                       params={"verbose": "true"})
        except (SubjectNotFoundError, VersionNotFoundError):
            if version is not None and not isinstance(version, str):
                raise
            # Nothing registered yet (Apicurio answers 40401 where Confluent says compatible).
            return CompatibilityVerdict(True, ())
        messages = [str(m) for m in body.get("messages") or []]
        if not messages and body.get("reason"):  # Apicurio: one `reason` string
            messages = [str(body["reason"])]
        reasons = tuple(Incompatibility("REGISTRY", "/", m, 0, "registry") for m in messages)
        return CompatibilityVerdict(bool(body["is_compatible"]), reasons)

    # -- levels and modes (ConfigModeCalls) -----------------------------------------------
    async def get_compatibility(self, subject: str | None = None, *,
                                default_to_global: bool = False) -> CompatibilityLevel:
        """The subject's level (or the global one), in every dialect (`ConfigModeCalls`)."""
        return await self._settings.get_compatibility(subject,
                                                      default_to_global=default_to_global)

    async def set_compatibility(self, level: CompatibilityLevel,
                                subject: str | None = None) -> CompatibilityLevel:
        """Set the level of a subject (or the global one)."""
        return await self._settings.set_compatibility(level, subject)

    async def configured_compatibility(self, subject: str | None = None
                                       ) -> CompatibilityLevel | None:
        """The level set on the subject (or the global one); None when the subject has none."""
        return await self._settings.configured_compatibility(subject)

    async def delete_compatibility(self, subject: str | None = None) -> CompatibilityLevel:
        """Remove the subject's level (or reset the global one); returns the level removed."""
        return await self._settings.delete_compatibility(subject)

    async def get_mode(self, subject: str | None = None) -> RegistryMode:
        """The effective mode; READWRITE on a registry without ``/mode`` (Apicurio 2.6)."""
        return await self._settings.get_mode(subject)

    async def configured_mode(self, subject: str | None = None) -> RegistryMode | None:
        """The mode set on the subject (or the global one); None when unset."""
        return await self._settings.configured_mode(subject)

    async def set_mode(self, mode: RegistryMode, subject: str | None = None, *,
                       force: bool = False) -> RegistryMode:
        """Set the mode of a subject (or the global one)."""
        return await self._settings.set_mode(mode, subject, force=force)

    async def delete_mode(self, subject: str) -> RegistryMode:
        """Remove the subject's mode; returns the mode removed (40409 when it has none)."""
        return await self._settings.delete_mode(subject)


def _registered(body: dict[str, Any], subject: str) -> RegisteredSchema:
    """A registration from a registry's version answer."""
    return RegisteredSchema(str(body.get("subject", subject)), int(body["version"]),
                            int(body["id"]), str(body["schema"]),
                            str(body.get("schemaType", "AVRO")))
