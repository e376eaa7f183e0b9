"""Registry fixtures: the embedded registry served by uvicorn on an ephemeral loopback port."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from service.registry.embedded.registry import EmbeddedRegistry
from tests.support.registry import ServedRegistry


@pytest.fixture
def served_registry(tmp_path: Path) -> Iterator[ServedRegistry]:
    registry = EmbeddedRegistry(tmp_path / "registry.sqlite")
    served = ServedRegistry(registry, max_body_bytes=64 * 1024).start()
    yield served
    served.stop()
    registry.close()
