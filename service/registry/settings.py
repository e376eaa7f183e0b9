"""`RegistrySettings`: how to reach an external Confluent-compatible registry, read from the
``FLATAVRO_REGISTRY_*`` environment variables.

One class for everything that talks to a remote registry with `HttpSchemaRegistry`: the
service's `Settings` subclasses it (so the names, validation and defaults are one), and the
Spark jobs' driver builds its client from it (the URL may come from ``--registry-url``;
credentials and TLS only ever from the environment, so they stay out of ``ps``).
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from service.registry.client import RegistryClientConfig
from service.registry.glue import GlueLocation, GlueSchemaRegistry

__all__ = ["RegistrySettings", "redacted_url"]

_URL_PASSWORD = re.compile(r"//([^/@:]*):[^/@]*@")


def redacted_url(url: str) -> str:
    """`url` with a password written into it (``https://user:secret@host``) shown as
    ``**********``."""
    return _URL_PASSWORD.sub(r"//\1:**********@", url)


class RegistrySettings(BaseSettings):
    """The registry client's settings; every field is read from ``FLATAVRO_<NAME>``
    (case-insensitive), e.g. ``FLATAVRO_REGISTRY_URL``. Other ``FLATAVRO_*`` variables are
    ignored. Secrets are `SecretStr` (``**********`` in ``repr``), and a password in the URL
    is hidden from ``repr`` too."""

    model_config = SettingsConfigDict(env_prefix="FLATAVRO_", extra="ignore", frozen=True)

    registry_url: str | None = Field(
        None, description="A Confluent-compatible registry (with any path prefix), or AWS "
                          "Glue's: glue://<registry name>[?region=...&endpoint=...]")
    registry_username: str | None = None
    registry_password: SecretStr | None = None
    registry_bearer_token: SecretStr | None = None
    registry_verify_tls: bool = True
    registry_ca_bundle: str | None = None
    registry_timeout: float = Field(10.0, gt=0)
    registry_retry_budget: float = Field(30.0, ge=0)
    registry_breaker_failures: int = Field(
        3, ge=1, description="Consecutive failures to reach the registry (refused, timed out, "
                             "502/503/504) that open the circuit breaker")
    registry_breaker_seconds: float = Field(
        5.0, gt=0, description="How long registry calls then fail at once (503) before one "
                               "call probes the registry again")

    registry_glue_compatibility: str = Field(
        "BACKWARD", pattern="^(NONE|DISABLED|BACKWARD|BACKWARD_ALL|FORWARD|FORWARD_ALL|FULL|"
                            "FULL_ALL)$",
        description="The compatibility of Glue schemas flatavro creates (Glue's default; "
                    "TiCDC creates its own with NONE)")

    def glue_registry(self) -> GlueSchemaRegistry:
        """The AWS Glue registry `registry_url` names (``glue://``).

        Raises:
            InvalidRegistryUrlError: the URL is not a valid glue:// URL.
        """
        assert self.registry_url
        return GlueSchemaRegistry(GlueLocation.parse(self.registry_url),
                                  timeout=self.registry_timeout,
                                  compatibility=self.registry_glue_compatibility)

    def client_config(self) -> RegistryClientConfig:
        """The `HttpSchemaRegistry` configuration these settings describe.

        Raises:
            ValueError: no `registry_url` (``FLATAVRO_REGISTRY_URL``) is set.
        """
        if not self.registry_url:
            raise ValueError("no registry URL: FLATAVRO_REGISTRY_URL is not set")
        return RegistryClientConfig(
            url=self.registry_url, username=self.registry_username,
            password=_secret(self.registry_password),
            bearer_token=_secret(self.registry_bearer_token), verify=self.registry_verify_tls,
            ca_bundle=self.registry_ca_bundle, timeout=self.registry_timeout,
            retry_budget=self.registry_retry_budget,
            breaker_failures=self.registry_breaker_failures,
            breaker_seconds=self.registry_breaker_seconds,
        )

    def __repr_args__(self) -> Any:
        for name, value in super().__repr_args__():
            if name == "registry_url" and isinstance(value, str):
                value = redacted_url(value)
            yield name, value


def _secret(value: SecretStr | None) -> str | None:
    return value.get_secret_value() if value else None
