"""`Runtime`: the wiring one process opens once (registry, schema resolver, protocol
converter), shared by the service, ``flatavro convert`` and ``flatavro bridge``.

It knows nothing of HTTP: whoever counts registry calls and cache hits (the service's
metrics) passes hooks to `Runtime.start`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from service.cdc.catalog import new_decoders
from service.codec.convert import Converter
from service.codec.resolver import SchemaResolver
from service.core.options import SchemaOptions
from service.core.schema import SchemaPair
from service.core.table import Table
from service.registry.client import HttpSchemaRegistry
from service.registry.embedded.registry import EmbeddedRegistry
from service.registry.embedded.store import StoreChanges
from service.registry.glue import GlueSchemaRegistry, is_glue_url
from service.registry.instrumented import InstrumentedRegistry
from service.registry.interface import SchemaRegistry
from service.registry.tables import TableRegistration, register_table
from service.usecases.readiness import check_embedded, check_remote
from service.usecases.settings import RuntimeSettings

__all__ = ["Runtime"]


@dataclass
class Runtime:
    """The registry (embedded or remote), the schema resolver and the protocol converter;
    registrations and deletes made through it are seen by the resolver at once."""

    settings: RuntimeSettings
    registry: SchemaRegistry
    resolver: SchemaResolver
    embedded: EmbeddedRegistry | None
    remote: HttpSchemaRegistry | GlueSchemaRegistry | None
    changes: StoreChanges | None = None  # commits to the embedded registry by any worker
    converter: Converter = field(init=False)

    def __post_init__(self) -> None:
        decoders = new_decoders(schema_cache_size=self.settings.simple_schema_cache_size,
                                tz=self.settings.tz)
        self.converter = Converter(self.resolver, self.register_table, decoders=decoders)

    @classmethod
    def start(cls, settings: RuntimeSettings, *,
              on_registry_call: Callable[[str], None] | None = None,
              on_cache_hit: Callable[[], None] = lambda: None) -> Runtime:
        """Open the registry the settings name and build the caches; `on_registry_call` sees
        the name of every registry operation called, `on_cache_hit` every schema lookup the
        cache answers."""
        embedded = EmbeddedRegistry(settings.registry_db_path) if settings.embedded else None
        changes = StoreChanges(settings.registry_db_path) if embedded else None
        remote: HttpSchemaRegistry | GlueSchemaRegistry | None = None
        if not embedded:
            remote = settings.glue_registry() if is_glue_url(settings.registry_url) else \
                HttpSchemaRegistry(settings.registry_client_config())
        registry: Any = embedded or remote
        if on_registry_call is not None:
            registry = InstrumentedRegistry(registry, on_registry_call)
        resolver = SchemaResolver(registry, cache_size=settings.schema_cache_size,
                                  topic_ttl=settings.topic_cache_seconds,
                                  on_cache_hit=on_cache_hit,
                                  changes=changes.version if changes else lambda: 0)
        return cls(settings, registry, resolver, embedded, remote, changes)

    async def stop(self) -> None:
        """Close connections and the SQLite store."""
        if self.remote is not None:
            await self.remote.aclose()
        if self.embedded is not None:
            self.embedded.close()
        if self.changes is not None:
            self.changes.close()

    async def register_table(self, table: Table, options: SchemaOptions, *, topic_rule: str,
                             pair: SchemaPair | None = None) -> TableRegistration:
        """Register a table (or `pair` for it) under its topic; encode sees the new ids at
        once."""
        done = await register_table(self.registry, table, options=options,
                                    topic_rule=topic_rule, pair=pair)
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
