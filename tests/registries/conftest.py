"""The external-registry suite: every test here runs against each Confluent-API registry this
project can run for real — flatavro's embedded registry served by another `flatavro serve`,
and Apicurio Registry 2.6 — over real sockets. A test uses subjects of its own (`names`), so
one registry per kind serves the whole session."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from service.api.app import create_app
from service.api.settings import Settings
from tests.support.parts import ExternalRegistry
from tests.support.registries import Names

_counter = itertools.count(1)


@pytest.fixture(params=["flatavro", "apicurio"])
def registry(request: pytest.FixtureRequest) -> ExternalRegistry:
    """Each external registry in turn (session-scoped instances)."""
    return request.getfixturevalue(f"{request.param}_registry"
                                   if request.param == "flatavro" else request.param)


@pytest.fixture
def names(registry: ExternalRegistry) -> Names:
    return Names(f"{registry.name}{next(_counter)}")


@pytest.fixture
def service(registry: ExternalRegistry, tmp_path: Path) -> Iterator[TestClient]:
    """flatavro's service with FLATAVRO_REGISTRY_URL pointing at the registry."""
    settings = Settings(registry_url=registry.url, log_level="WARNING",
                        registry_retry_budget=0)
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        yield client
