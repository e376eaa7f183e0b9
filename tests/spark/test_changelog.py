"""Land first, merge behind (``--changelog``): every micro-batch of a whole database lands in one
changelog commit, the typed tables are merged behind it, and the fresh read answers each table as
of the newest landed batch, equal to what the next apply commits. Retention never removes a
change a table has not applied."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest
from deltalake import DeltaTable
from pyspark.sql import SparkSession

from spark_jobs.errors import JobError
from spark_jobs.jobs import stream as stream_job
from spark_jobs.jobs.fresh import FreshSource, fresh_read
from spark_jobs.settings.config import StreamConfig, Topics
from spark_jobs.sinks import changelog
from tests.spark.test_bulk_read import service  # noqa: F401  (fixture)
from tests.spark.test_stream import change, send
from tests.spark.test_stream_database import many, registered
from tests.support.delta import read_delta
from tests.support.parts import Broker


def landed(tmp_path: Path, broker: Broker, http: httpx.Client, *topics: str,
           **changes: object) -> StreamConfig:
    return many(tmp_path, broker, http, topics=Topics(names=topics),
                changelog=str(tmp_path / "changelog"), **changes)


def rows_of(spark: SparkSession, config: StreamConfig, table: Path) -> dict[int, str]:
    got = fresh_read(spark, changelog_path=str(config.changelog), table=str(table),
                     source=FreshSource(service_url=config.service_url)).collect()
    return {r["id"]: r["name"] for r in got}


def kafka_batch(spark: SparkSession, broker: Broker, *topics: str):  # type: ignore[no-untyped-def]
    return (spark.read.format("kafka").option("kafka.bootstrap.servers", broker.bootstrap)
            .option("subscribe", ",".join(topics)).load())


def test_a_batch_lands_in_one_changelog_commit_and_reads_fresh_before_the_apply(
        spark: SparkSession, kafka: Broker, service: httpx.Client,  # noqa: F811
        tmp_path: Path) -> None:
    registered(kafka, service, "cl_a", "cl_b")
    send(kafka, service, "cl_a", [change("insert", 1, "a", "1.00"), change("insert", 2, "b",
                                                                            "2.00"),
                                  change("update", 1, "a2", "1.10")])
    send(kafka, service, "cl_b", [change("insert", 7, "z", "7.00"), change("delete", 7),
                                  change("insert", 8, "y", "8.00")])
    config = landed(tmp_path, kafka, service, "cl_a", "cl_b")
    applier = stream_job.prepare(spark, config)
    try:
        assert applier.behind is not None
        lake = tmp_path / "lake"
        tables_before = {t: DeltaTable(str(lake / t)).version() for t in ("cl_a", "cl_b")}
        applier(kafka_batch(spark, kafka, "cl_a", "cl_b"), 0)
        log = DeltaTable(str(tmp_path / "changelog"))
        assert log.version() == 1  # made, then one commit for both topics
        rows = log.to_pyarrow_table().to_pylist()
        assert sorted((r["topic"], r["_op"]) for r in rows) == sorted(
            [("cl_a", "upsert")] * 3 + [("cl_b", "upsert"), ("cl_b", "delete"),
                                        ("cl_b", "upsert")])
        assert {r["_table"] for r in rows} == {"shop.items"}
        assert {r[changelog.BATCH] for r in rows} == {0}
        # Landing wrote no typed table.
        assert {t: DeltaTable(str(lake / t)).version() for t in tables_before} == tables_before
        assert rows_of(spark, config, lake / "cl_a") == {1: "a2", 2: "b"}
        assert rows_of(spark, config, lake / "cl_b") == {8: "y"}

        applier(kafka_batch(spark, kafka, "cl_a", "cl_b"), 0)  # a re-run batch: skipped
        assert DeltaTable(str(tmp_path / "changelog")).version() == 1

        applier.behind.drain()
        assert {r["id"]: r["name"] for r in read_delta(lake / "cl_a").to_pylist()} == {
            1: "a2", 2: "b"}
        assert read_delta(lake / "cl_b").column("id").to_pylist() == [8]
        assert changelog.applied(spark, str(lake / "cl_a"),
                                 app_id=applier.tables["cl_a"].app_id) == 0
        version = DeltaTable(str(lake / "cl_a")).version()
        applier.behind.drain()  # nothing pending: no commit
        assert DeltaTable(str(lake / "cl_a")).version() == version

        # A change landed but not applied: the fresh read has it, the typed table not yet
        # (batch 1 reads both topics from the start again: the old changes are replays).
        send(kafka, service, "cl_a", [change("delete", 2), change("insert", 3, "c", "3.00")])
        applier(kafka_batch(spark, kafka, "cl_a", "cl_b"), 1)
        assert rows_of(spark, config, lake / "cl_a") == {1: "a2", 3: "c"}
        assert sorted(read_delta(lake / "cl_a").column("id").to_pylist()) == [1, 2]

        # Retention: nothing applied of batch 1 goes, however old; batch 0 (applied) goes.
        applier.behind.config = StreamConfig(**{  # type: ignore[arg-type]
            **{f: getattr(config, f) for f in config.__dataclass_fields__},
            "changelog_retention_ms": 1})
        time.sleep(0.01)
        assert applier.behind.expire() == 6
        left = DeltaTable(str(tmp_path / "changelog")).to_pyarrow_table().to_pylist()
        assert sorted((r[changelog.BATCH], r["topic"]) for r in left) == [
            (1, "cl_a")] * 5 + [(1, "cl_b")] * 3
        assert rows_of(spark, config, lake / "cl_a") == {1: "a2", 3: "c"}
        applier.behind.drain()
        assert {r["id"]: r["name"] for r in read_delta(lake / "cl_a").to_pylist()} == {
            1: "a2", 3: "c"}
    finally:
        applier.close()


def test_the_whole_run_applies_every_table_before_an_available_now_exit(
        spark: SparkSession, kafka: Broker, service: httpx.Client,  # noqa: F811
        tmp_path: Path) -> None:
    registered(kafka, service, "cl_c", "cl_d")
    send(kafka, service, "cl_c", [change("insert", 1, "c", "1.00")])
    send(kafka, service, "cl_d", [change("insert", 2, "d", "2.00"), change("delete", 2),
                                  change("insert", 3, "e", "3.00")])
    config = landed(tmp_path, kafka, service, "cl_c", "cl_d")
    stream_job.run(spark, config)
    assert read_delta(tmp_path / "lake" / "cl_c").column("id").to_pylist() == [1]
    assert read_delta(tmp_path / "lake" / "cl_d").column("id").to_pylist() == [3]
    with pytest.raises(JobError, match="changelog of another stream"):
        stream_job.prepare(spark, landed(tmp_path, kafka, service, "cl_c", "cl_d",
                                         checkpoint=str(tmp_path / "other")))
