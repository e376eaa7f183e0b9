"""The jobs on a real Spark standalone cluster (the `spark_cluster` fixture: a master and two
1-core workers, separate executor JVMs that get the jars from the driver): the bulk read, the
stream (changes, a live schema change, the driver or a worker SIGKILLed mid-stream),
deploy/spark/submit.sh with the cached jars, and a master that does not answer."""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from pyspark.sql import SparkSession
from pyspark.testing import assertDataFrameEqual

from deploy.spark.local_cluster import SparkCluster
from spark_jobs.errors import JobError
from spark_jobs.session import check_master, master_addresses
from spark_jobs.settings.config import StreamConfig
from tests.spark.test_bulk_read import register, service  # noqa: F401  (fixture)
from tests.spark.test_stream import (
    ITEMS_V1,
    ITEMS_V2,
    SCHEMA_V1,
    SCHEMA_V2,
    change,
    create_topic,
    rows,
    send,
    stream,
    table,
)
from tests.spark.test_stream_recovery import history
from tests.support.harness import free_port
from tests.support.parts import ROOT, Broker

JARS = ("spark-avro_2.13", "spark-sql-kafka-0-10_2.13", "delta-spark_2.13")
SUBMIT_SH = ROOT / "deploy" / "spark" / "submit.sh"


def job(module: str, master: str, *args: str) -> list[str]:
    return [sys.executable, "-m", f"spark_jobs.{module}", *args, "--master", master]


def stream_job(config: StreamConfig, master: str, *extra: str) -> list[str]:
    return job("stream", master, "--topic", config.topic, "--bootstrap-servers",
               config.bootstrap_servers, "--service-url", str(config.service_url),
               "--table-path", config.table_path, "--checkpoint", config.checkpoint, *extra)


def bulk_read_args(kafka: Broker, http: httpx.Client, topic: str, output: Path) -> list[str]:
    return ["--topic", topic, "--bootstrap-servers", kafka.bootstrap, "--service-url",
            str(http.base_url), "--output", str(output), "--materialize", "--format", "delta"]


def new_applications(cluster: SparkCluster, name: str, before: list[str]) -> list[str]:
    """The applications called `name` the cluster ran since it ran `before`, oldest first."""
    return sorted(set(cluster.applications(name)) - set(before))


def assert_ran_on_executors(cluster: SparkCluster, app: str, *shipped: str) -> None:
    """Tasks of `app` ran in the workers' executor JVMs, each of which fetched the jars (and
    `shipped` files) from the driver first."""
    ran = {name: log for name, log in cluster.executor_logs(app).items()
           if "Running task" in log}
    assert ran, f"no executor of {app} ran a task: {sorted(cluster.executor_logs(app))}"
    for name, log in ran.items():
        for jar in JARS:
            assert re.search(rf"Fetching spark://127\.0\.0\.1:\d+/jars/{jar}-", log), (name, jar)
        for file in shipped:
            assert re.search(rf"Fetching spark://127\.0\.0\.1:\d+/files/{file}", log), (name,
                                                                                          file)


