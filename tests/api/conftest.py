"""Service fixtures: the app through TestClient, and served by uvicorn over a real socket."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from service.api.app import create_app
from service.api.settings import Settings
from tests.support.api import ClientFactory
from tests.support.harness import ServedApp


@pytest.fixture
def make_client(tmp_path: Path) -> Iterator[ClientFactory]:
    """Build TestClients (lifespan running) on a fresh embedded registry; settings overridable."""
    opened: list[TestClient] = []

    def make(**overrides: Any) -> TestClient:
        settings = Settings(**{"registry_db_path": str(tmp_path / "registry.sqlite"),
                               "log_level": "WARNING", **overrides})
        client = TestClient(create_app(settings), raise_server_exceptions=False)
        opened.append(client.__enter__())
        return client

    yield make
    for client in opened:
        client.__exit__(None, None, None)


@pytest.fixture
def client(make_client: ClientFactory) -> TestClient:
    return make_client()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[ServedApp]:
    """The whole service on a loopback port (uvicorn, lifespan on)."""
    settings = Settings(registry_db_path=str(tmp_path / "served.sqlite"), log_level="WARNING")
    app = ServedApp(create_app(settings), health_path="/healthz", lifespan="on").start()
    yield app
    app.stop()
