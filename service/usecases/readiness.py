"""Readiness: whether the registry answers now, and if not, which and why (``/readyz``, the
running `Runtime`'s `ready`)."""

from __future__ import annotations

import sqlite3
from typing import Any

from service.core.errors import ServiceError
from service.registry.client import HttpSchemaRegistry
from service.registry.embedded.registry import EmbeddedRegistry
from service.registry.errors import (
    RegistryError,
    RegistryServerError,
    RegistryUnavailableError,
    RegistryUnsupportedError,
)
from service.registry.glue import GlueSchemaRegistry

__all__ = ["NotReadyError", "check_remote", "check_embedded"]


class NotReadyError(ServiceError):
    """A dependency does not answer; `dependencies` maps each one down to its ``status``
    (``unreachable``, ``failing``, ``refused``, ``unsupported``: no Confluent API at the URL)
    and ``reason``; `retry_after` is when to ask
    again, in seconds, if known."""

    code = "not_ready"

    def __init__(self, message: str, *, retry_after: int | None = None, **details: Any) -> None:
        super().__init__(message, **details)
        self.retry_after = retry_after


async def check_remote(remote: HttpSchemaRegistry | GlueSchemaRegistry, timeout: float
                       ) -> None:
    """Probe the external registry once, within `timeout` seconds (at once while its circuit
    breaker is open).

    Raises:
        NotReadyError: the registry cannot be reached, fails, or refuses the call.
    """
    try:
        await remote.probe(timeout)
    except RegistryError as exc:
        status = ("unreachable" if isinstance(exc, RegistryUnavailableError) else
                  "failing" if isinstance(exc, RegistryServerError) else
                  "unsupported" if isinstance(exc, RegistryUnsupportedError) else "refused")
        facts = {k: v for k, v in exc.details.items() if k != "url"}
        facts.setdefault("reason", exc.message)
        retry_after = exc.retry_after if isinstance(exc, RegistryUnavailableError) else None
        url = remote.url
        raise NotReadyError(
            f"not ready: the schema registry at {url} is {status} ({facts['reason']})",
            retry_after=retry_after,
            dependencies={"registry": {"status": status, "url": url, **facts}}) from exc


async def check_embedded(embedded: EmbeddedRegistry) -> None:
    """Read the embedded registry's global compatibility from its SQLite store.

    Raises:
        NotReadyError: the store does not answer.
    """
    try:
        await embedded.get_compatibility()
    except (ServiceError, sqlite3.Error) as exc:  # sqlite3's own: a read on a broken file
        raise NotReadyError(
            f"not ready: the embedded registry's store does not answer ({exc})",
            dependencies={"registry": {"status": "failing", "reason": str(exc)}}) from exc