def until(condition: Any, process: subprocess.Popen[bytes], log: Path,
          timeout: float = 180, poll: float = 0.5) -> None:
    """Wait until `condition()` holds while the job `process` (stderr in `log`) runs."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, f"the job exited:\n{log.read_text()[-3000:]}"
        try:
            if condition():
                return
        except Exception:  # the table may not exist yet
            pass
        time.sleep(poll)
    raise AssertionError(f"the job did not get there in time:\n{log.read_text()[-3000:]}")


def equal(got: Any, expected: Any) -> bool:
    return sorted(got.collect()) == sorted(expected.collect())


def test_bulk_read_runs_on_the_executors_with_the_jars_from_the_driver(
        spark: SparkSession, kafka: Broker, service: httpx.Client,  # noqa: F811
        spark_cluster: SparkCluster, tmp_path: Path) -> None:
    topic = "cluster_bulk"
    create_topic(kafka, topic)
    register(service, ITEMS_V1, topic)
    send(kafka, service, topic, [change("insert", n, f"n{n}", f"{n}.50") for n in range(1, 31)]
         + [change("update", 2, "two", "2.00"), change("delete", 3)])
    before = spark_cluster.applications("flatavro-bulk-read")
    out = tmp_path / "out"
    done = subprocess.run(job("bulk_read", spark_cluster.url,
                              *bulk_read_args(kafka, service, topic, out)),
                          cwd=ROOT, env=spark_cluster.env, capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    expected = [(n, "two" if n == 2 else f"n{n}", "2.00" if n == 2 else f"{n}.50")
                for n in range(1, 31) if n != 3]
    assertDataFrameEqual(spark.read.format("delta").load(str(out)),
                         rows(spark, expected, SCHEMA_V1))
    [app] = new_applications(spark_cluster, "flatavro-bulk-read", before)
    assert_ran_on_executors(spark_cluster, app)


def start(command: list[str], cluster: SparkCluster, log: Path) -> subprocess.Popen[bytes]:
    with log.open("w") as err:
        return subprocess.Popen(command, cwd=ROOT, env=cluster.env, stdout=subprocess.DEVNULL,
                                stderr=err)


def database_job(config: StreamConfig, master: str, pattern: str, *extra: str) -> list[str]:
    """The stream in whole-database mode: every topic of `pattern`, tables beside
    `config.table_path` named by topic."""
    template = str(Path(config.table_path).parent / "{topic}")
    return job("stream", master, "--topic-pattern", pattern, "--bootstrap-servers",
               config.bootstrap_servers, "--service-url", str(config.service_url),
               "--table-path-template", template, "--checkpoint", config.checkpoint, *extra)


def test_a_database_with_a_live_schema_change_and_the_driver_sigkilled_on_the_cluster(
        spark: SparkSession, kafka: Broker, service: httpx.Client,  # noqa: F811
        spark_cluster: SparkCluster, tmp_path: Path) -> None:
    """Two topics in one application (whole-database mode): inserts, updates and deletes of a
    keyed one, a keyless one appended; a version registered while the stream runs; the driver
    SIGKILLed a moment after the table took the new column (the batch that met the new
    version cut short); an available-now restart leaves both tables exact."""
    seed = int(os.environ.get("FLATAVRO_KILL_SEED", random.randrange(1 << 30)))
    print(f"seed {seed} (FLATAVRO_KILL_SEED={seed} repeats the kill moment)")
    topic, keyless = "cluster_stream", "cluster_stream_log"
    for name, ddl in ((topic, ITEMS_V1), (keyless, ITEMS_V1.replace(" PRIMARY KEY", ""))):
        create_topic(kafka, name)
        register(service, ddl, name)
    send(kafka, service, topic, [
        change("insert", 1, "a", "1.00"), change("insert", 2, "b", "2.00"),
        change("insert", 3, "c", "3.00"), change("update", 1, "a2", "1.50"),
        change("delete", 2), change("insert", 4, "d", None)])
    appended = [change("insert", n, f"l{n}", f"{n}.00") for n in range(12)]
    send(kafka, service, keyless, appended)
    config = stream(tmp_path, kafka, service, topic,
                    table_path=str(tmp_path / "lake" / topic))
    before = spark_cluster.applications("flatavro-stream")
    log = tmp_path / "killed.log"
    process = start(database_job(config, spark_cluster.url, "cluster_stream.*", "--trigger",
                                 "processing-time=1 seconds"), spark_cluster, log)
    try:
        first = [(1, "a2", "1.50"), (3, "c", "3.00"), (4, "d", None)]
        until(lambda: equal(table(spark, config), rows(spark, first, SCHEMA_V1)), process, log)
        register(service, ITEMS_V2, topic)  # ALTER TABLE ... ADD COLUMN qty ... DEFAULT 7
        send(kafka, service, topic, [
            change("insert", 2, "b2", "2.20", qty=20), change("update", 3, "c2", "3.30", qty=30),
            change("delete", 4), change("insert", 5, "e", "5.00", qty=50)])
        until(lambda: "now has the columns of cluster_stream-value" in log.read_text(),
              process, log)
        time.sleep(random.Random(seed).uniform(0, 3))
    finally:
        process.kill()
    assert process.wait(120) == -signal.SIGKILL
    done = subprocess.run(database_job(config, spark_cluster.url, "cluster_stream.*",
                                       "--trigger", "available-now"),
                          cwd=ROOT, env=spark_cluster.env, capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    second = [(1, "a2", "1.50", 7), (2, "b2", "2.20", 20), (3, "c2", "3.30", 30),
              (5, "e", "5.00", 50)]
    assertDataFrameEqual(table(spark, config), rows(spark, second, SCHEMA_V2))
    log_table = spark.read.format("delta").load(str(tmp_path / "lake" / keyless))
    assert log_table.count() == log_table.select("_partition", "_offset").distinct().count()
    assertDataFrameEqual(log_table.select("id", "name", "price"), rows(
        spark, [(c["row"]["id"], c["row"]["name"], c["row"]["price"]) for c in appended],
        SCHEMA_V1))
    killed, restarted = new_applications(spark_cluster, "flatavro-stream", before)
    assert_ran_on_executors(spark_cluster, killed)
    assert_ran_on_executors(spark_cluster, restarted)


Task = tuple[int, int, int]
"""A task in an executor's log: (index in its stage, stage id, task id)."""


