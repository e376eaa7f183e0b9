"""Where a `make test` run's time goes: each test file's wall time and CPU time on each
pytest-xdist worker, and how busy the machine's cores were over the run.

Record with the plugin, then print the report (longest files per worker, with when each ran;
the plugin prints it at the end of the run too, and `make test` records every run)::

    .venv/bin/python -m pytest -n 2 --dist loadfile --no-loadscope-reorder \\
        -p tests.support.file_times
    .venv/bin/python -m tests.support.file_times

Each process appends one JSON line per test (node id, worker, start, end) to
``.pytest_file_times/<worker>.jsonl`` (git-ignored; the controller empties the folder at the
start of each recording run). tests/conftest.py's `_LONG_FILES` minutes come from such
reports.

A file's CPU time is that of the processes its worker started, read at the file's first and
last test. Where the machine lets it (Linux's cgroup v1 ``cpuacct``, as root), each worker
moves itself into a control group of its own: every process it starts stays in the group
wherever it is reparented (a broker left behind by ``kafka.sh``, a Spark driver JVM whose
Python parent was SIGKILLed), and the group's ``cpuacct.usage`` keeps the CPU of those that
have exited. Elsewhere it is the worker and every live process whose environment carries the
worker's `PROCESS_MARK`, each with the CPU of the children it waited for (a process that exits
unwaited is missed). A part started by an earlier file and still running (the worker's broker,
its Spark session) counts where it works. The machine's busy time (``/proc/stat``: all but idle
and I/O wait) is read by the controller at the start and end of the run.
"""

from __future__ import annotations

import contextlib
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
PROCESS_MARK = "FLATAVRO_TEST_PROCESS"
"""The environment variable naming the pytest process that started a process."""
_TICKS = os.sysconf("SC_CLK_TCK")
_out: TextIO | None = None
_last_file: str | None = None  # the file of this process's previous test
_machine_start: tuple[float, float] | None = None
CPUACCT = Path("/sys/fs/cgroup/cpuacct")
_group: Path | None = None  # this process's own cpuacct group, when it could make one


def machine_cpu() -> tuple[float, float]:
    """The machine's CPU seconds since boot: (busy, all), all cores (``/proc/stat``)."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    total = sum(fields[:8])  # user nice system idle iowait irq softirq steal (guest is in user)
    return (total - fields[3] - fields[4]) / _TICKS, total / _TICKS


def own_cpu(mark: str) -> float:
    """CPU seconds of this process and the processes it started: its control group's
    (`join_group`), else its own and every live process's whose environment has
    ``PROCESS_MARK=mark``, each with its waited-for children's."""
    if _group is not None:
        try:
            return int((_group / "cpuacct.usage").read_text()) / 1e9
        except OSError:
            pass
    needle = f"{PROCESS_MARK}={mark}".encode()
    seconds = 0.0
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if int(proc.name) != os.getpid() and \
                    needle not in (proc / "environ").read_bytes().split(b"\0"):
                continue
            stat = (proc / "stat").read_text()
        except OSError:  # gone meanwhile, or not ours to read
            continue
        # utime stime cutime cstime: fields 14-17, counted after the command's ")".
        seconds += sum(int(v) for v in stat.rsplit(")", 1)[1].split()[11:15]) / _TICKS
    return seconds


