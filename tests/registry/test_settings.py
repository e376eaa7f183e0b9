"""`RegistrySettings`: the ``FLATAVRO_REGISTRY_*`` variables, their validation, the client
configuration they make, secrets kept out of ``repr``; the service's `Settings` is one of them."""

from __future__ import annotations

import dataclasses
import os

import pytest
from pydantic import ValidationError

from service.api.settings import Settings
from service.registry.client import RegistryClientConfig
from service.registry.settings import RegistrySettings, redacted_url

EVERY = {
    "FLATAVRO_REGISTRY_URL": "https://sr.example.com/prefix",
    "FLATAVRO_REGISTRY_USERNAME": "key",
    "FLATAVRO_REGISTRY_PASSWORD": "hunter2-password",
    "FLATAVRO_REGISTRY_BEARER_TOKEN": "hunter2-token",
    "FLATAVRO_REGISTRY_VERIFY_TLS": "false",
    "FLATAVRO_REGISTRY_CA_BUNDLE": "/etc/ssl/private-ca.pem",
    "FLATAVRO_REGISTRY_TIMEOUT": "2.5",
    "FLATAVRO_REGISTRY_RETRY_BUDGET": "0",
    "FLATAVRO_REGISTRY_BREAKER_FAILURES": "7",
    "FLATAVRO_REGISTRY_BREAKER_SECONDS": "1.5",
}


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.upper().startswith("FLATAVRO_"):
            monkeypatch.delenv(name)


def test_every_variable_reaches_the_client_configuration(monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    for name, value in EVERY.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("FLATAVRO_PORT", "9999")  # another component's: ignored
    config = RegistrySettings().client_config()
    assert config == RegistryClientConfig(
        url="https://sr.example.com/prefix", username="key", password="hunter2-password",
        bearer_token="hunter2-token", verify=False, ca_bundle="/etc/ssl/private-ca.pem",
        timeout=2.5, retry_budget=0.0, breaker_failures=7, breaker_seconds=1.5)


def test_defaults_are_the_clients(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("flatavro_registry_url", "http://r:8081")  # names are case-insensitive
    assert RegistrySettings().client_config() == RegistryClientConfig(url="http://r:8081")


def test_an_explicit_value_wins_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLATAVRO_REGISTRY_URL", "http://from-env:8081")
    monkeypatch.setenv("FLATAVRO_REGISTRY_USERNAME", "u")
    settings = RegistrySettings(registry_url="http://from-flag:8081")
    assert settings.client_config().url == "http://from-flag:8081"
    assert settings.client_config().username == "u"


def test_no_url_no_client(monkeypatch: pytest.MonkeyPatch) -> None:
    assert RegistrySettings().registry_url is None
    with pytest.raises(ValueError, match="FLATAVRO_REGISTRY_URL is not set"):
        RegistrySettings().client_config()


@pytest.mark.parametrize(("name", "value"), [
    ("FLATAVRO_REGISTRY_TIMEOUT", "0"), ("FLATAVRO_REGISTRY_RETRY_BUDGET", "-1"),
    ("FLATAVRO_REGISTRY_VERIFY_TLS", "maybe"), ("FLATAVRO_REGISTRY_BREAKER_FAILURES", "0")])
def test_invalid_values_are_refused(monkeypatch: pytest.MonkeyPatch, name: str, value: str
                                    ) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ValidationError) as caught:
        RegistrySettings()
    assert [e["loc"] for e in caught.value.errors()] == [(name.removeprefix("FLATAVRO_").lower(),)]


def test_secrets_are_not_in_repr(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in EVERY.items():
        monkeypatch.setenv(name, value)
    for settings in (RegistrySettings(), Settings()):
        assert "hunter2" not in f"{settings!r} {settings} {settings.client_config()!r}"
    monkeypatch.setenv("FLATAVRO_REGISTRY_URL", "https://key:hunter2-url@sr.example.com")
    for settings in (RegistrySettings(), Settings()):
        assert "hunter2" not in f"{settings!r} {settings}"
        assert "https://key:**********@sr.example.com" in repr(settings)
    assert "hunter2" not in str(Settings().redacted())


def test_redacted_url() -> None:
    assert redacted_url("https://u:p@h:1/x") == "https://u:**********@h:1/x"
    assert redacted_url("https://h:1/x") == "https://h:1/x"


def test_the_service_settings_are_registry_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Same names, same validation; the service's client keeps FLATAVRO_SCHEMA_CACHE_SIZE."""
    for name, value in EVERY.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("FLATAVRO_SCHEMA_CACHE_SIZE", "42")
    settings = Settings()
    assert isinstance(settings, RegistrySettings) and not settings.embedded
    assert set(RegistrySettings.model_fields) <= set(Settings.model_fields)
    config = settings.registry_client_config()
    assert config == dataclasses.replace(RegistrySettings().client_config(), cache_size=42)
    monkeypatch.setenv("FLATAVRO_REGISTRY_TIMEOUT", "0")
    with pytest.raises(ValidationError):
        Settings()

