"""The per-file timing recorder (tests/support/file_times.py) in a pytest run of generated test
files over two xdist workers: each file's wall time and CPU time on its worker, longest first,
and the machine's busy time."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.file_times import groups_available, report

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[1]
QUIET = ["-p", "no:cacheprovider", "-p", "no:schemathesis", "-p", "no:hypothesispytest",
         "-p", "no:anyio"]


def test_each_file_is_timed_on_the_worker_that_ran_it(pytester: pytest.Pytester,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    # test_slow sleeps; test_busy burns CPU itself and in processes left behind by a shell that
    # has exited (as deploy/kafka/kafka.sh leaves its broker): one still alive when the file
    # ends, one that has exited, unwaited for by the worker (as a Spark driver's JVM when its
    # Python parent is SIGKILLed), which only a control group of the worker's counts.
    burn = ("import pathlib, sys, time\n"
            "end = time.process_time() + float(sys.argv[1])\n"
            "while time.process_time() < end: pass\n"
            "pathlib.Path(sys.argv[2]).touch()\n"
            "time.sleep(float(sys.argv[3]))\n")
    pytester.makepyfile(
        test_slow="import time\n\ndef test_a(): time.sleep(1.5)\n",
        test_busy=("import os, shlex, subprocess, sys, time\n\n"
                   "def test_b():\n"
                   "    for args in (['1.2', 'alive', '5'], ['0.8', 'gone', '0']):\n"
                   f"        burner = shlex.join([sys.executable, '-c', {burn!r}, *args])\n"
                   "        subprocess.run(['sh', '-c', burner + ' >/dev/null 2>&1 &'],"
                   " check=True)\n"
                   "    end = time.process_time() + 0.6\n"
                   "    while time.process_time() < end: pass\n"
                   "    while not os.path.exists('alive') or not os.path.exists('gone'):\n"
                   "        time.sleep(0.05)\n"
                   "    time.sleep(0.5)  # 'gone' has exited\n\n"
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
    # The worker's 0.6 s and the live left-behind process's 1.2 s; with a control group, the
    # exited one's 0.8 s too.
    assert float(busy.split()[2]) >= (2.4 if groups_available() else 1.6), text
    assert re.search(r"^machine: \d+ CPU-s busy of \d+ \(\d+%\) on \d+ cores$", printed,
                     re.MULTILINE), printed[-2000:]
    assert report(pytester.path / "nothing").startswith("no recording in")
