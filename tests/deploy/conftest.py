"""Deploy fixtures: a PATH holding only chosen tools (a machine without java or mvn)."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# This interpreter's real binary: the python3 of the bare PATH (a pyenv shim would need pyenv).
PYTHON3 = Path(sys.executable).resolve()

BarePath = Callable[..., str]


def make_env() -> dict[str, str]:
    """This environment without the outer make's variables (under `make test`, MAKELEVEL
    would turn on make's directory lines and MAKEFLAGS would pass on its options)."""
    return {k: v for k, v in os.environ.items() if k not in {"MAKELEVEL", "MAKEFLAGS", "MFLAGS"}}


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
