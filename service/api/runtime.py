"""`Runtime`: what one app instance holds (registry, resolver, metrics, keys) and its start-up."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from service.api.auth import ApiKeys
from service.api.metrics import Metrics
from service.api.readiness import check_embedded, check_remote
from service.api.settings import Settings
from service.cdc.catalog import new_decoders
from service.codec.convert import Converter
from service.codec.resolver import SchemaResolver
from service.core.options import SchemaOptions
from service.core.schema import SchemaPair
from service.core.table import Table
from service.registry.client import HttpSchemaRegistry
from service.registry.embedded.registry import EmbeddedRegistry
from service.registry.embedded.store import StoreChanges
from service.registry.instrumented import InstrumentedRegistry
from service.registry.interface import SchemaRegistry
from service.registry.tables import TableRegistration, register_table

__all__ = ["Runtime"]


@dataclass
class Runtime:
    """The registry (embedded or remote, instrumented), the schema resolver, the protocol
    converter, metrics, keys."""

    settings: Settings
    metrics: Metrics
    keys: ApiKeys
    registry: SchemaRegistry
    resolver: SchemaResolver
    embedded: EmbeddedRegistry | None
    remote: HttpSchemaRegistry | None
    changes: StoreChanges | None = None  # commits to the embedded registry by any worker
    converter: Converter = field(init=False)

    def __post_init__(self) -> None:
        decoders = new_decoders(
            schema_cache_size=self.settings.simple_schema_cache_size)
        self.converter = Converter(self.resolver, self.register_table, decoders)

    @classmethod
    def start(cls, settings: Settings) -> Runtime:
        """Open the registry the settings name and build the caches."""
        metrics = Metrics()
        embedded = EmbeddedRegistry(settings.registry_db_path) if settings.embedded else None
        changes = StoreChanges(settings.registry_db_path) if embedded else None
        remote = None if embedded else HttpSchemaRegistry(settings.registry_client_config())
        inner: Any = embedded or remote
        registry: Any = InstrumentedRegistry(
            inner, lambda operation: metrics.registry_calls.labels(operation).inc())
        resolver = SchemaResolver(registry, cache_size=settings.schema_cache_size,
                                  topic_ttl=settings.topic_cache_seconds,
                                  on_cache_hit=metrics.cache_hits.inc,
                                  changes=changes.version if changes else lambda: 0)
        keys = ApiKeys((k.get_secret_value() for k in settings.api_keys),
                       protect_reads=settings.protect_reads)
        return cls(settings, metrics, keys, registry, resolver, embedded, remote, changes)

    async def stop(self) -> None:
        """Close connections and the SQLite store."""
        if self.remote is not None:
            await self.remote.aclose()
        if self.embedded is not None:
            self.embedded.close()
        if self.changes is not None:
            self.changes.close()

    async def register_table(self, table: Table, options: SchemaOptions, topic_rule: str, *,
                             pair: SchemaPair | None = None) -> TableRegistration:
        """Register a table (or `pair` for it) under its topic; encode sees the new ids at
        once."""
        done = await register_table(self.registry, table, options, topic_rule, pair=pair)
        self.resolver.forget_topic(done.topic)
        return done

    async def delete_version(self, subject: str, version: str, *, permanent: bool) -> int:
        """Delete one version of a subject and forget cached topic ids that used it."""
        deleted = await self.registry.delete_version(subject, version, permanent=permanent)
        self.resolver.forget_subject(subject)
        return deleted

    async def delete_subject(self, subject: str, *, permanent: bool) -> list[int]:
        """Delete a subject and forget cached topic ids that used it."""
        deleted = await self.registry.delete_subject(subject, permanent=permanent)
        self.resolver.forget_subject(subject)
        return deleted

    async def ready(self) -> None:
        """Raise `NotReadyError` naming the registry when it does not answer: one call of at
        most `registry_probe_timeout` seconds, none while the breaker is open."""
        if self.remote is not None:
            await check_remote(self.remote, self.settings.registry_probe_timeout)
        else:
            assert self.embedded is not None
            await check_embedded(self.embedded)

