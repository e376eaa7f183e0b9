"""A whole TiDB database in one stream: 20 tables (50 when landed in a changelog first, in Delta
and in Iceberg), keyed and keyless, fed by `flatavro bridge` from one Canal-JSON topic into a
topic per table, landed by one Spark application (``--topic-pattern`` with a table template)
through SIGKILLs at seeded random moments, an ``ADD COLUMN`` on every third of the first three
quarters of the tables and a table created mid-run; every table read back with delta-rs or
PyIceberg equals the source. Also: a topic list, per-table refusals, a table that cannot be
applied stopping the job with one line and resuming after the fix."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from deltalake import DeltaTable
from pyspark.sql import SparkSession

from spark_jobs.errors import JobError
from spark_jobs.jobs import stream as stream_job
from spark_jobs.settings.config import Mode, StreamConfig, Trigger
from spark_jobs.settings.tables import PathTemplate, Topics
from tests.spark.test_bulk_read import register, service  # noqa: F401  (fixture)
from tests.spark.test_stream import ITEMS_V1, change, create_topic, send
from tests.spark.test_stream_recovery import kill_at_random
from tests.support.canal_database import PARTITIONS, CanalDatabase, normal
from tests.support.delta import read_delta
from tests.support.iceberg import read_iceberg
from tests.support.parts import ROOT, Broker


@dataclass(frozen=True)
class Shape:
    """The source database of `count` tables t00, t01...: every fourth keyless (t03, t07...),
    an ``ADD COLUMN`` on every third of the first three quarters (t00, t03... t12: 5 of 20;
    t00... t36: 13 of 50), the last created while the stream runs, keyless."""

    count: int

    @property
    def tables(self) -> list[str]:
        """Every table, the late one last."""
        return [f"t{n:02d}" for n in range(self.count)]

    @property
    def late(self) -> str:
        """The table created mid-run."""
        return self.tables[-1]

    @property
    def keyless(self) -> set[str]:
        """The tables without a primary key (change logs of inserts)."""
        return {t for n, t in enumerate(self.tables) if n % 4 == 3} | {self.late}

    @property
    def altered(self) -> list[str]:
        """The tables that get a column mid-run."""
        return self.tables[:self.count * 3 // 4:3]


@dataclass(frozen=True)
class Landing:
    """One variant of the whole-database test: its tables, topics and table format."""

    tables: int
    prefix: str  # each variant its own topics: <prefix>_shop_<table>
    changelog: bool = False
    iceberg: bool = False

    def options(self, tmp_path: Path) -> list[str]:
        """The stream's options of where the tables (and the changelog) go."""
        lake = tmp_path / "lake"
        lake.mkdir(exist_ok=True)
        if self.iceberg:
            where = ["--format", "iceberg", "--iceberg-warehouse", str(lake),
                     "--table-template", "{database}.{table}"]
            log = "landing.changelog"  # a table of the catalog, not a path
        else:
            where = ["--table-path-template", str(lake / "{database}" / "{table}")]
            log = str(tmp_path / "changelog")
        return [*where, *(["--changelog", log, "--apply-lag", "5s"] if self.changelog else [])]

    def read(self, tmp_path: Path, table: str) -> list[dict[str, Any]]:
        """Table shop.`table` as delta-rs or PyIceberg reads it (no JVM)."""
        if self.iceberg:
            return read_iceberg(tmp_path / "lake", f"shop.{table}").to_pylist()
        return read_delta(tmp_path / "lake" / "shop" / table).to_pylist()


LANDINGS = {"direct": Landing(20, "tidb"),  # each table MERGEd by each micro-batch: slow
            "changelog": Landing(50, "cl", changelog=True),
            "changelog-iceberg": Landing(50, "ci", changelog=True, iceberg=True)}


def produce(broker: Broker, topic: str, by_partition: dict[int, list[bytes]]) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for partition, values in sorted(by_partition.items()):
        for value in values:
            producer.produce(topic, value=value, partition=partition)
    assert producer.flush(30) == 0


_COORDINATOR_MOVING = frozenset({KafkaError.NOT_COORDINATOR,
                                 KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
                                 KafkaError.COORDINATOR_NOT_AVAILABLE})


