"""The per-file timing recorder (tests/support/file_times.py) in a pytest run of generated test
files over two xdist workers: each file's wall time on its worker, longest first."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.file_times import report

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[1]
QUIET = ["-p", "no:cacheprovider", "-p", "no:schemathesis", "-p", "no:hypothesispytest",
         "-p", "no:anyio"]


def test_each_file_is_timed_on_the_worker_that_ran_it(pytester: pytest.Pytester,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    pytester.makepyfile(test_slow="import time\n\ndef test_a(): time.sleep(1.5)\n",
                        test_quick="def test_b(): pass\n\ndef test_c(): pass\n")
    result = pytester.runpytest_subprocess("-p", "tests.support.file_times", *QUIET,
                                           "-n", "2", "--dist", "loadfile")
    result.assert_outcomes(passed=3)
    text = report(pytester.path / ".pytest_file_times")
    # The run ends with the report (what `make test` prints in CI).
    printed = result.stdout.str()
    assert "wall time per test file and worker" in printed
    assert text in printed, printed[-2000:]
    workers = [line for line in text.splitlines() if line.startswith("gw")]
    assert len(workers) == 2 and all("1 files" in line for line in workers), text
    (slow,) = [line for line in text.splitlines() if line.endswith("test_slow.py")]
    assert 1.5 <= float(slow.split()[0]) < 10, text
    assert report(pytester.path / "nothing").startswith("no recording in")
