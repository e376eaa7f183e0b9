"""The file scheduler of `make test` (tests/support/scheduling.py), driven with fake workers: a
worker busy with the last test of a long file queues the shortest file left, one finishing a
short file takes the longest, and nothing is handed out while a worker has two tests left."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from tests.support.scheduling import ShortFileBehindLong

MINUTES = {"test_long_a.py": 9, "test_long_b.py": 5}
FILES = {"t/test_long_a.py": 1, "t/test_long_b.py": 2, "t/test_mid.py": 3, "t/test_tiny.py": 1}


class Config:
    def __init__(self, workers: int) -> None:
        self.workers = workers
        self.option = SimpleNamespace(loadscopereorder=False)  # --no-loadscope-reorder

    def getvalue(self, name: str) -> Any:
        return {"tx": [f"{self.workers}*popen"], "dist": "loadfile"}.get(name)


class Worker:
    def __init__(self, name: str) -> None:
        self.gateway = SimpleNamespace(id=name)
        self.shutting_down, self.sent = False, []

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent.append(indices)

    def shutdown(self) -> None:
        self.shutting_down = True


def ids() -> list[str]:
    return [f"{file}::test_{n}" for file, count in FILES.items() for n in range(count)]


def started() -> tuple[ShortFileBehindLong, Worker, Worker]:
    scheduler = ShortFileBehindLong(Config(2), minutes=MINUTES)
    first, second = Worker("gw0"), Worker("gw1")
    for worker in (first, second):
        scheduler.add_node(worker)
        scheduler.add_node_collection(worker, ids())
    scheduler.schedule()
    return scheduler, first, second


def files(scheduler: ShortFileBehindLong, worker: Worker) -> list[str]:
    return list(scheduler.assigned_work[worker])


def test_a_worker_on_a_long_file_queues_the_shortest_and_a_free_one_takes_the_longest() -> None:
    scheduler, first, second = started()
    # gw0 got the longest file (one test, so it had to queue another at once: the shortest
    # left); gw1 the next long one with two tests, so nothing more yet.
    assert files(scheduler, first) == ["t/test_long_a.py", "t/test_tiny.py"]
    assert files(scheduler, second) == ["t/test_long_b.py"]
    scheduler.mark_test_complete(second, ids().index("t/test_long_b.py::test_0"))
    # gw1's last test is of a long file: it queues the shortest file left, here the only one.
    assert files(scheduler, second) == ["t/test_long_b.py", "t/test_mid.py"]
    assert not scheduler.workqueue


def test_a_worker_on_a_short_file_takes_the_longest_left() -> None:
    scheduler = ShortFileBehindLong(Config(1), minutes={})
    worker = Worker("gw0")
    scheduler.add_node(worker)
    scheduler.add_node_collection(worker, ids())
    scheduler.schedule()
    # No file is long: plain loadfile order, the next file once one test is left.
    assert files(scheduler, worker) == ["t/test_long_a.py", "t/test_long_b.py"]
    scheduler.mark_test_complete(worker, ids().index("t/test_long_a.py::test_0"))
    scheduler.mark_test_complete(worker, ids().index("t/test_long_b.py::test_0"))
    assert files(scheduler, worker)[-1] == "t/test_mid.py"