class Bridge:
    """`flatavro bridge` running as it is deployed: one long-lived process (it follows each
    table's DDL from the CREATE TABLE it saw), stopped with SIGTERM."""

    def __init__(self, broker: Broker, source: str, registry: str, log: Path,
                 rule: str = "tidb_{schema}_{table}") -> None:
        self.broker, self.source, self.group = broker, source, f"db-{source}"
        self.log = log
        with log.open("w") as out:
            self.process = subprocess.Popen(
                [str(Path(sys.executable).with_name("flatavro")), "bridge", "--protocol",
                 "canal-json", "--source-topic", source, "--bootstrap-servers",
                 broker.bootstrap, "--registry-url", registry, "--register", "--create-topics",
                 "--group-id", self.group, "--instance-id", "test", "--topic", rule],
                cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)

    def drained(self, seconds: float = 180) -> None:
        """Return once the bridge has committed every source message (its group's offsets
        at the partitions' ends)."""
        consumer = Consumer({"bootstrap.servers": self.broker.bootstrap,
                             "group.id": self.group, "enable.auto.commit": False})
        try:
            partitions = [TopicPartition(self.source, p) for p in range(PARTITIONS)]
            ends = [consumer.get_watermark_offsets(p, timeout=10)[1] for p in partitions]
            deadline = time.monotonic() + seconds
            while self._committed(consumer, partitions) != ends:
                assert self.process.poll() is None, self.log.read_text()[-3000:]
                assert time.monotonic() < deadline, self.log.read_text()[-3000:]
                time.sleep(0.5)
        finally:
            consumer.close()

    @staticmethod
    def _committed(consumer: Consumer, partitions: list[TopicPartition]) -> list[int] | None:
        """The group's committed offsets; None while the broker answers with a retriable error
        or its group coordinator is still moving or loading (NOT_COORDINATOR, which
        librdkafka does not mark retriable here)."""
        try:
            return [c.offset for c in consumer.committed(partitions, timeout=10)]
        except KafkaException as exc:
            if not exc.args[0].retriable() and exc.args[0].code() not in _COORDINATOR_MOVING:
                raise
            return None

    def stop(self) -> None:
        """SIGTERM, and the exit code 0 of a graceful stop."""
        self.process.send_signal(signal.SIGTERM)
        assert self.process.wait(60) == 0, self.log.read_text()[-3000:]


def database_cli(tmp_path: Path, broker: Broker, http: httpx.Client, *extra: str,
                 pattern: str) -> list[str]:
    """The stream of the topics matching `pattern`; `extra`: its trigger, tables..."""
    return [sys.executable, "-m", "spark_jobs.stream", "--topic-pattern", pattern,
            "--bootstrap-servers", broker.bootstrap, "--service-url", str(http.base_url),
            "--checkpoint", str(tmp_path / "checkpoint"), "--master", "local[2]", *extra]


