"""The streaming job under crashes and bad input: SIGKILL of the driver at random moments and a
restart from the checkpoint (nothing lost, nothing doubled), a micro-batch applied twice, the
registry going away mid-stream, and the refusals before the first micro-batch."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from deltalake import DeltaTable
from pyspark.sql import SparkSession
from pyspark.testing import assertDataFrameEqual

from service.api.app import create_app
from service.api.settings import Settings
from spark_jobs.errors import JobError
from spark_jobs.jobs import stream as stream_job
from spark_jobs.settings.config import StreamConfig, Trigger
from tests.spark.test_bulk_read import encode, register, service  # noqa: F401  (fixture)
from tests.spark.test_stream import (
    ITEMS_V1,
    ITEMS_V2,
    SCHEMA_V1,
    change,
    create_topic,
    produce_by_key,
    rows,
    running,
    send,
    stream,
    table,
)
from tests.support.delta import read_delta
from tests.support.harness import ServedApp, free_port
from tests.support.parts import ROOT, Broker

KEYS = 60


def history(seed: int, count: int) -> tuple[list[dict[str, Any]], dict[int, tuple[Any, ...]]]:
    """`count` random changes over KEYS keys (inserts, updates, deletes, re-inserts) and the
    table they leave, computed by hand."""
    rng, state = random.Random(seed), {}
    changes = []
    for n in range(count):
        key = rng.randrange(KEYS)
        if key in state and rng.random() < 0.25:
            changes.append(change("delete", key))
            del state[key]
            continue
        op = "update" if key in state else "insert"
        row = (key, f"n{n}", f"{rng.randrange(100000) / 100:.2f}")
        changes.append(change(op, *row))
        state[key] = row
    return changes, state


def cli(config: StreamConfig, *extra: str) -> list[str]:
    return [sys.executable, "-m", "spark_jobs.stream", "--topic", config.topic,
            "--bootstrap-servers", config.bootstrap_servers, "--service-url",
            str(config.service_url), "--table-path", config.table_path, "--checkpoint",
            config.checkpoint, "--master", "local[2]", *extra]


def kill_at_random(command: list[str], rng: random.Random, log: Path,
                   signum: int = signal.SIGKILL) -> int:
    """Start the stream, wait for its first applied batch, signal it a random moment later;
    its exit code."""
    with log.open("w") as err:
        process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=err)
    deadline = time.monotonic() + 180
    while "stream: batch" not in log.read_text() and time.monotonic() < deadline:
        assert process.poll() is None, f"the stream exited early:\n{log.read_text()[-3000:]}"
        time.sleep(0.2)
    time.sleep(rng.uniform(0, 6))
    process.send_signal(signum)
    return process.wait(120)


@pytest.mark.parametrize("keyless", [False, True], ids=["merge", "append"])
def test_sigkill_at_random_moments_loses_and_doubles_nothing(
        spark: SparkSession, kafka: Broker, service: httpx.Client,  # noqa: F811
        tmp_path: Path, keyless: bool) -> None:
    seed = int(os.environ.get("FLATAVRO_KILL_SEED", random.randrange(1 << 30)))
    print(f"seed {seed} (FLATAVRO_KILL_SEED={seed} repeats these kill moments)")
    topic = f"stream_kill_{'log' if keyless else 'items'}"
    create_topic(kafka, topic)
    ddl = ITEMS_V1.replace(" PRIMARY KEY", "") if keyless else ITEMS_V1
    register(service, ddl, topic)
    changes, state = history(seed, 1500)
    if keyless:  # a change log: every change once, deletes included
        changes = [c for c in changes if c["op"] != "delete"]
    send(kafka, service, topic, changes)
    config = stream(tmp_path, kafka, service, topic)
    rng = random.Random(seed)
    command = cli(config, "--trigger", "processing-time=1 seconds",
                  "--max-offsets-per-trigger", "100")
    for attempt in range(2):
        kill_at_random(command, rng, tmp_path / f"{attempt}.log")
    # SIGTERM: a graceful stop, even in the middle of a micro-batch.
    assert kill_at_random(command, rng, tmp_path / "term.log", signal.SIGTERM) == 0, \
        (tmp_path / "term.log").read_text()[-3000:]
    done = subprocess.run(cli(config, "--trigger", "available-now"), cwd=ROOT,
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    if keyless:
        got = table(spark, config)
        assert got.count() == len(changes)  # nothing doubled ...
        assert got.select("_partition", "_offset").distinct().count() == len(changes)
        expected = [(c["row"]["id"], c["row"]["name"], c["row"]["price"]) for c in changes]
        assertDataFrameEqual(got.select("id", "name", "price"), rows(spark, expected, SCHEMA_V1))
    else:
        assertDataFrameEqual(table(spark, config), rows(spark, list(state.values()), SCHEMA_V1))
        assert read_delta(config.table_path).num_rows == len(state)


def test_a_micro_batch_applied_twice_changes_nothing(
        spark: SparkSession, kafka: Broker, service: httpx.Client,  # noqa: F811
        tmp_path: Path) -> None:
    topic = "stream_replay"
    create_topic(kafka, topic)
    register(service, ITEMS_V1, topic)
    send(kafka, service, topic, [change("insert", 1, "a", "1.00"), change("insert", 2, "b", "2.00"),
                                 change("update", 1, "a2", "1.10"), change("delete", 2)])
    config = stream(tmp_path, kafka, service, topic)
    applier = stream_job.prepare(spark, config)
    batch = (spark.read.format("kafka").option("kafka.bootstrap.servers", kafka.bootstrap)
             .option("subscribe", topic).load())
    applier(batch, 0)
    version = DeltaTable(config.table_path).version()
    applier(batch, 0)  # Spark re-runs batch 0 after a crash: Delta skips the write
    assert DeltaTable(config.table_path).version() == version
    applier(batch, 1)  # even applied again as a new batch, the MERGE leaves the same table
    assertDataFrameEqual(table(spark, config), rows(spark, [(1, "a2", "1.10")], SCHEMA_V1))


def test_registry_down_mid_stream_then_restart(
        spark: SparkSession, kafka: Broker, tmp_path: Path) -> None:
    topic = "stream_outage"
    create_topic(kafka, topic)
    settings = Settings(registry_db_path=str(tmp_path / "r.sqlite"), log_level="WARNING")
    app = ServedApp(create_app(settings), health_path="/healthz", lifespan="on").start()
    http = httpx.Client(base_url=app.url, timeout=30)
    register(http, ITEMS_V1, topic)
    send(kafka, http, topic, [change("insert", 1, "a", "1.00")])
    config = stream(tmp_path, kafka, http, topic, trigger=Trigger(seconds=1))
    with pytest.raises(JobError, match="cannot reach"), running(spark, config) as wait_for:
        wait_for(lambda: table(spark, config).count() == 1)
        register(http, ITEMS_V2, topic)
        v2_changes = [change("insert", 2, "b", "2.00", qty=20), change("delete", 1)]
        v2 = encode(http, topic, v2_changes)
        app.stop()  # the registry goes away; the next micro-batch meets a new schema id
        produce_by_key(kafka, topic, v2, [2, 1])
        wait_for(lambda: False, timeout=120)
    assert table(spark, config).count() == 1  # the failed micro-batch wrote nothing
    back = ServedApp(create_app(settings), health_path="/healthz", lifespan="on").start()
    try:
        stream_job.run(spark, StreamConfig(**{**_fields(config), "service_url": back.url,
                                              "trigger": Trigger(available_now=True)}))
    finally:
        back.stop()
    assertDataFrameEqual(table(spark, config),
                         rows(spark, [(2, "b", "2.00", 20)], SCHEMA_V1 + ", qty int"))


def _fields(config: StreamConfig) -> dict[str, Any]:
    return {name: getattr(config, name) for name in StreamConfig.__slots__}


def test_refusals_before_the_first_micro_batch(
        spark: SparkSession, kafka: Broker, service: httpx.Client,  # noqa: F811
        tmp_path: Path) -> None:
    topic = "stream_refuse"
    create_topic(kafka, topic)
    config = stream(tmp_path, kafka, service, topic)
    with pytest.raises(JobError, match="stream_refuse-value is not registered"):
        stream_job.prepare(spark, config)
    register(service, ITEMS_V1, topic)
    down = StreamConfig(**{**_fields(config), "service_url": f"http://127.0.0.1:{free_port()}"})
    with pytest.raises(JobError, match="cannot reach"):
        stream_job.prepare(spark, down)
    no_broker = StreamConfig(**{**_fields(config),
                                "bootstrap_servers": f"127.0.0.1:{free_port()}"})
    with pytest.raises(JobError, match="does not answer"):
        stream_job.prepare(spark, no_broker)
    register(service, ITEMS_V1, "stream_refuse_missing")
    with pytest.raises(JobError, match="topic stream_refuse_missing does not exist"):
        stream_job.prepare(spark, StreamConfig(**{**_fields(config),
                                                  "topic": "stream_refuse_missing"}))

    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "data.csv").write_text("id\n1\n")
    with pytest.raises(JobError, match="plain exists and is not a Delta table"):
        stream_job.prepare(spark, StreamConfig(**{**_fields(config),
                                                  "table_path": str(tmp_path / "plain")}))
    other = str(tmp_path / "other")
    spark.createDataFrame([(1, "x")], "id int, label string").write.format("delta").save(other)
    with pytest.raises(JobError, match="lacks name, price; has label that the topic has not"):
        stream_job.prepare(spark, StreamConfig(**{**_fields(config), "table_path": other}))

    no_commit_ts = str(tmp_path / "history")  # ITEMS_V1 has no _tidb_commit_ts
    with pytest.raises(JobError, match=f"table {no_commit_ts}: --history orders each key's "
                                       f"versions by _tidb_commit_ts, which stream_refuse-value "
                                       f"lacks"):
        stream_job.prepare(spark, StreamConfig(**{**_fields(config), "history": True,
                                                  "table_path": no_commit_ts,
                                                  "checkpoint": str(tmp_path / "history.cp")}))
    assert not Path(no_commit_ts).exists()  # refused before anything is written

    stream_job.prepare(spark, config)  # claims the checkpoint and creates the table
    assert DeltaTable(config.table_path).metadata().configuration == {
        "flatavro.topic": topic, "delta.enableDeletionVectors": "true"}
    register(service, ITEMS_V1, "stream_refuse_2")
    create_topic(kafka, "stream_refuse_2")
    with pytest.raises(JobError, match="mirrors topic stream_refuse, not stream_refuse_2"):
        stream_job.prepare(spark, StreamConfig(**{**_fields(config), "topic": "stream_refuse_2",
                                                  "checkpoint": str(tmp_path / "fresh")}))
    with pytest.raises(JobError, match="belongs to the stream of topic stream_refuse, not "
                                       "stream_refuse_2"):
        stream_job.prepare(spark, StreamConfig(**{
            **_fields(config), "topic": "stream_refuse_2",
            "table_path": str(tmp_path / "table2")}))
    foreign = tmp_path / "foreign-checkpoint"
    (foreign / "offsets").mkdir(parents=True)
    (foreign / "offsets" / "0").write_text("v1\n")
    with pytest.raises(JobError, match="was not written by this job"):
        stream_job.prepare(spark, StreamConfig(**{**_fields(config),
                                                  "checkpoint": str(foreign)}))


def test_main_exits_2_with_one_line(kafka: Broker, service: httpx.Client,  # noqa: F811
                                    tmp_path: Path) -> None:
    config = stream(tmp_path, kafka, service, "stream_nothing_here")
    done = subprocess.run(cli(config, "--trigger", "available-now"), cwd=ROOT,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 2
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("stream: error: subject stream_nothing_here-value is not "
                           "registered at http://127.0.0.1:"), done.stderr[-3000:]
    assert last.endswith("(unknown topic?)")
