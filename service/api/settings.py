"""`Settings`: the service's one configuration door (environment variables ``FLATAVRO_*``)."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import NoDecode, SettingsConfigDict

from service.registry.client import RegistryClientConfig
from service.registry.settings import RegistrySettings, redacted_url

__all__ = ["Settings"]


class Settings(RegistrySettings):
    """Service settings; every field is read from ``FLATAVRO_<NAME>`` (case-insensitive).

    The external registry's fields (`registry_url`, credentials, TLS, timeout, retry budget,
    breaker) are `RegistrySettings`', shared with the Spark jobs. With no `registry_url` the
    service runs the embedded registry (SQLite at `registry_db_path`) and serves its Confluent
    REST API under ``/registry``.
    """

    model_config = SettingsConfigDict(env_prefix="FLATAVRO_", extra="ignore", frozen=True)

    host: str = "127.0.0.1"
    port: int = Field(8080, ge=0, le=65535)
    workers: int = Field(
        1, ge=1, description="Worker processes of `flatavro serve` (each uses one core); they "
                             "share the embedded registry's SQLite file")
    registry_probe_timeout: float = Field(
        0.8, gt=0, description="Timeout of /readyz's one registry call (no retry)")
    registry_db_path: str = "flatavro-registry.sqlite"
    api_keys: Annotated[list[SecretStr], NoDecode] = Field(
        default_factory=list, description="Comma-separated keys; when set, writes need one")
    protect_reads: bool = Field(False, description="Reads need an API key too")
    max_body_bytes: int = Field(16 << 20, gt=0)
    schema_cache_size: int = Field(10_000, gt=0, description="Parsed schemas kept by id")
    simple_schema_cache_size: int = Field(
        1024, gt=0, description="Simple protocol table schemas kept by (schema, table, version)")
    topic_cache_seconds: float = Field(
        30.0, ge=0, description="How long a topic's latest schema ids are reused")
    retry_after_seconds: int = Field(5, ge=1, description="Retry-After when the registry is down")
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"

    @field_validator("api_keys", mode="before")
    @classmethod
    def _split_keys(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [k.strip() for k in value.split(",") if k.strip()]
        return value

    @property
    def embedded(self) -> bool:
        """True when the service runs its own registry."""
        return not self.registry_url

    def registry_client_config(self) -> RegistryClientConfig:
        """The HTTP client configuration of the external registry (`client_config`, keeping
        `schema_cache_size` schemas by id)."""
        assert self.registry_url
        return dataclasses.replace(self.client_config(), cache_size=self.schema_cache_size)

    def redacted(self) -> dict[str, Any]:
        """The effective configuration for logs: secrets shown as ``**********``."""
        shown = self.model_dump(mode="json")
        shown["api_keys"] = [str(k) for k in self.api_keys]
        if self.registry_url:  # credentials written into the URL itself
            shown["registry_url"] = redacted_url(self.registry_url)
        return shown

