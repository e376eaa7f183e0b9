"""The per-file timing recorder (tests/support/file_times.py) in a pytest run of generated test
files over two xdist workers: each file's wall time and CPU time on its worker, longest first,
and the machine's busy time."""

from __future__ import annotations

import re
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
    # test_slow sleeps; test_busy burns CPU itself and in a process left behind by a shell that
    # has exited (as deploy/kafka/kafka.sh leaves its broker), still alive when the file ends.
    burn = ("import pathlib, time\n"
            "end = time.process_time() + 1.2\n"
            "while time.process_time() < end: pass\n"
            "pathlib.Path('burnt').touch()\n"
            "time.sleep(15)\n")
    pytester.makepyfile(
        test_slow="import time\n\ndef test_a(): time.sleep(1.5)\n",
        test_busy=("import os, shlex, subprocess, sys, time\n\n"
                   "def test_b():\n"
                   f"    burner = shlex.join([sys.executable, '-c', {burn!r}])\n"
                   "    subprocess.run(['sh', '-c', burner + ' >/dev/null 2>&1 &'], check=True)\n"
                   "    end = time.process_time() + 0.6\n"
                   "    while time.process_time() < end: pass\n"
                   "    while not os.path.exists('burnt'): time.sleep(0.05)\n\n"
                   "def test_c(): pass\n"))
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
    assert float(slow.split()[2]) < 0.5, text  # CPU-s: asleep
    (busy,) = [line for line in text.splitlines() if line.endswith("test_busy.py")]
    # The worker's 0.6 s and the left-behind process's 1.2 s.
    assert float(busy.split()[2]) >= 1.6, text
    assert re.search(r"^machine: \d+ CPU-s busy of \d+ \(\d+%\) on \d+ cores$", printed,
                     re.MULTILINE), printed[-2000:]
    assert report(pytester.path / "nothing").startswith("no recording in")