def wait_in_log(process: subprocess.Popen[bytes], log: Path, text: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while text not in log.read_text():
        assert process.poll() is None, f"the stream exited early:\n{log.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"no {text!r} in:\n{log.read_text()[-3000:]}"
        time.sleep(0.2)


@pytest.mark.parametrize("landing", list(LANDINGS))
def test_a_whole_database_lands_exactly_once_through_kills_an_alter_and_a_new_table(
        kafka: Broker, service: httpx.Client, tmp_path: Path, landing: str) -> None:  # noqa: F811
    """20 Delta tables written by each micro-batch, or 50 tables (Delta or Iceberg) landed in a
    changelog first and merged behind it (--changelog, applies every 5 s: the kills fall in
    landings and in applies)."""
    seed = int(os.environ.get("FLATAVRO_KILL_SEED", random.randrange(1 << 30)))
    print(f"seed {seed} (FLATAVRO_KILL_SEED={seed} repeats this history and these kills)")
    rng = random.Random(seed)
    variant = LANDINGS[landing]
    shape = Shape(variant.tables)
    db, source = CanalDatabase(random.Random(seed)), f"canal_shop_{variant.prefix}"
    registry = str(service.base_url).rstrip("/") + "/registry"
    create_topic(kafka, source, PARTITIONS)
    # Fewer changes a table when there are 50: the applies, not the rows, take the time.
    first, second = (30, 12) if variant.tables <= 20 else (16, 8)
    for table in shape.tables:
        if table != shape.late:
            db.create(table, keyed=table not in shape.keyless)
            db.changes(table, first)
    produce(kafka, source, db.take())
    bridge = Bridge(kafka, source, registry, tmp_path / "bridge.log",
                    rule=variant.prefix + "_{schema}_{table}")
    bridge.drained()

    pattern = f"{variant.prefix}_shop_t.*"
    command = database_cli(tmp_path, kafka, service, "--trigger", "processing-time=1 seconds",
                           "--max-offsets-per-trigger", "300", *variant.options(tmp_path),
                           pattern=pattern)
    kill_at_random(command, rng, tmp_path / "first.log")

    # The second run sees the ALTERs and the new table arrive while it streams.
    log = tmp_path / "second.log"
    with log.open("w") as err:
        process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=err)
    try:
        wait_in_log(process, log, "stream: batch", 900)  # generous: a loaded 2-core machine
        for table in shape.altered:
            db.add_note(table)
        db.create(shape.late, keyed=False)
        for table in shape.tables:
            db.changes(table, second)
        produce(kafka, source, db.take())
        bridge.drained()
        # Direct: alone on a quiet machine the batch with the new table ends ~6 min after the
        # produce (each table's MERGE is ~25 small Spark jobs per micro-batch); under make
        # test's two workers, about twice that.
        wait_in_log(process, log, f"table shop.{shape.late}", 900)
        time.sleep(rng.uniform(0, 4))
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(60)
        bridge.stop()

    done = subprocess.run(database_cli(tmp_path, kafka, service, "--trigger", "available-now",
                                       *variant.options(tmp_path), pattern=pattern),
                          cwd=ROOT, capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    for table in shape.tables:
        columns = db.columns(table)
        got = variant.read(tmp_path, table)
        assert normal(got, columns) == db.expected(table), f"seed {seed}: {table}"
        if table in shape.keyless:  # a change log: each source row once (Iceberg: __partition)
            partition = "__partition" if variant.iceberg else "_partition"
            assert len({(r[partition], r["_offset"]) for r in got}) == len(got), table
        if table in shape.altered:
            assert "note" in columns


def registered(broker: Broker, http: httpx.Client, *topics: str) -> None:
    """Each topic created, with ITEMS_V1 (shop.items) registered for it."""
    for topic in topics:
        create_topic(broker, topic)
        register(http, ITEMS_V1, topic)


def many(tmp_path: Path, broker: Broker, http: httpx.Client, **changes: object
         ) -> StreamConfig:
    fields: dict[str, object] = dict(
        topic="", bootstrap_servers=broker.bootstrap, service_url=str(http.base_url),
        table_path="", checkpoint=str(tmp_path / "checkpoint"),
        trigger=Trigger(available_now=True), topics=Topics(names=("db_a", "db_b")),
        table_template=PathTemplate(str(tmp_path / "lake" / "{topic}")))
    return StreamConfig(**{**fields, **changes})  # type: ignore[arg-type]


def test_a_topic_list_lands_each_topic_in_its_table_and_a_bad_table_stops_with_one_line(
        spark: SparkSession, kafka: Broker, service: httpx.Client,  # noqa: F811
        tmp_path: Path) -> None:
    registered(kafka, service, *("db_a", "db_b"))
    send(kafka, service, "db_a", [change("insert", 1, "a", "1.00"), change("insert", 2, "b",
                                                                            "2.00")])
    send(kafka, service, "db_b", [change("insert", 7, "z", "7.00"), change("delete", 7)])
    config = many(tmp_path, kafka, service)
    stream_job.run(spark, config)
    assert sorted(read_delta(tmp_path / "lake" / "db_a").column("id").to_pylist()) == [1, 2]
    assert read_delta(tmp_path / "lake" / "db_b").num_rows == 0

    # db_b's table replaced by files that are no Delta table: db_b cannot be applied.
    lake_b = tmp_path / "lake" / "db_b"
    os.rename(lake_b, tmp_path / "db_b.moved")
    lake_b.mkdir()
    (lake_b / "data.csv").write_text("id\n1\n")
    send(kafka, service, "db_a", [change("update", 1, "a2", "1.10")])
    with pytest.raises(JobError, match=r"db_b .*not a Delta table") as refused:
        stream_job.run(spark, config)
    assert "\n" not in str(refused.value)

    # Both topics' tables in one template slot: refused, naming both.
    clash = many(tmp_path, kafka, service, checkpoint=str(tmp_path / "clash"),
                 table_template=PathTemplate(str(tmp_path / "lake" / "{database}" /
                                                 "{table}")))
    with pytest.raises(JobError, match="topics db_a and db_b both go to the table"):
        stream_job.run(spark, clash)

    # The fix: the table back; the restart applies what was waiting, nothing lost.
    lake_b.joinpath("data.csv").unlink()
    lake_b.rmdir()
    os.rename(tmp_path / "db_b.moved", lake_b)
    send(kafka, service, "db_b", [change("insert", 8, "y", "8.00")])
    stream_job.run(spark, config)
    got = {r["id"]: r["name"] for r in read_delta(tmp_path / "lake" / "db_a").to_pylist()}
    assert got == {1: "a2", 2: "b"}
    assert read_delta(tmp_path / "lake" / "db_b").column("id").to_pylist() == [8]


def test_a_checkpoint_of_other_topics_or_tables_is_refused(
        spark: SparkSession, kafka: Broker, service: httpx.Client,  # noqa: F811
        tmp_path: Path) -> None:
    registered(kafka, service, *("db_c", "db_d"))
    config = many(tmp_path, kafka, service, topics=Topics(names=("db_c", "db_d")))
    stream_job.run(spark, config)
    with pytest.raises(JobError, match="belongs to the stream of db_c, db_d, not topics "
                                       "matching db_.*"):
        stream_job.prepare(spark, many(tmp_path, kafka, service,
                                       topics=Topics(pattern="db_.*")))
    with pytest.raises(JobError, match="belongs to the stream into"):
        stream_job.prepare(spark, many(tmp_path, kafka, service,
                                       topics=Topics(names=("db_c", "db_d")),
                                       table_template=PathTemplate(str(tmp_path / "{table}"))))


def test_a_batch_that_one_table_committed_is_applied_to_the_other_alone_when_run_again(
        spark: SparkSession, kafka: Broker, service: httpx.Client,  # noqa: F811
        tmp_path: Path) -> None:
    """A crash after some tables of a micro-batch committed: db_e's MERGE commits batch 0,
    db_f's fails (its log moved away mid-run); Spark runs batch 0 again after the fix: db_e
    skips it (its app id has batch 0), db_f applies it; nothing twice, nothing skipped."""
    registered(kafka, service, *("db_e", "db_f"))
    send(kafka, service, "db_e", [change("insert", 1, "e", "1.00"), change("insert", 2, "e2",
                                                                            "2.00")])
    send(kafka, service, "db_f", [change("insert", 5, "f", "5.00")])
    config = many(tmp_path, kafka, service, topics=Topics(names=("db_e", "db_f")),
                  parallel_tables=1)  # db_e first, then db_f
    applier = stream_job.prepare(spark, config)
    batch = (spark.read.format("kafka").option("kafka.bootstrap.servers", kafka.bootstrap)
             .option("subscribe", "db_e,db_f").load())
    log_f = tmp_path / "lake" / "db_f" / "_delta_log"
    os.rename(log_f, tmp_path / "db_f_log")
    try:
        with pytest.raises(Exception, match="db_f"):
            applier(batch, 0)
    finally:
        os.rename(tmp_path / "db_f_log", log_f)
    assert applier.failure is not None and "table shop.items (db_f)" in str(applier.failure)
    version_e = read_delta_version(tmp_path / "lake" / "db_e")
    applier.failure = None
    applier(batch, 0)  # Spark re-runs the batch its checkpoint has not committed
    assert read_delta_version(tmp_path / "lake" / "db_e") == version_e  # skipped: no new commit
    assert sorted(read_delta(tmp_path / "lake" / "db_e").column("id").to_pylist()) == [1, 2]
    assert read_delta(tmp_path / "lake" / "db_f").column("id").to_pylist() == [5]
    applier.close()


def read_delta_version(path: Path) -> int:
    return int(DeltaTable(str(path)).version())


def test_permissive_many_sets_each_tables_bad_messages_aside_in_its_own_dead_letter_table(
        spark: SparkSession, kafka: Broker, service: httpx.Client,  # noqa: F811
        tmp_path: Path) -> None:
    registered(kafka, service, *("db_g", "db_h"))
    send(kafka, service, "db_g", [change("insert", 1, "g", "1.00")])
    send(kafka, service, "db_h", [change("insert", 2, "h", "2.00")])
    producer = Producer({"bootstrap.servers": kafka.bootstrap})
    producer.produce("db_h", key=b"k", value=b"\x01not a frame", partition=0)
    assert producer.flush(30) == 0
    config = many(tmp_path, kafka, service, topics=Topics(names=("db_g", "db_h")),
                  mode=Mode.PERMISSIVE, dead_letter=str(tmp_path / "dead" / "{topic}"),
                  dead_letter_template=PathTemplate(str(tmp_path / "dead" / "{topic}")))
    stream_job.run(spark, config)
    assert read_delta(tmp_path / "lake" / "db_g").column("id").to_pylist() == [1]
    assert read_delta(tmp_path / "lake" / "db_h").column("id").to_pylist() == [2]
    dead = read_delta(tmp_path / "dead" / "db_h").to_pylist()
    assert [(d["value"], d["partition"]) for d in dead] == [(b"\x01not a frame", 0)]
    assert dead[0]["reason"] == "key: shorter than the 5-byte header (1 bytes)"
    assert not (tmp_path / "dead" / "db_g").exists()  # nothing of db_g was bad
