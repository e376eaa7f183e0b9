"""The bridge's log: one line per event on stderr, each starting with ``bridge:``."""

from __future__ import annotations

import sys

__all__ = ["log"]


def log(text: str) -> None:
    """Write `text` as one log line on stderr (flushed: the bridge runs for days)."""
    print(f"bridge: {text}", file=sys.stderr, flush=True)
