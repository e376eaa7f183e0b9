"""What the benchmarks share: timing one piece of work, and a figure over rounds."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

__all__ = ["spread", "timed", "summary"]


def timed(work: Callable[[], object]) -> float:
    """Seconds `work()` took."""
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def spread(values: list[float]) -> str:
    """The median of `values` and their range: ``0.59 (0.55-0.63)``."""
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def summary(figures: list[tuple[str, float, str, bool]], *, width: int) -> None:
    """The closing table of a benchmark: each figure's name, value, target and whether it is
    met."""
    print(f"\n{'figure':<{width}}{'value':>8}  {'target':<8}  met")
    for name, value, target, ok in figures:
        print(f"{name:<{width}}{value:>8.2f}  {target:<8}  {'yes' if ok else 'NO'}")
