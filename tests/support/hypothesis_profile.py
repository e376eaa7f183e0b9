"""Hypothesis settings for the whole suite (loaded by pytest's addopts `-p`): no per-example
deadline. Speed is measured in bench/, never asserted by a timer in a test; on the 2-core CI
machine under two busy xdist workers an example of test_flatread took 306 ms against hypothesis'
default 200 ms deadline and failed a run.

`examples` sizes the property tests: all their examples in `make test` (CI), a fifth in
`make check`, the edit loop (``FLATAVRO_FAST_TIER``), where they took half its time."""

from __future__ import annotations

import os

from hypothesis import settings

FAST_SHARE = 5
"""`make check` runs one example in this many of each property test's (at least `FAST_MIN`)."""

FAST_MIN = 10


def examples(count: int) -> int:
    """A property test's number of examples: `count`, or its share in the fast tier."""
    if os.environ.get("FLATAVRO_FAST_TIER"):
        return min(count, max(FAST_MIN, count // FAST_SHARE))
    return count


settings.register_profile("flatavro", deadline=None)
settings.load_profile("flatavro")
