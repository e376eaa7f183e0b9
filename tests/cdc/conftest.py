"""Protocol conversion fixtures: the converter over an embedded registry (SQLite file)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cdc import Harness


@pytest.fixture
def harness(tmp_path: Path) -> Iterator[Harness]:
    h = Harness(tmp_path / "registry.sqlite")
    yield h
    h.close()
