"""`RuntimeSettings`: what opening a `Runtime` needs (registry, caches), from ``FLATAVRO_*``.

The service's `Settings` add the HTTP side (host, port, API keys, body limit, ...); the
command-line tools read only these, so a bridge never parses an HTTP setting.
"""

from __future__ import annotations

import dataclasses

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from service.registry.client import RegistryClientConfig
from service.registry.settings import RegistrySettings

__all__ = ["RuntimeSettings"]


class RuntimeSettings(RegistrySettings):
    """The registry to open and the caches around it; every field is read from
    ``FLATAVRO_<NAME>`` (case-insensitive).

    The external registry's fields (`registry_url`, credentials, TLS, timeout, retry budget,
    breaker) are `RegistrySettings`', shared with the Spark jobs. With no `registry_url` the
    embedded registry (SQLite at `registry_db_path`) is opened.
    """

    model_config = SettingsConfigDict(env_prefix="FLATAVRO_", extra="ignore", frozen=True)

    registry_probe_timeout: float = Field(
        default=0.8, gt=0, description="Timeout of /readyz's one registry call (no retry)")
    registry_db_path: str = "flatavro-registry.sqlite"
    schema_cache_size: int = Field(default=10_000, gt=0,
                                   description="Parsed schemas kept by id")
    tz: str = Field(
        default="UTC",
        description="The changefeeds' time zone (TiCDC's consumers' --tz): where a Debezium "
                    "message's UTC TIMESTAMP is written back to, as an avro changefeed writes "
                    "it; the other protocols carry it in that zone already")
    simple_schema_cache_size: int = Field(
        default=1024, gt=0,
        description="Simple protocol table schemas kept by (schema, table, version)")
    topic_cache_seconds: float = Field(
        default=30.0, ge=0, description="How long a topic's latest schema ids are reused")

    @property
    def embedded(self) -> bool:
        """True when the embedded registry is opened (no `registry_url`)."""
        return not self.registry_url

    def registry_client_config(self) -> RegistryClientConfig:
        """The HTTP client configuration of the external registry (`client_config`, keeping
        `schema_cache_size` schemas by id)."""
        assert self.registry_url
        return dataclasses.replace(self.client_config(), cache_size=self.schema_cache_size)