def tasks(log: str, verb: str) -> set[Task]:
    """The tasks an executor's log says it started (`verb` Running) or finished."""
    return {(int(i), int(stage), int(tid)) for i, stage, tid in re.findall(
        rf"{verb} task (\d+)\.\d+ in stage (\d+)\.\d+ \(TID (\d+)\)", log)}


def unfinished(log: str) -> set[Task]:
    return tasks(log, "Running") - tasks(log, "Finished")


def kill_worker_mid_task(cluster: SparkCluster, app: str, process: subprocess.Popen[bytes],
                         log: Path) -> tuple[set[Task], set[str]]:
    """SIGKILL worker 0 (and its executor) the moment its executor of `app` runs a task, and
    start it again; tries again when the task finished before the kill landed. The tasks
    the killed executors never finished, and those executors."""
    dead: set[str] = set()

    def worker_0(logs: dict[str, str]) -> dict[str, str]:
        return {name: text for name, text in logs.items()
                if name.startswith("worker-0/") and name not in dead}

    for _ in range(3):
        until(lambda: any(unfinished(text) for text
                          in worker_0(cluster.executor_logs(app)).values()),
              process, log, timeout=120, poll=0.01)
        cluster.kill_worker(0)
        killed = worker_0(cluster.executor_logs(app))
        dead |= set(killed)
        cluster.start_worker(0)
        lost = set().union(*(unfinished(text) for text in killed.values()))
        if lost:
            return lost, dead
    raise AssertionError("three kills of worker 0 each came after its task had finished")


@pytest.mark.parametrize("keyless", [False, True], ids=["merge", "append"])
def test_a_worker_sigkilled_mid_batch_loses_and_doubles_nothing(
        spark: SparkSession, kafka: Broker, service: httpx.Client,  # noqa: F811
        spark_cluster: SparkCluster, tmp_path: Path, keyless: bool) -> None:
    """Worker 0 and its executor die while a task of a micro-batch runs there: Spark runs the
    lost tasks, and the tasks whose shuffle output died with the executor, again on the
    executors left; each batch is applied once (merged: the table exact; appended: every
    message once)."""
    topic = f"cluster_worker_kill_{'log' if keyless else 'items'}"
    create_topic(kafka, topic)
    register(service, ITEMS_V1.replace(" PRIMARY KEY", "") if keyless else ITEMS_V1, topic)
    changes, state = history(1, 1000)
    if keyless:  # a change log: every change once, deletes included
        changes = [c for c in changes if c["op"] != "delete"]
    send(kafka, service, topic, changes)
    config = stream(tmp_path, kafka, service, topic)
    before = spark_cluster.applications("flatavro-stream")
    log = tmp_path / "stream.log"
    process = start(stream_job(config, spark_cluster.url, "--trigger", "available-now",
                               "--max-offsets-per-trigger", "200"), spark_cluster, log)
    try:
        until(lambda: "stream: batch" in log.read_text(), process, log)
        [app] = new_applications(spark_cluster, "flatavro-stream", before)
        lost, dead = kill_worker_mid_task(spark_cluster, app, process, log)
        assert process.wait(300) == 0, log.read_text()[-3000:]
    finally:
        if process.poll() is None:
            process.kill()
        if spark_cluster.workers[0] is None:
            spark_cluster.start_worker(0)
    assert "Lost executor" in log.read_text()
    # Each task cut short ran again (a later task id, same stage and index) on an executor
    # that lived.
    rerun = set().union(*(tasks(text, "Finished") for name, text
                          in spark_cluster.executor_logs(app).items() if name not in dead))
    assert all(any((i, stage) == (j, again) and tid > lost_tid for j, again, tid in rerun)
               for i, stage, lost_tid in lost), (lost, dead)
    got = table(spark, config)
    if keyless:
        assert got.select("_partition", "_offset").distinct().count() == got.count() \
            == len(changes)
        expected = [(c["row"]["id"], c["row"]["name"], c["row"]["price"]) for c in changes]
        assertDataFrameEqual(got.select("id", "name", "price"), rows(spark, expected, SCHEMA_V1))
    else:
        assertDataFrameEqual(got, rows(spark, list(state.values()), SCHEMA_V1))


