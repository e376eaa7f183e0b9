"""Hypothesis settings for the whole suite (loaded by pytest's addopts `-p`): no per-example
deadline. Speed is measured in bench/, never asserted by a timer in a test; on the 2-core CI
machine under two busy xdist workers an example of test_flatread took 306 ms against hypothesis'
default 200 ms deadline and failed a run."""

from __future__ import annotations

from hypothesis import settings

settings.register_profile("flatavro", deadline=None)
settings.load_profile("flatavro")
