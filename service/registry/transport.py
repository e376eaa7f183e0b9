"""`RegistryTransport`: how `HttpSchemaRegistry` talks to a registry over HTTP.

Retries connect errors, timeouts, 408, 429 and 5xx with capped exponential backoff and full
jitter inside a total time budget, never other 4xx, and stops at once when the circuit breaker
opens (a registry that cannot be reached fails calls at once instead of after the whole budget:
see `Breaker`); turns each error answer into our registry errors: Confluent ``error_code``s,
an operation the registry does not implement (`RegistryUnsupportedError`), refused credentials
(`RegistryAuthError`).
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

from service.registry.breaker import Breaker
from service.registry.errors import (
    ERROR_CLASSES,
    RegistryAuthError,
    RegistryError,
    RegistryServerError,
    RegistryUnavailableError,
    RegistryUnsupportedError,
)

__all__ = ["RegistryClientConfig", "RegistryTransport", "path_part", "query_flag"]

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


class RegistryTransport:
    """One registry's HTTP connection pool, retries and circuit breaker; counts its calls."""

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
        self.breaker = Breaker(self.url, failures=config.breaker_failures,
                               seconds=config.breaker_seconds)
        self.calls = 0

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
        await self.request("GET", "schemas/types", timeout=timeout, budget=0)

    async def request(self, method: str, path: str, *, json: Any = None,
                      params: dict[str, str] | None = None,
                      timeout: float | None = None, budget: float | None = None) -> Any:
        """Send, retrying for `budget` seconds; `timeout` and `budget` default to the config."""
        deadline = time.monotonic() + (self._config.retry_budget if budget is None else budget)
        delay = self._config.backoff_initial
        while True:
            probe = self.breaker.admit()  # raises at once while the breaker is open
            try:
                response = await self._attempt(
                    method, path, probe=probe, json=json, params=params,
                    timeout=self._config.timeout if timeout is None else timeout)
            except RegistryUnavailableError as exc:
                failure: RegistryError = exc
            else:
                if response.status_code < 400:
                    return response.json() if response.content else None
                failure = self._error_of(response, method=method, path=path)
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

    async def _attempt(self, method: str, path: str, *, probe: bool, **send: Any
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

    def _error_of(self, response: httpx.Response, *, method: str, path: str
                  ) -> RegistryError:
        """The registry error an error answer means (its ``error_code``, else its status)."""
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


def path_part(name: str) -> str:
    """A subject (or other name) quoted as one path segment: ``/`` too is escaped."""
    return quote(name, safe="")


def query_flag(flag: bool) -> str:
    """A boolean query parameter as Confluent reads it."""
    return "true" if flag else "false"


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