def _current_group() -> Path | None:
    """This process's cpuacct group (cgroup v1), None without one."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "cpuacct" in controllers.split(","):
            return CPUACCT / path.lstrip("/")
    return None


def groups_available() -> bool:
    """Whether this process can make cpuacct groups (`join_group`)."""
    parent = _current_group()
    return parent is not None and os.access(parent / "cgroup.procs", os.W_OK)


def join_group(name: str) -> Path | None:
    """Move this process into a new cpuacct group `name` below its own, where the processes it
    starts will be counted; None when the machine does not allow it. Empty groups of earlier
    runs beside it are removed."""
    try:
        parent = _current_group()
        if parent is None or not (parent / "cgroup.procs").exists():
            return None
        for stale in parent.glob("flatavro-tests-*"):
            inner = [d for d in stale.rglob("*") if d.is_dir()]
            for folder in sorted(inner, key=lambda d: len(d.parts), reverse=True) + [stale]:
                with contextlib.suppress(OSError):  # still holds processes
                    folder.rmdir()
        group = parent / name
        group.mkdir()
        (group / "cgroup.procs").write_text(str(os.getpid()))
        return group
    except OSError:
        return None


def leave_group() -> None:
    """Move this process back to the parent group and remove its own when nothing is left in
    it (its CPU stays counted in the parent's)."""
    global _group
    if _group is None:
        return
    with contextlib.suppress(OSError):
        (_group.parent / "cgroup.procs").write_text(str(os.getpid()))
        _group.rmdir()
    _group = None


def pytest_configure(config: pytest.Config) -> None:
    """The controller (or the only process) starts each recording afresh; each process that
    runs tests marks the processes it starts (`PROCESS_MARK`) and counts them in its own
    control group where it can (`join_group`)."""
    global _machine_start, _group
    mark = f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')}-{os.getpid()}"
    os.environ[PROCESS_MARK] = mark
    if hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", None):
        _group = join_group(f"flatavro-tests-{mark}")
    if not hasattr(config, "workerinput"):
        shutil.rmtree(FOLDER, ignore_errors=True)
        _machine_start = machine_cpu()


def pytest_unconfigure(config: pytest.Config) -> None:
    leave_group()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: Any) -> Generator[None, None, None]:
    """Time one test (setup, call and teardown) and append it to this worker's file."""
    global _out, _last_file
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    if _out is None:
        FOLDER.mkdir(exist_ok=True)
        _out = (FOLDER / f"{worker}.jsonl").open("a", encoding="utf-8")
    row: dict[str, Any] = {"id": item.nodeid, "worker": worker, "start": time.time()}
    file = item.nodeid.split("::")[0]
    if _last_file != file:
        row["cpu_start"] = own_cpu(os.environ[PROCESS_MARK])
    yield
    row["end"] = time.time()
    if nextitem is None or nextitem.nodeid.split("::")[0] != file:
        row["cpu_end"] = own_cpu(os.environ[PROCESS_MARK])
    _last_file = file
    _out.write(json.dumps(row) + "\n")
    _out.flush()


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config
                            ) -> None:
    """The controller (or the only process) ends the run with the report."""
    if not hasattr(config, "workerinput"):
        terminalreporter.write_sep("=", "wall time per test file and worker "
                                        "(tests/support/file_times.py)")
        terminalreporter.write_line(report(top=15))
        if _machine_start is not None:
            terminalreporter.write_line(machine_line(_machine_start, machine_cpu()))


def machine_line(start: tuple[float, float], end: tuple[float, float]) -> str:
    """How busy the machine's cores were between two `machine_cpu` readings."""
    busy, total = end[0] - start[0], end[1] - start[1]
    return (f"machine: {busy:.0f} CPU-s busy of {total:.0f} ({busy / max(total, 1e-9):.0%}) "
            f"on {os.cpu_count()} cores")


def report(folder: Path = FOLDER, *, top: int = 25) -> str:
    """Per worker: when it ended and its CPU seconds, then its `top` longest files (wall
    seconds, CPU seconds when recorded, from-to)."""
    rows = [json.loads(line) for path in sorted(folder.glob("*.jsonl"))
            for line in path.read_text(encoding="utf-8").splitlines()]
    if not rows:
        return f"no recording in {folder}: run pytest with -p tests.support.file_times"
    origin = min(r["start"] for r in rows)
    spans: dict[tuple[str, str], list[float]] = {}
    cpu: dict[tuple[str, str], list[float]] = {}
    for row in rows:
        at = (row["worker"], row["id"].split("::")[0])
        span = spans.setdefault(at, [row["start"], 0])
        span[0], span[1] = min(span[0], row["start"]), max(span[1], row["end"])
        for name in ("cpu_start", "cpu_end"):
            if name in row:
                cpu.setdefault(at, []).append(row[name])
    # A file's CPU: its last reading less its first (a file run in one stretch).
    used = {at: max(r) - min(r) for at, r in cpu.items() if len(r) >= 2}
    lines = []
    for worker in sorted({w for w, _ in spans}):
        own = sorted(((end - start, start - origin, end - origin, file)
                      for (w, file), (start, end) in spans.items() if w == worker), reverse=True)
        mine = [s for (w, _), s in used.items() if w == worker]
        lines.append(f"{worker}: ends at {max(o[2] for o in own):.0f} s, {len(own)} files"
                     + (f", {sum(mine):.0f} CPU-s" if mine else ""))
        lines += [f"  {took:7.1f} s {_cpu(used.get((worker, file)))}  [{begin:5.0f}-{end:5.0f}]"
                  f"  {file}" for took, begin, end, file in own[:top]]
    return "\n".join(lines)


def _cpu(seconds: float | None) -> str:
    return "     -     " if seconds is None else f"{seconds:7.1f} CPU-s"


if __name__ == "__main__":
    print(report(top=int(sys.argv[1]) if len(sys.argv) > 1 else 25))
