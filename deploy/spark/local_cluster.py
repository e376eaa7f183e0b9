"""A Spark standalone cluster on loopback, started from the venv's pyspark with spark-class: a
Master and Workers of one core each, their logs and work directories under one folder (the
`spark_cluster` fixture's, and bench_stream's for its scale-out figure)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from deploy.spark import jvm_archive
from deploy.spark.jvm_archive import spark_home

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
START_SECONDS = 120
TEST_DEFAULTS = """\
# The cluster's Spark settings, given to every job started with SparkCluster.env: on one
# machine every executor is as local as another. (Every JVM of the cluster runs the C1 JIT
# alone, with the class-data archive when there is one: deploy/spark/jvm_archive.py.)
spark.locality.wait 0
"""



def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])

class SparkCluster:
    """A running standalone cluster: `url` (``spark://127.0.0.1:<port>``) for ``--master``,
    `env` for the jobs' processes (the cluster's Spark settings, loopback only), the
    master's JSON at `web_url`, one `worker-<n>/` work directory per worker (each executor's
    stdout/stderr under ``<app-id>/<executor-id>/``)."""

    def __init__(self, base: Path, *, workers: int = 2, memory: str = "1g",
                 defaults: str = TEST_DEFAULTS, c1_jit: bool = True,
                 whole_stage: bool = False) -> None:
        """Start a master and `workers` workers (1 core, `memory` each) in `base`, with
        `defaults` (spark-defaults.conf lines) as the jobs' settings and every JVM on the C1
        JIT alone unless `c1_jit` is false and without whole-stage code generation unless
        `whole_stage` (jvm_archive.cluster_env); fail loudly (never skip)
        when they are not all up within START_SECONDS."""
        self.base, self.memory = base, memory
        self.port, self.web_port = free_port(), free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        self.web_url = f"http://127.0.0.1:{self.web_port}"
        self.env = {**os.environ, **jvm_archive.cluster_env(defaults, c1_jit=c1_jit,
                                                                whole_stage=whole_stage),
                    "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOCAL_HOSTNAME": "127.0.0.1"}
        self.master = self._spawn("master", MASTER_CLASS, "--host", "127.0.0.1", "--port",
                                  str(self.port), "--webui-port", str(self.web_port))
        self.workers: list[subprocess.Popen[bytes] | None] = []
        try:
            self._wait(lambda state: state.get("status") == "ALIVE", "the master")
            for index in range(workers):
                self.start_worker(index)
        except BaseException:
            self.stop()
            raise

    def _spawn(self, name: str, main_class: str, *args: str) -> subprocess.Popen[bytes]:
        """spark-class `main_class` in its own process group (with the executors a worker
        starts), its output in ``<name>.log``."""
        home = spark_home()
        env = {**self.env, "SPARK_HOME": str(home), "SPARK_DAEMON_MEMORY": "512m",
               "SPARK_DAEMON_JAVA_OPTS": " ".join(
                   ["-XX:+UseSerialGC", *jvm_archive.jvm_options()]),
               "SPARK_LOCAL_DIRS": str(self.base / f"{name}-tmp")}
        with (self.base / f"{name}.log").open("ab") as log:
            return subprocess.Popen([str(home / "bin" / "spark-class"), main_class, *args],
                                    env=env, stdout=log, stderr=subprocess.STDOUT,
                                    cwd=self.base, start_new_session=True)

    def state(self) -> dict[str, Any]:
        """The master's JSON (``/json/``): its status, workers and applications."""
        response = httpx.get(f"{self.web_url}/json/", timeout=5)
        response.raise_for_status()
        state: dict[str, Any] = response.json()
        return state

    def alive_workers(self) -> int:
        """How many workers the master counts as ALIVE."""
        return _alive(self.state())

    def _wait(self, condition: Callable[[dict[str, Any]], bool], what: str,
              timeout: float = START_SECONDS) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for name, process in self._processes():
                assert process.poll() is None, f"{name} exited:\n{self.log_tail(name)}"
            try:
                if condition(self.state()):
                    return
            except httpx.TransportError:
                pass  # the master's UI is not up yet
            except httpx.HTTPStatusError as error:
                # Jetty listens a moment before the master attaches its pages: a 404 then
                if error.response.status_code != 404:
                    raise
            time.sleep(0.2)
        raise AssertionError(f"{what} of the Spark cluster did not come up within {timeout} s:"
                             f"\n{self.log_tail('master')}")

    def _processes(self) -> list[tuple[str, subprocess.Popen[bytes]]]:
        running = [(f"worker-{n}", w) for n, w in enumerate(self.workers) if w is not None]
        return [("master", self.master), *running]

    def log_tail(self, name: str) -> str:
        """The last lines of ``<name>.log`` (master, worker-<n>)."""
        return (self.base / f"{name}.log").read_text(errors="replace")[-3000:]

    def start_worker(self, index: int) -> None:
        """Start worker `index` (again, after `kill_worker`; the next index adds one) and
        wait until the master has every worker ALIVE."""
        if index == len(self.workers):
            self.workers.append(None)
        work = self.base / f"worker-{index}"
        work.mkdir(exist_ok=True)
        self.workers[index] = self._spawn(
            f"worker-{index}", WORKER_CLASS, "--host", "127.0.0.1", "--port", "0",
            "--webui-port", "0", "--cores", "1", "--memory", self.memory, "--work-dir",
            str(work), self.url)
        count = sum(w is not None for w in self.workers)
        self._wait(lambda state: _alive(state) >= count, f"worker {index}")

    def kill_worker(self, index: int) -> None:
        """SIGKILL worker `index` with its executors (a machine lost, not a clean stop) and
        wait until the master no longer counts it."""
        process = self.workers[index]
        assert process is not None, f"worker {index} is not running"
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(30)
        self.workers[index] = None
        count = sum(w is not None for w in self.workers)
        self._wait(lambda state: _alive(state) == count, f"the loss of worker {index}",
                   timeout=60)

    def applications(self, name: str) -> list[str]:
        """The ids of the applications called `name` the master has run or runs, oldest
        first."""
        state = self.state()
        apps = state["activeapps"] + state["completedapps"]
        return sorted(app["id"] for app in apps if app["name"] == name)

    def executor_logs(self, app_id: str) -> dict[str, str]:
        """Each executor's stderr of application `app_id`, by ``worker-<n>/<executor-id>``."""
        return {f"{path.parts[-4]}/{path.parts[-2]}": path.read_text(errors="replace")
                for path in sorted(self.base.glob(f"worker-*/{app_id}/*/stderr"))}

    def stop(self) -> None:
        """SIGTERM the workers (with their executors) and the master, SIGKILL what is left
        of their process groups after 20 s."""
        processes = [process for _, process in self._processes()]
        for process in processes:
            _signal_group(process, signal.SIGTERM)
        deadline = time.monotonic() + 20
        for process in processes:
            try:
                process.wait(max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                pass
            _signal_group(process, signal.SIGKILL)  # also an executor that outlived its worker
            process.wait(30)


def _alive(state: dict[str, Any]) -> int:
    return sum(worker["state"] == "ALIVE" for worker in state["workers"])


def _signal_group(process: subprocess.Popen[bytes], signum: int) -> None:
    try:
        os.killpg(process.pid, signum)
    except ProcessLookupError:
        pass  # gone already
