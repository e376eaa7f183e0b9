"""What the deploy tests share: the repository root, the bare-PATH builder type, make's env."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

BarePath = Callable[..., str]


def make_env() -> dict[str, str]:
    """This environment without the outer make's variables (under `make test`, MAKELEVEL
    would turn on make's directory lines and MAKEFLAGS would pass on its options)."""
    return {k: v for k, v in os.environ.items() if k not in {"MAKELEVEL", "MAKEFLAGS", "MFLAGS"}}
