"""Deploy fixtures: a PATH holding only chosen tools (a machine without java or mvn)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from tests.support.deploy import BarePath

# This interpreter's real binary: the python3 of the bare PATH (a pyenv shim would need pyenv).
PYTHON3 = Path(sys.executable).resolve()


@pytest.fixture
def bare_path(tmp_path: Path) -> BarePath:
    """Build a directory of symlinks to the named tools (python3 is this interpreter) and
    return it for use as the whole PATH; `extra` adds links to given files."""

    def build(*tools: str, **extra: Path) -> str:
        directory = tmp_path / "bare-bin"
        directory.mkdir(exist_ok=True)
        links = {"python3": PYTHON3, **extra}
        for tool in tools:
            found = shutil.which(tool)
            assert found, f"{tool} is not on this machine's PATH"
            links.setdefault(tool, Path(found))
        for name, target in links.items():
            (directory / name).symlink_to(target)
        return str(directory)

    return build
