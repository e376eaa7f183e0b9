"""Where a `make test` run's time goes: each test file's wall time on each pytest-xdist worker.

Record with the plugin, then print the report (longest files per worker, with when each ran;
the plugin prints it at the end of the run too, and `make test` records every run)::

    .venv/bin/python -m pytest -n 2 --dist loadfile --no-loadscope-reorder \\
        -p tests.support.file_times
    .venv/bin/python -m tests.support.file_times

Each process appends one JSON line per test (node id, worker, start, end) to
``.pytest_file_times/<worker>.jsonl`` (git-ignored; the controller empties the folder at the
start of each recording run). tests/conftest.py's `_LONG_FILES` minutes come from such
reports.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from collections.abc import Generator
from pathlib import Path
from typing import Any, TextIO

import pytest

FOLDER = Path(".pytest_file_times")
_out: TextIO | None = None


def pytest_configure(config: pytest.Config) -> None:
    """The controller (or the only process) starts each recording afresh."""
    if not hasattr(config, "workerinput"):
        shutil.rmtree(FOLDER, ignore_errors=True)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: Any) -> Generator[None, None, None]:
    """Time one test (setup, call and teardown) and append it to this worker's file."""
    global _out
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    if _out is None:
        FOLDER.mkdir(exist_ok=True)
        _out = (FOLDER / f"{worker}.jsonl").open("a", encoding="utf-8")
    started = time.time()
    yield
    _out.write(json.dumps({"id": item.nodeid, "worker": worker, "start": started,
                           "end": time.time()}) + "\n")
    _out.flush()


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config
                            ) -> None:
    """The controller (or the only process) ends the run with the report."""
    if not hasattr(config, "workerinput"):
        terminalreporter.write_sep("=", "wall time per test file and worker "
                                        "(tests/support/file_times.py)")
        terminalreporter.write_line(report(top=15))


def report(folder: Path = FOLDER, *, top: int = 25) -> str:
    """Per worker: when it ended, then its `top` longest files (seconds, from-to)."""
    rows = [json.loads(line) for path in sorted(folder.glob("*.jsonl"))
            for line in path.read_text(encoding="utf-8").splitlines()]
    if not rows:
        return f"no recording in {folder}: run pytest with -p tests.support.file_times"
    origin = min(r["start"] for r in rows)
    spans: dict[tuple[str, str], list[float]] = {}
    for row in rows:
        span = spans.setdefault((row["worker"], row["id"].split("::")[0]), [row["start"], 0])
        span[0], span[1] = min(span[0], row["start"]), max(span[1], row["end"])
    lines = []
    for worker in sorted({w for w, _ in spans}):
        own = sorted(((end - start, start - origin, end - origin, file)
                      for (w, file), (start, end) in spans.items() if w == worker), reverse=True)
        lines.append(f"{worker}: ends at {max(o[2] for o in own):.0f} s, "
                     f"{len(own)} files")
        lines += [f"  {took:7.1f} s  [{begin:5.0f}-{end:5.0f}]  {file}"
                  for took, begin, end, file in own[:top]]
    return "\n".join(lines)


if __name__ == "__main__":
    print(report(top=int(sys.argv[1]) if len(sys.argv) > 1 else 25))