def test_submit_sh_runs_the_bulk_read_with_the_cached_jars(
        spark: SparkSession, kafka: Broker, service: httpx.Client,  # noqa: F811
        spark_cluster: SparkCluster, tmp_path: Path) -> None:
    topic = "cluster_submit"
    create_topic(kafka, topic)
    register(service, ITEMS_V1, topic)
    send(kafka, service, topic, [change("insert", 1, "a", "1.00"), change("insert", 2, "b", "2.00"),
                                 change("update", 1, "a2", "1.10"), change("delete", 2)])
    before = spark_cluster.applications("flatavro-bulk-read")
    env = {**spark_cluster.env, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
           "PYTHON": sys.executable, "PYSPARK_PYTHON": sys.executable,
           "SPARK_MASTER": spark_cluster.url, "FLATAVRO_ZIP": str(tmp_path / "flatavro.zip")}
    out = tmp_path / "out"
    done = subprocess.run([str(SUBMIT_SH), "--local-jars",
                           *bulk_read_args(kafka, service, topic, out)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert ":: resolving dependencies" not in done.stderr  # --jars: no Ivy
    assertDataFrameEqual(spark.read.format("delta").load(str(out)),
                         rows(spark, [(1, "a2", "1.10")], SCHEMA_V1))
    [app] = new_applications(spark_cluster, "flatavro-bulk-read", before)
    assert_ran_on_executors(spark_cluster, app, "flatavro.zip")


def test_a_master_that_does_not_answer_is_one_line_and_exit_2(tmp_path: Path) -> None:
    master = f"spark://127.0.0.1:{free_port()}"
    common = ["--topic", "t", "--bootstrap-servers", "127.0.0.1:9", "--service-url",
              "http://127.0.0.1:9"]
    commands = {
        "bulk_read": job("bulk_read", master, *common, "--output", str(tmp_path / "out")),
        "stream": job("stream", master, *common, "--table-path", str(tmp_path / "table"),
                      "--checkpoint", str(tmp_path / "checkpoint")),
        "submit.sh": [str(SUBMIT_SH), "--local-jars", *common, "--output",
                      str(tmp_path / "out")]}
    env = {**os.environ, "PYTHON": sys.executable, "SPARK_MASTER": master}
    for name, command in commands.items():
        started = time.monotonic()
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=120, check=False)
        assert time.monotonic() - started < 60
        option = "SPARK_MASTER" if name == "submit.sh" else "--master"
        assert (done.returncode, done.stderr.splitlines()) == (2, [
            f"{name}: error: the Spark master {master} does not answer ({master[8:]}: "
            f"Connection refused): start it, or point {option} at a running one"])
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize(("master", "addresses"), [
    ("spark://127.0.0.1:7078", [("127.0.0.1", 7078)]),
    ("spark://m1:7077,m2", [("m1", 7077), ("m2", 7077)]),
    ("spark://[::1]:7079", [("::1", 7079)]),
    ("spark://[::1]", [("::1", 7077)]),
    ("local[2]", []), ("yarn", [])])
def test_master_addresses(master: str, addresses: list[tuple[str, int]]) -> None:
    assert master_addresses(master) == addresses


def test_a_master_port_that_is_not_a_number() -> None:
    with pytest.raises(JobError, match="port that is not a number: x"):
        check_master("spark://h:x")
