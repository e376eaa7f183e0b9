"""``flatavro serve --workers 2``: two processes on one SQLite file register concurrently with
no duplicate id or version and no 5xx, and each answers with what the other registered."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
from collections import defaultdict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple

import httpx
import pytest

from tests.cli.test_schema_cmd import FLATAVRO
from tests.support.harness import free_port

pytestmark = pytest.mark.skipif(not Path("/proc/self/io").exists(),
                                reason="tells the workers apart by /proc/<pid>/io (Linux)")

SHARED = "orders-value"
SUBJECTS = [f"t{n}-value" for n in range(4)]
BUSY_BYTES = 8192
"""Written by a worker that took registrations: each commit writes a 4 KiB WAL page (an idle
worker writes only uvicorn's health-check answers, some 16 bytes a second)."""


def schema(n: int) -> str:
    """Schema n: compatible (BACKWARD) with every other one, distinct from every other one."""
    return json.dumps({"type": "record", "name": "row", "fields": [
        {"name": "id", "type": "long"},
        {"name": f"x{n}", "type": ["null", "string"], "default": None}]})


class Served(NamedTuple):
    url: str
    workers: list[int]
    log: Path


def _workers(pid: int) -> list[int]:
    """Uvicorn's worker processes under `pid` (not multiprocessing's resource tracker)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid and b"spawn_main" in (stat.parent / "cmdline").read_bytes():
                found.append(int(stat.parent.name))
    return sorted(found)


def _accepting(pid: int, port: int) -> bool:
    """Whether worker `pid`'s event loop watches the listening socket on `port`.

    Uvicorn's parent binds the socket; each worker calls listen() and adds it to its epoll set
    only after its lifespan has run, i.e. after it logged "starting": until then a connection
    is refused, or the other worker takes every one."""
    rows = [line.split() for line in Path("/proc/net/tcp").read_text().splitlines()[1:]]
    sockets = {f"socket:[{row[9]}]" for row in rows
               if row[1].endswith(f":{port:04X}") and row[3] == "0A"}  # 0A: LISTEN
    with contextlib.suppress(OSError):
        fds = {fd.name for fd in Path(f"/proc/{pid}/fd").iterdir() if os.readlink(fd) in sockets}
        watched = {line.split()[1] for info in Path(f"/proc/{pid}/fdinfo").iterdir()
                   for line in info.read_text().splitlines() if line.startswith("tfd:")}
        return bool(fds & watched)
    return False


def _started(log: Path) -> list[dict[str, Any]]:
    lines = log.read_text(encoding="utf-8").splitlines()
    return [entry for entry in map(json.loads, (x for x in lines if x.startswith("{")))
            if entry.get("message") == "starting"]


@contextlib.contextmanager
def two_workers(tmp_path: Path) -> Iterator[Served]:
    """``flatavro serve --workers 2`` on a new SQLite file, once both workers have started."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLATAVRO_")}
    env.update(FLATAVRO_REGISTRY_DB_PATH=str(tmp_path / "registry.sqlite"),
               FLATAVRO_LOG_LEVEL="INFO")
    port, log = free_port(), tmp_path / "serve.log"
    with log.open("w", encoding="utf-8") as sink:
        child = subprocess.Popen([str(FLATAVRO), "serve", "--workers", "2", "--port", str(port)],
                                 env=env, stdout=sink, stderr=sink)
    try:
        deadline = time.monotonic() + 20
        while (len(_started(log)) < 2 or len(workers := _workers(child.pid)) < 2
               or not all(_accepting(pid, port) for pid in workers)):
            assert child.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).raise_for_status()
        yield Served(f"http://127.0.0.1:{port}", _workers(child.pid), log)
    finally:
        child.terminate()
        child.wait(timeout=15)


def _written(pid: int) -> int:
    """Bytes the process has written so far (files, sockets, pipes)."""
    text = Path(f"/proc/{pid}/io").read_text()
    return int(text.split("wchar:")[1].split()[0])


def _register(url: str, subject: str, n: int) -> tuple[str, int, httpx.Response]:
    # A connection per request: a busy worker does not accept, so both workers take some.
    response = httpx.post(f"{url}/registry/subjects/{subject}/versions",
                          json={"schema": schema(n)}, timeout=30)
    return subject, n, response


def test_concurrent_registrations_across_workers_keep_ids_and_versions(tmp_path: Path) -> None:
    jobs = [(SHARED, n) for n in range(8)] * 2 + [(s, n) for s in SUBJECTS for n in range(6)]
    with two_workers(tmp_path) as served:
        before = {pid: _written(pid) for pid in served.workers}
        with ThreadPoolExecutor(8) as pool:
            done = list(pool.map(lambda job: _register(served.url, *job), jobs))
        served_some = {pid: _written(pid) - before[pid] > BUSY_BYTES for pid in served.workers}
        with ThreadPoolExecutor(8) as pool:
            latest = dict(pool.map(lambda s: (s, _latest(served.url, s)), [SHARED, *SUBJECTS]))
            by_id = dict(pool.map(lambda n: (n, _by_id(served.url, done, n)), range(8)))
        configs = [entry["config"] for entry in _started(served.log)]

    assert len(configs) == 2 and {c["workers"] for c in configs} == {2}
    assert served_some == {pid: True for pid in served.workers}, "one worker took everything"
    assert [r.status_code for _, _, r in done] == [200] * len(jobs), [r.text for *_, r in done]
    ids: dict[int, set[int]] = defaultdict(set)
    versions: dict[str, dict[int, set[int]]] = defaultdict(lambda: defaultdict(set))
    for subject, n, response in done:
        ids[n].add(response.json()["id"])
        versions[subject][response.json()["version"]].add(n)
    assert all(len(held) == 1 for held in ids.values()), ids  # one id per schema...
    assert len({held.pop() for held in ids.values()}) == 8  # ...and a different one for each
    assert sorted(versions[SHARED]) == list(range(1, 9))  # no gap, no duplicate
    assert sorted(len(ns) for ns in versions[SHARED].values()) == [1] * 8
    for subject in SUBJECTS:
        assert sorted(versions[subject]) == list(range(1, 7))
        assert sorted(len(ns) for ns in versions[subject].values()) == [1] * 6
    for subject, answers in latest.items():
        top = max(versions[subject])
        [n] = versions[subject][top]
        assert answers == [(top, json.loads(schema(n)))] * len(answers)
    assert by_id == {n: [json.loads(schema(n))] * 4 for n in range(8)}


def _latest(url: str, subject: str) -> list[tuple[int, Any]]:
    """The subject's latest (version, schema) as 4 fresh connections see it."""
    answers = []
    for _ in range(4):
        body = httpx.get(f"{url}/registry/subjects/{subject}/versions/latest", timeout=10).json()
        answers.append((body["version"], json.loads(body["schema"])))
    return answers


def _by_id(url: str, done: list[tuple[str, int, httpx.Response]], n: int) -> list[Any]:
    """Schema n as 4 fresh connections read it by the id its registration answered."""
    [schema_id] = {r.json()["id"] for _, m, r in done if m == n}
    return [json.loads(httpx.get(f"{url}/registry/schemas/ids/{schema_id}", timeout=10)
                       .json()["schema"]) for _ in range(4)]
