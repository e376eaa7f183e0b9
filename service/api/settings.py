"""`Settings`: the service's one configuration door (environment variables ``FLATAVRO_*``)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import NoDecode, SettingsConfigDict

from service.codec.claim_check import shown_uri
from service.registry.settings import redacted_url
from service.usecases.settings import RuntimeSettings

__all__ = ["Settings"]


class Settings(RuntimeSettings):
    """Service settings; every field is read from ``FLATAVRO_<NAME>`` (case-insensitive).

    The registry and its caches are `RuntimeSettings`' (the external registry's fields are
    `RegistrySettings`', shared with the Spark jobs); with no `registry_url` the service runs
    the embedded registry and serves its Confluent REST API under ``/registry``. The fields
    here are the HTTP side: where to listen, API keys, the body limit, logs.
    """

    model_config = SettingsConfigDict(env_prefix="FLATAVRO_", extra="ignore", frozen=True)

    host: str = "127.0.0.1"
    port: int = Field(default=8080, ge=0, le=65535)
    workers: int = Field(
        default=1, ge=1,
        description="Worker processes of `flatavro serve` (each uses one core); they share "
                    "the embedded registry's SQLite file")
    api_keys: Annotated[list[SecretStr], NoDecode] = Field(
        default_factory=list, description="Comma-separated keys; when set, writes need one")
    protect_reads: bool = Field(default=False, description="Reads need an API key too")
    max_body_bytes: int = Field(default=16 << 20, gt=0)
    retry_after_seconds: int = Field(default=5, ge=1,
                                     description="Retry-After when the registry is down")
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    claim_check_storage_uris: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Claim-check storages (file:///DIR or s3://BUCKET/PREFIX?..., "
                    "comma-separated) that a convert request may name in "
                    "`claim_check_storage_uri` (compared as written); any other is refused")

    @field_validator("api_keys", "claim_check_storage_uris", mode="before")
    @classmethod
    def _split_keys(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [k.strip() for k in value.split(",") if k.strip()]
        return value

    def redacted(self) -> dict[str, Any]:
        """The effective configuration for logs: secrets shown as ``**********``."""
        shown = self.model_dump(mode="json")
        shown["api_keys"] = [str(k) for k in self.api_keys]
        # an s3:// storage's access-key, secret-access-key and session-token options
        shown["claim_check_storage_uris"] = [shown_uri(u) for u in self.claim_check_storage_uris]
        if self.registry_url:  # credentials written into the URL itself
            shown["registry_url"] = redacted_url(self.registry_url)
        return shown

    def __repr_args__(self) -> Any:
        for name, value in super().__repr_args__():
            if name == "claim_check_storage_uris" and isinstance(value, list):
                value = [shown_uri(u) for u in value]
            yield name, value
