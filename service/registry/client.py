"""`SchemaRegistry` over HTTP, for any Confluent-compatible registry (Confluent, Karapace,
Apicurio's ``/apis/ccompat/v7``, flatavro's own ``/registry``).

Requests go through `RegistryTransport` (retries, circuit breaker, error answers as our registry
errors). Caches id -> schema for the process life (ids are immutable) and (subject, schema) ->
registration, with one registry call for concurrent requests of one id.

Registries speak Confluent's API in dialects; the client takes each answer as a user of that
registry would and records what it learnt in `Dialect` (docs/registry.md lists the dialects,
measured): a subject without a level of its own falls back to the global level whether the
registry answers 40408, 40401 (Apicurio, for a subject it does not have yet) or no level; a
registry without ``/mode`` is READWRITE; a compatibility check of a subject that does not exist
yet is compatible; the check's reasons come as ``messages`` (Confluent) or ``reason``
(Apicurio); a register answer without ``version`` is completed by a lookup. An operation the
registry does not implement at all is `RegistryUnsupportedError`, never "not found".
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx

from service.core.lru import LRU
from service.registry.breaker import Breaker
from service.registry.canonical import canonical_schema
from service.registry.compatibility import (
    CompatibilityLevel,
    CompatibilityVerdict,
    Incompatibility,
)
from service.registry.errors import (
    RegistryError,
    RegistryServerError,
    RegistryUnavailableError,
    RegistryUnsupportedError,
    SubjectConfigNotFoundError,
    SubjectModeNotFoundError,
    SubjectNotFoundError,
    VersionNotFoundError,
)
from service.registry.interface import VersionSpec
from service.registry.model import RegisteredSchema, RegistryMode
from service.registry.transport import RegistryClientConfig, RegistryTransport

__all__ = ["RegistryClientConfig", "HttpSchemaRegistry", "Dialect"]

_PROBE_SUBJECT = "flatavro-dialect-probe.no-such-subject"
"""A subject nobody registers: how a registry answers the level of an unknown subject tells
whether it can tell "no level of its own" from NONE (see `Dialect.unset_level_reads_as_none`)."""


@dataclass(slots=True)
class Dialect:
    """What the client has learnt of its registry's dialect, from the registry's own answers.

    Attributes:
        modes: False once ``/mode`` answered "not implemented" (Apicurio 2.6): every mode then
            reads READWRITE, and setting one is `RegistryUnsupportedError`.
        unset_level_reads_as_none: whether a subject without a level of its own answers
            ``NONE`` (Apicurio 2.6: its subject levels are artifact rules, and a missing rule
            reads NONE, while the registry enforces the global rule) — None until asked. Such a
            registry answers the level of a subject it does not have with 40401, where
            Confluent answers 40408 or (``defaultToGlobal``) the global level; the client asks
            once, with `_PROBE_SUBJECT`, when a subject's level reads NONE.
    """

    modes: bool = True
    unset_level_reads_as_none: bool | None = None

    async def unset_level_is_none(self, transport: RegistryTransport) -> bool:
        """Whether this registry's NONE for a subject may mean "no level of its own" (asked
        once, then remembered)."""
        if self.unset_level_reads_as_none is None:
            try:
                await transport.request("GET", f"config/{_q(_PROBE_SUBJECT)}")
                self.unset_level_reads_as_none = False
            except SubjectNotFoundError:
                self.unset_level_reads_as_none = True
            except RegistryUnavailableError:
                raise  # learnt nothing: ask again next time
            except RegistryError:  # 40408, or a refusal (ACLs): Confluent's way, NONE is NONE
                self.unset_level_reads_as_none = False
        return self.unset_level_reads_as_none


class HttpSchemaRegistry:
    """A `SchemaRegistry` client over httpx; also counts calls and cache hits for metrics."""

    def __init__(self, config: RegistryClientConfig,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self._config = config
        self._transport = RegistryTransport(config, transport)
        self._request = self._transport.request
        self._by_id = LRU(config.cache_size)
        self._ids = LRU(config.cache_size)
        self._inflight: dict[int, asyncio.Future[str]] = {}
        self.dialect = Dialect()
        self.cache_hits = 0

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
        key = (subject, canonical_schema(schema))
        cached = self._ids.get(key)
        if cached is not None:
            self.cache_hits += 1
            return cached
        body = await self._request("POST", f"subjects/{_q(subject)}/versions",
                                   json={"schema": schema})
        version = body.get("version")
        if version is None:  # older registries answer with the id only
            found = await self.lookup(subject, schema)
        else:
            found = RegisteredSchema(subject, int(version), int(body["id"]), schema)
        self._ids.put(key, found)
        self._by_id.put(found.id, schema)
        return found

    async def lookup(self, subject: str, schema: str, *, deleted: bool = False
                     ) -> RegisteredSchema:
        body = await self._request("POST", f"subjects/{_q(subject)}", json={"schema": schema},
                                   params={"deleted": _b(deleted)})
        return _registered(body, subject)

    async def schema_by_id(self, schema_id: int) -> str:
        cached = self._by_id.get(schema_id)
        if cached is not None:
            self.cache_hits += 1
            return str(cached)
        pending = self._inflight.get(schema_id)
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._inflight[schema_id] = future
        try:
            body = await self._request("GET", f"schemas/ids/{schema_id}")
            text = str(body["schema"])
            self._by_id.put(schema_id, text)
            future.set_result(text)
            return text
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # mark retrieved: waiters re-raise it themselves
            raise
        finally:
            del self._inflight[schema_id]

    async def uses_of(self, schema_id: int, *, deleted: bool = False) -> list[tuple[str, int]]:
        body = await self._request("GET", f"schemas/ids/{schema_id}/versions",
                                   params={"deleted": _b(deleted)})
        return [(str(use["subject"]), int(use["version"])) for use in body]

    async def get_version(self, subject: str, version: VersionSpec = "latest", *,
                          deleted: bool = False) -> RegisteredSchema:
        body = await self._request("GET", f"subjects/{_q(subject)}/versions/{version}",
                                   params={"deleted": _b(deleted)})
        found = _registered(body, subject)
        self._by_id.put(found.id, found.schema)
        return found

    async def subjects(self, *, deleted: bool = False) -> list[str]:
        return list(await self._request("GET", "subjects", params={"deleted": _b(deleted)}))

    async def versions(self, subject: str, *, deleted: bool = False) -> list[int]:
        return list(await self._request("GET", f"subjects/{_q(subject)}/versions",
                                        params={"deleted": _b(deleted)}))

    async def delete_subject(self, subject: str, *, permanent: bool = False) -> list[int]:
        return list(await self._request("DELETE", f"subjects/{_q(subject)}",
                                        params={"permanent": _b(permanent)}))

    async def delete_version(self, subject: str, version: VersionSpec, *,
                             permanent: bool = False) -> int:
        return int(await self._request("DELETE", f"subjects/{_q(subject)}/versions/{version}",
                                       params={"permanent": _b(permanent)}))

    async def get_compatibility(self, subject: str | None = None, *,
                                default_to_global: bool = False) -> CompatibilityLevel:
        """The subject's level (or the global one); with `default_to_global`, a subject
        without a level of its own has the global level, in every dialect (see `Dialect`).

        Raises:
            SubjectConfigNotFoundError: the subject has no level of its own, and not
                `default_to_global`.
        """
        if subject is None:
            level = _level(await self._request("GET", "config"))
            return level or CompatibilityLevel.BACKWARD  # Confluent's default, if unsaid
        level = await self._subject_level(subject, default_to_global)
        if level is not None:
            return level
        if not default_to_global:
            raise SubjectConfigNotFoundError(
                f"subject {subject!r} has no compatibility level of its own", subject=subject)
        return await self.get_compatibility()

    async def _subject_level(self, subject: str, default_to_global: bool
                             ) -> CompatibilityLevel | None:
        """The level a subject answers; None for none of its own: 40408, 40401 (a registry
        that keeps levels only for subjects it has: Apicurio), no level in the answer, or a
        NONE that may mean unset (`Dialect.unset_level_reads_as_none`)."""
        try:
            body = await self._request("GET", f"config/{_q(subject)}",
                                       params={"defaultToGlobal": _b(default_to_global)})
        except (SubjectNotFoundError, SubjectConfigNotFoundError):
            return None
        level = _level(body)
        if level is CompatibilityLevel.NONE and await self.dialect.unset_level_is_none(
                self._transport):
            return None
        return level

    async def set_compatibility(self, level: CompatibilityLevel,
                                subject: str | None = None) -> CompatibilityLevel:
        path = "config" if subject is None else f"config/{_q(subject)}"
        body = await self._request("PUT", path, json={"compatibility": level.value})
        return _level(body) or level  # `compatibility`, or `compatibilityLevel` (Apicurio 3.0)

    async def check_compatibility(self, subject: str, schema: str,
                                  version: VersionSpec | None = None) -> CompatibilityVerdict:
        path = f"compatibility/subjects/{_q(subject)}/versions"
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

    async def configured_compatibility(self, subject: str | None = None
                                       ) -> CompatibilityLevel | None:
        """The subject's own level, None without one (40408, or a dialect's equivalent); for
        the global level Confluent answers its default when none was set, so that is never
        None."""
        if subject is None:
            return await self.get_compatibility()
        return await self._subject_level(subject, False)

    async def delete_compatibility(self, subject: str | None = None) -> CompatibilityLevel:
        """Remove the subject's level (or reset the global one); returns the level removed.

        Raises:
            SubjectConfigNotFoundError: the subject has no level of its own (Confluent
                answers 40401 "subject not found" there).
        """
        path = "config" if subject is None else f"config/{_q(subject)}"
        try:
            body = await self._request("DELETE", path)
        except SubjectNotFoundError as exc:
            raise SubjectConfigNotFoundError(
                f"subject {subject!r} has no compatibility level of its own ({exc.message})",
                subject=subject) from exc
        return CompatibilityLevel(body.get("compatibilityLevel") or body.get("compatibility"))

    async def get_mode(self, subject: str | None = None) -> RegistryMode:
        """The effective mode; READWRITE on a registry without ``/mode`` (Apicurio 2.6)."""
        if not self.dialect.modes:
            return RegistryMode.READWRITE
        path = "mode" if subject is None else f"mode/{_q(subject)}"
        try:
            body = await self._request("GET", path, params={"defaultToGlobal": "true"})
        except RegistryUnsupportedError:
            self.dialect.modes = False
            return RegistryMode.READWRITE
        return _mode(body)

    async def configured_mode(self, subject: str | None = None) -> RegistryMode | None:
        """The mode set on the subject (or the global one); None when unset, and for a
        subject on a registry without ``/mode`` (globally: READWRITE)."""
        if not self.dialect.modes:
            return RegistryMode.READWRITE if subject is None else None
        path = "mode" if subject is None else f"mode/{_q(subject)}"
        try:
            return _mode(await self._request("GET", path))
        except SubjectModeNotFoundError:  # 40409: the subject has no mode of its own
            return None
        except RegistryUnsupportedError:
            self.dialect.modes = False
            return RegistryMode.READWRITE if subject is None else None

    async def set_mode(self, mode: RegistryMode, subject: str | None = None, *,
                       force: bool = False) -> RegistryMode:
        path = "mode" if subject is None else f"mode/{_q(subject)}"
        body = await self._request("PUT", path, json={"mode": mode.value},
                                   params={"force": _b(force)})
        return _mode(body)

    async def delete_mode(self, subject: str) -> RegistryMode:
        """Remove the subject's mode; returns the mode removed.

        Raises:
            SubjectModeNotFoundError: the subject has no mode of its own (Confluent answers
                40401 "subject not found" there).
        """
        try:
            return _mode(await self._request("DELETE", f"mode/{_q(subject)}"))
        except SubjectNotFoundError as exc:
            raise SubjectModeNotFoundError(
                f"subject {subject!r} has no mode of its own ({exc.message})",
                subject=subject) from exc


def _level(body: Any) -> CompatibilityLevel | None:
    """The level in a ``/config`` answer (``compatibilityLevel``, or ``compatibility`` as some
    registries answer), None when the body names none (an empty answer).

    Raises:
        RegistryServerError: a level this service does not know (the registry's answer cannot
            be used: 502).
    """
    value = (body.get("compatibilityLevel") or body.get("compatibility")) \
        if isinstance(body, dict) else None
    if not value:
        return None
    try:
        return CompatibilityLevel(str(value).upper())
    except ValueError as exc:
        raise RegistryServerError(
            f"the schema registry answered compatibility level {value!r}, which this service "
            "does not know", level=value) from exc


def _mode(body: Any) -> RegistryMode:
    """A mode a registry answered. READONLY_OVERRIDE (deprecated since CP 7.9 for a global
    READONLY) refuses writes as READONLY does; FORWARD (cluster linking) has no equivalent.

    Raises:
        RegistryServerError: a mode this service does not know, named (the registry's answer
            cannot be used: 502, not the caller's mistake).
    """
    value = str(body.get("mode") if isinstance(body, dict) else body).upper()
    if value == "READONLY_OVERRIDE":
        return RegistryMode.READONLY
    try:
        return RegistryMode(value)
    except ValueError as exc:
        raise RegistryServerError(
            f"the schema registry answered mode {value!r}, which this service does not "
            "support (known: READWRITE, READONLY, IMPORT)", mode=value) from exc


def _q(subject: str) -> str:
    return quote(subject, safe="")


def _b(flag: bool) -> str:
    return "true" if flag else "false"


def _registered(body: dict[str, Any], subject: str) -> RegisteredSchema:
    return RegisteredSchema(str(body.get("subject", subject)), int(body["version"]),
                            int(body["id"]), str(body["schema"]),
                            str(body.get("schemaType", "AVRO")))
