"""The property tests' sizes: every example in `make test`, a share in `make check`."""

from __future__ import annotations

import pytest

from tests.support.hypothesis_profile import FAST_MIN, FAST_SHARE, examples


def test_make_test_runs_every_example(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FLATAVRO_FAST_TIER", raising=False)
    assert [examples(n) for n in (3, 30, 600)] == [3, 30, 600]


def test_the_fast_tier_runs_a_share_and_never_more_than_asked(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLATAVRO_FAST_TIER", "1")
    assert examples(600) == 600 // FAST_SHARE
    assert examples(30) == FAST_MIN
    assert examples(3) == 3
