"""The count guard (tests/support/count_guard.py) in pytest runs of a generated test file, with
and without xdist: two tests folded into one node id fail the run (xdist drops one of them;
without xdist both run, but the shared id alone fails it), the same file unfolded passes,
deselected tests are not counted as missing, and a run that collects nothing stays exit 5."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[1]
# The plugins the generated tests do not need stay out: they take seconds to import per process.
GUARD = ["-p", "tests.support.count_guard", "-p", "no:cacheprovider", "-p", "no:schemathesis",
         "-p", "no:hypothesispytest", "-p", "no:anyio"]
XDIST = ["-n", "2", "--dist", "loadfile", "--no-loadscope-reorder"]
RUNS = {"xdist": XDIST, "serial": ["-p", "no:xdist"]}
DESELECT = ["-k", "not by_k", "-m", "not slow"]

TESTS = """
import pytest

def test_first(): pass
def test_second(): pass
def test_third(): pass

@pytest.mark.skip(reason="a skipped test is reported")
def test_skipped(): pass

def test_deselected_by_k(): pass

@pytest.mark.slow
def test_deselected_by_m(): pass
"""

# The second test takes the first one's node id, as `schema.parametrize()`'s items did (pytest
# 9 keeps a node's id in `_id`).
FOLD = """
def pytest_collection_modifyitems(items):
    first, second = [item for item in items if item.name in ("test_first", "test_second")]
    second._id = first._id
"""


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    pytester.makeini("[pytest]\nmarkers =\n    slow: deselected by -m")
    pytester.makepyfile(test_guarded=TESTS)
    return pytester


@pytest.mark.parametrize("run", RUNS)
def test_a_test_folded_into_another_ones_node_id_fails_the_run(suite: pytest.Pytester,
                                                              run: str) -> None:
    suite.makeconftest(FOLD)
    result = suite.runpytest_subprocess(*GUARD, *RUNS[run], *DESELECT)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    reported = 3 if run == "xdist" else 4
    never = ": 1 never ran" if run == "xdist" else ""
    result.stdout.fnmatch_lines([
        f"count guard: 4 tests collected, {reported} reported{never} (1 node ids shared by "
        "several tests, xdist runs one of each: test_guarded.py::test_first)"])
    result.assert_outcomes(passed=reported - 1, skipped=1)


@pytest.mark.parametrize("run", RUNS)
def test_every_test_collected_and_reported_passes_deselected_ones_aside(
        suite: pytest.Pytester, run: str) -> None:
    result = suite.runpytest_subprocess(*GUARD, *RUNS[run], *DESELECT)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["count guard: 4 tests collected, 4 reported"])
    result.stdout.no_fnmatch_line("*never ran*")


def test_a_run_that_collects_nothing_still_fails(suite: pytest.Pytester) -> None:
    result = suite.runpytest_subprocess(*GUARD, "-k", "no_such_test")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    result.stdout.fnmatch_lines(["count guard: 0 tests collected, 0 reported"])


def test_a_run_stopped_at_its_first_failure_is_not_counted(suite: pytest.Pytester) -> None:
    suite.makepyfile(test_failing="def test_fails(): assert False\n")
    result = suite.runpytest_subprocess(*GUARD, "-x", "test_failing.py", "test_guarded.py")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.no_fnmatch_line("count guard:*")
