"""`RegistryCache`: what the HTTP client remembers for the process life.

Id -> schema text (ids are immutable) and (subject, schema identity) -> registration, both
bounded LRUs, with one registry call for concurrent requests of one id.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from service.core.lru import LRU
from service.registry.canonical import canonical_schema
from service.registry.model import RegisteredSchema

__all__ = ["RegistryCache"]


class RegistryCache:
    """Schema texts by id and registrations by (subject, schema); counts its hits."""

    def __init__(self, size: int) -> None:
        """Keep at most `size` texts and `size` registrations."""
        self._by_id = LRU(size)
        self._ids = LRU(size)
        self._inflight: dict[int, asyncio.Future[str]] = {}
        self.hits = 0

    @staticmethod
    def key(subject: str, schema: str) -> tuple[str, str]:
        """The registration key of `schema` under `subject` (its identity, not its spelling)."""
        return (subject, canonical_schema(schema))

    def registration(self, key: tuple[str, str]) -> RegisteredSchema | None:
        """The registration remembered under `key` (a hit), else None."""
        cached: RegisteredSchema | None = self._ids.get(key)
        if cached is not None:
            self.hits += 1
        return cached

    def remember_registration(self, key: tuple[str, str], found: RegisteredSchema) -> None:
        """Remember a registration under `key`."""
        self._ids.put(key, found)

    def remember_text(self, schema_id: int, text: str) -> None:
        """Remember the schema text of an id."""
        self._by_id.put(schema_id, text)

    async def text(self, schema_id: int, fetch: Callable[[], Awaitable[str]]) -> str:
        """The schema text of an id: remembered (a hit), awaited from a call already asking
        for it, or fetched with `fetch` (failures are not remembered)."""
        cached = self._by_id.get(schema_id)
        if cached is not None:
            self.hits += 1
            return str(cached)
        pending = self._inflight.get(schema_id)
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._inflight[schema_id] = future
        try:
            text = await fetch()
            self._by_id.put(schema_id, text)
            future.set_result(text)
            return text
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # mark retrieved: waiters re-raise it themselves
            raise
        finally:
            del self._inflight[schema_id]
