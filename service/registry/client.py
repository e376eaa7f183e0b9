"""`SchemaRegistry` over HTTP, for any Confluent-compatible registry (Confluent, Karapace,
Apicurio's ``/apis/ccompat/v7``, flatavro's own ``/registry``).

Retries connect errors, timeouts, 408, 429 and 5xx with capped exponential backoff and full
jitter inside a total time budget, never other 4xx, and stops at once when the circuit breaker
opens (a registry that cannot be reached fails calls at once instead of after the whole budget:
see `Breaker`); maps Confluent ``error_code``s to our registry errors; caches id -> schema for
the process life (ids are immutable) and (subject, schema) -> registration, with one registry
call for concurrent requests of one id.

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
import os
import random
import ssl
import time
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
    ERROR_CLASSES,
    RegistryAuthError,
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

__all__ = ["RegistryClientConfig", "HttpSchemaRegistry", "Dialect"]

_RETRY_STATUSES = frozenset({408, 429})
_GATEWAY_DOWN = frozenset({502, 503, 504})
"""Answers that count as unreachable for the breaker: a proxy or load balancer saying the
registry behind it is down. Other 5xx do not (the registry is up; Confluent answers 500 to writes
while its Kafka store is down yet still serves reads), and 4xx never do."""
_ACCEPT = "application/vnd.schemaregistry.v1+json, application/vnd.schemaregistry+json, " \
          "application/json"
_NO_ROUTE = frozenset({404, 405, 501})
"""Statuses that mean "no such operation" unless a Confluent ``404xx`` code says "no such
subject/version/schema": Confluent answers a route it lacks with 404/``error_code`` 404,
Apicurio with 404/``error_code`` 0 ("Operation not supported", "Could not find resource")."""
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


@dataclass(frozen=True, slots=True)
class RegistryClientConfig:
    """How to reach a registry.

    Attributes:
        url: base URL, with or without a path prefix (``https://host/prefix``).
        username, password: HTTP basic auth (both or neither).
        bearer_token: sent as ``Authorization: Bearer`` (instead of basic auth).
        verify: verify TLS certificates; `ca_bundle` adds a CA file.
        timeout: seconds per request (connect and read).
        retry_budget: total seconds a call may spend retrying.
        backoff_initial, backoff_max: the backoff's first and largest delay, in seconds.
        cache_size: how many schemas by id the LRU keeps.
        breaker_failures: consecutive unreachable attempts that open the circuit breaker.
        breaker_seconds: how long calls then fail at once before one probes the registry.
    """

    url: str
    username: str | None = None
    password: str | None = None
    bearer_token: str | None = None
    verify: bool = True
    ca_bundle: str | None = None
    timeout: float = 10.0
    retry_budget: float = 30.0
    backoff_initial: float = 0.1
    backoff_max: float = 5.0
    cache_size: int = 10_000
    breaker_failures: int = 3
    breaker_seconds: float = 5.0

    def __repr__(self) -> str:  # never show credentials, not even those written in the URL
        url = str(httpx.URL(self.url).copy_with(password=None)) if "@" in self.url else self.url
        return f"RegistryClientConfig(url={url!r}, auth={'yes' if self._auth() else 'no'})"

    def _auth(self) -> httpx.Auth | None:
        if self.username is not None:
            return httpx.BasicAuth(self.username, self.password or "")
        return None


class HttpSchemaRegistry:
    """A `SchemaRegistry` client over httpx; also counts calls and cache hits for metrics."""

    def __init__(self, config: RegistryClientConfig,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        headers = {"Accept": _ACCEPT}
        if config.bearer_token:
            headers["Authorization"] = f"Bearer {config.bearer_token}"
        verify: Any = config.verify
        if config.verify and config.ca_bundle:  # trust this CA file (as httpx did with a path)
            verify = ssl.create_default_context(cafile=config.ca_bundle)
        self._config = config
        self._http = httpx.AsyncClient(
            base_url=config.url.rstrip("/") + "/", auth=config._auth(), headers=headers,
            verify=verify, timeout=config.timeout, transport=transport)
        self._by_id = LRU(config.cache_size)
        self._ids = LRU(config.cache_size)
        self._inflight: dict[int, asyncio.Future[str]] = {}
        self.breaker = Breaker(self.url, failures=config.breaker_failures,
                               seconds=config.breaker_seconds)
        self.dialect = Dialect()
        self.calls = 0
        self.cache_hits = 0

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()

    async def probe(self, timeout: float) -> None:
        """One cheap call with `timeout` and no retry, through the breaker (so it fails at once
        while the breaker is open, and its outcome counts): ``GET /schemas/types``, which every
        Confluent-API registry serves (Confluent >= 5.5, Karapace, Apicurio, flatavro), unlike
        ``/config`` or ``/mode``.

        Raises:
            RegistryUnavailableError: the registry cannot be reached, or the breaker is open.
            RegistryUnsupportedError: no Confluent API at the URL (a wrong path prefix).
            RegistryError: the registry answered with an error (401: wrong credentials, ...).
        """
        await self._request("GET", "schemas/types", timeout=timeout, budget=0)

    # -- transport ------------------------------------------------------------------------
    async def _request(self, method: str, path: str, *, json: Any = None,
                       params: dict[str, str] | None = None,
                       timeout: float | None = None, budget: float | None = None) -> Any:
        """Send, retrying for `budget` seconds; `timeout` and `budget` default to the config."""
        deadline = time.monotonic() + (self._config.retry_budget if budget is None else budget)
        delay = self._config.backoff_initial
        while True:
            probe = self.breaker.admit()  # raises at once while the breaker is open
            try:
                response = await self._attempt(
                    probe, method, path, json=json, params=params,
                    timeout=self._config.timeout if timeout is None else timeout)
            except RegistryUnavailableError as exc:
                failure: RegistryError = exc
            else:
                if response.status_code < 400:
                    return response.json() if response.content else None
                failure = self._error_of(response, method, path)
                if isinstance(failure, RegistryUnsupportedError) or (
                        response.status_code not in _RETRY_STATUSES
                        and response.status_code < 500):
                    raise failure
            if self.breaker.state != "closed":  # this failure opened it: no use waiting
                raise self.breaker.error() from failure
            pause = random.uniform(0, delay)
            if time.monotonic() + pause >= deadline:
                raise failure
            await asyncio.sleep(pause)
            delay = min(delay * 2, self._config.backoff_max)

    async def _attempt(self, probe: bool, method: str, path: str, **send: Any
                       ) -> httpx.Response:
        """One request, its outcome told to the breaker (`probe`: it is the breaker's probe).

        Raises:
            RegistryUnavailableError: the registry could not be reached.
        """
        self.calls += 1
        try:
            response = await self._http.request(method, path, **send)
        except httpx.TransportError as exc:
            reason = _reason(exc)
            self.breaker.failed(reason)
            raise RegistryUnavailableError(
                f"schema registry at {self.url} is unreachable: {reason}",
                url=self.url, reason=reason) from exc
        except BaseException:  # cancelled: it learnt nothing, so another call may probe
            if probe:
                self.breaker.abandoned()
            raise
        if response.status_code in _GATEWAY_DOWN:
            self.breaker.failed(f"answered {response.status_code}")
        else:
            self.breaker.succeeded()
        return response

    @property
    def url(self) -> str:
        """The registry's URL, without credentials (for messages)."""
        url = httpx.URL(self._config.url)
        return str(url.copy_with(username=None, password=None))

    def _error_of(self, response: httpx.Response, method: str, path: str) -> RegistryError:
        status = response.status_code
        try:
            body = response.json()
            code = int(body.get("error_code", status))
            message = str(body.get("message", ""))
        except (ValueError, AttributeError, TypeError):
            code, message = status, response.text[:200]
        if status in _NO_ROUTE and not 40400 <= code < 40500:
            return RegistryUnsupportedError(
                f"the schema registry at {self.url} does not implement {method} /{path} (it "
                f"answered {status} ({code}): {message}); if no call works, the URL is not "
                "the root of a Confluent-compatible API (Apicurio: .../apis/ccompat/v7, "
                "flatavro serve: .../registry)",
                registry_status=status, error_code=code, operation=f"{method} /{path}")
        if status == 401:
            return RegistryAuthError(
                f"the schema registry at {self.url} refused this service's credentials "
                f"({status} ({code}): {message}); set FLATAVRO_REGISTRY_USERNAME and "
                "FLATAVRO_REGISTRY_PASSWORD, or FLATAVRO_REGISTRY_BEARER_TOKEN",
                registry_status=status, error_code=code)
        cls = ERROR_CLASSES.get(code)
        if cls is None:
            cls = RegistryServerError if response.status_code >= 500 else RegistryError
        return cls(f"schema registry answered {response.status_code} ({code}): {message}",
                   registry_status=response.status_code, error_code=code)

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
        if level is CompatibilityLevel.NONE and await self._unset_level_reads_as_none():
            return None
        return level

    async def _unset_level_reads_as_none(self) -> bool:
        """Whether this registry's NONE for a subject may mean "no level of its own" (asked
        once: see `Dialect.unset_level_reads_as_none`)."""
        if self.dialect.unset_level_reads_as_none is None:
            try:
                await self._request("GET", f"config/{_q(_PROBE_SUBJECT)}")
                self.dialect.unset_level_reads_as_none = False
            except SubjectNotFoundError:
                self.dialect.unset_level_reads_as_none = True
            except RegistryUnavailableError:
                raise  # learnt nothing: ask again next time
            except RegistryError:  # 40408, or a refusal (ACLs): Confluent's way, NONE is NONE
                self.dialect.unset_level_reads_as_none = False
        return self.dialect.unset_level_reads_as_none

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


def _reason(exc: httpx.TransportError) -> str:
    """How an attempt failed, in words: ``connection refused``, ``read timeout``, ..."""
    if isinstance(exc, httpx.TimeoutException):
        return {httpx.ConnectTimeout: "connect timeout", httpx.ReadTimeout: "read timeout",
                httpx.WriteTimeout: "write timeout",
                httpx.PoolTimeout: "no free connection in time"}.get(type(exc), "timeout")
    cause: BaseException | None = exc
    while cause is not None:  # the OS error under httpx's and httpcore's wrappers
        if isinstance(cause, ssl.SSLError):  # an OSError too, whose errno means nothing here
            return f"TLS: {cause.reason or cause}".lower()
        if isinstance(cause, OSError) and cause.errno:
            text = os.strerror(cause.errno) if cause.errno > 0 else str(cause.strerror)
            return text.lower()
        cause = cause.__cause__ or cause.__context__
    return str(exc).lower() or type(exc).__name__


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
