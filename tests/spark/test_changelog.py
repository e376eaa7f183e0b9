"""Land first, merge behind (``--changelog``): every micro-batch of a whole database lands in one
changelog commit, the typed tables are merged behind it, and the fresh read answers each table as
of the newest landed batch, equal to what the next apply commits. Retention never removes a
change a table has not applied."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from deltalake import DeltaTable
from pyspark.sql import DataFrame, SparkSession

from spark_jobs.errors import JobError
from spark_jobs.jobs import stream as stream_job
from spark_jobs.jobs.fresh import FreshSource, fresh_read
from spark_jobs.settings.config import Deletes, StreamConfig, TableFormat, parse_stream_args
from spark_jobs.settings.iceberg import IcebergCatalog
from spark_jobs.settings.tables import PathTemplate, Topics
from spark_jobs.sinks import changelog
from spark_jobs.sinks.iceberg import APP_ID
from tests.spark.test_bulk_read import service  # noqa: F401  (fixture)
from tests.spark.test_stream import change, create_topic, send
from tests.spark.test_stream_database import many, registered
from tests.spark.test_stream_iceberg import database
from tests.spark.test_stream_order import (
    PARTITIONS,
    TS,
    _check_never_back,
    _seed,
    produce_sent,
    register_orders,
)
from tests.support import replay
from tests.support.delta import read_delta
from tests.support.iceberg import load, read_iceberg, sorted_rows
from tests.support.parts import ROOT, Broker


def landed(tmp_path: Path, broker: Broker, http: httpx.Client, *topics: str,
           **changes: object) -> StreamConfig:
    return many(tmp_path, broker, http, topics=Topics(names=topics),
                **{"changelog": str(tmp_path / "changelog"), **changes})


def in_iceberg(lake: Path) -> dict[str, Any]:
    """The options of a changelog stream into Iceberg tables ``fresh.<topic>`` of the
    warehouse `lake`, its changelog ``fresh.changelog``."""
    lake.mkdir(exist_ok=True)
    return {"table_format": TableFormat.ICEBERG, "changelog": "fresh.changelog",
            "iceberg": IcebergCatalog.sqlite(warehouse=str(lake)),
            "table_template": PathTemplate("fresh.{topic}")}


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
        assert changelog.txn_version(spark, str(lake / "cl_a"),
                                     app_id=applier.tables["cl_a"].app_id)[1] == 0
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


def _micro_batches(spark: SparkSession, broker: Broker, topic: str, ends: list[int],
                   rng: random.Random) -> Iterator[DataFrame]:
    """The topic's messages in micro-batches of random sizes, partition 0 advancing faster than
    partition 1 (as the stream reads them with --max-offsets-per-trigger)."""
    at = [0] * len(ends)
    while at != ends:
        step = [min(end, start + rng.randint(lo, hi))
                for start, end, (lo, hi) in zip(at, ends, [(4, 30), (0, 12)], strict=True)]
        if step == at:
            continue
        offsets = [json.dumps({topic: {str(p): o for p, o in enumerate(x)}}) for x in (at, step)]
        yield (spark.read.format("kafka").option("kafka.bootstrap.servers", broker.bootstrap)
               .option("subscribe", topic).option("startingOffsets", offsets[0])
               .option("endingOffsets", offsets[1]).load())
        at = step


def _rows(rows: list[dict[str, Any]], columns: list[str]) -> Counter[tuple[Any, ...]]:
    return Counter(tuple(r[c] for c in columns) for r in rows)


@pytest.mark.parametrize("keep", ["guard", "soft", "history", "offset", "iceberg"])
def test_the_fresh_read_is_the_next_apply_at_every_landed_batch_under_replays(
        spark: SparkSession, kafka: Broker, service: httpx.Client,  # noqa: F811
        tmp_path: Path, keep: str) -> None:
    """TiCDC's replays (older commits at larger offsets) landed batch by batch, the typed table
    applied at random moments: after every landed batch the fresh read answers exactly the
    table the next apply commits (row for row, read back with delta-rs), never a key older
    than it showed before; at the end, the source."""
    seed = _seed()
    rng = random.Random(seed)
    source = replay.history(rng, keys=10, commits=120)
    parts = replay.by_partition(replay.sends(source, rng, restarts=4), PARTITIONS)
    topic = f"fresh_{keep}_{seed}"
    create_topic(kafka, topic, PARTITIONS)
    register_orders(service, topic)
    for partition, changes in enumerate(parts):
        produce_sent(kafka, service, topic, partition, changes)
    lake = tmp_path / "lake"
    options: dict[str, Any] = {"guard": {}, "soft": {"deletes": Deletes.SOFT},
                               "history": {"history": True},
                               "offset": {"commit_order": False},
                               "iceberg": in_iceberg(lake)}[keep]
    config = landed(tmp_path, kafka, service, topic, **options)
    applier = stream_job.prepare(spark, config)
    table = f"fresh.{topic}" if keep == "iceberg" else str(lake / topic)

    def typed_rows() -> list[dict[str, Any]]:
        return (read_iceberg(lake, table) if keep == "iceberg"
                else read_delta(Path(table))).to_pylist()
    by_ts = {c.ts: c for c in source}
    answers: list[tuple[int, list[dict[str, Any]]]] = []
    try:
        assert applier.behind is not None
        for batch_id, batch in enumerate(_micro_batches(spark, kafka, topic,
                                                        [len(p) for p in parts], rng)):
            applier(batch, batch_id)
            fresh = [r.asDict() for r in fresh_read(
                spark, changelog_path=str(config.changelog), table=table,
                source=FreshSource(service_url=config.service_url),
                catalog=config.iceberg).collect()]
            answers.append((batch_id, fresh))
            if rng.random() < 0.4:
                applier.behind.drain()
                typed = typed_rows()
                columns = sorted(typed[0]) if typed else ["id"]
                assert _rows(typed, columns) == _rows(fresh, columns), (
                    f"seed {seed}: batch {batch_id}: the apply committed another table than "
                    f"the fresh read answered")
        applier.behind.drain()
    finally:
        applier.close()
    if keep != "offset":  # Kafka order takes a key back in time under replays: no promise
        _check_never_back([(b, [r for r in rows if r.get("_is_current", True)])
                           for b, rows in answers], by_ts, seed=seed)
    final = typed_rows()
    if keep in ("guard", "iceberg"):
        assert {r["id"]: r[TS] for r in final} == {
            k: c.ts for k, c in replay.final_state(source).items()}, f"seed {seed}"
    assert _rows(final, sorted(final[0])) == _rows(answers[-1][1], sorted(final[0]))


def test_a_database_lands_in_an_iceberg_changelog_and_its_tables_are_merged_behind(
        spark: SparkSession, kafka: Broker, service: httpx.Client,  # noqa: F811
        tmp_path: Path) -> None:
    """--format iceberg: the changelog is a table of the catalog, one snapshot per batch naming
    it; the typed tables (keyed, keyless) read back with PyIceberg equal the source."""
    orders, notes = database(kafka, service, "landed")
    lake = tmp_path / "lake"
    config = landed(tmp_path, kafka, service, orders, notes, **in_iceberg(lake))
    stream_job.run(spark, config)
    assert sorted_rows(lake, f"fresh.{orders}", "id", "name") == [(2, "b")]
    assert sorted_rows(lake, f"fresh.{notes}", "id", "note") == [(7, "x")]
    # The keyless table's change log names Kafka's partition __partition (Iceberg reserves
    # _partition), and so does its fresh read.
    fresh = fresh_read(spark, changelog_path="fresh.changelog", table=f"fresh.{notes}",
                       source=FreshSource(service_url=config.service_url),
                       catalog=config.iceberg)
    assert fresh.columns == read_iceberg(lake, f"fresh.{notes}").column_names
    assert "__partition" in fresh.columns and "_partition" not in fresh.columns
    assert [(r["id"], r["note"]) for r in fresh.collect()] == [(7, "x")]
    log = load(lake, "fresh.changelog")
    assert sorted((r["topic"], r["_op"]) for r in log.scan().to_arrow().to_pylist()) == [
        (notes, "upsert"), (orders, "delete"), (orders, "upsert"), (orders, "upsert")]
    assert [s.summary[APP_ID].endswith("-changelog") for s in log.snapshots()
            if s.summary is not None and APP_ID in s.summary] == [True]
    again = stream_job.prepare(spark, config)  # a restart: nothing landed twice
    try:
        assert again.behind is not None and again.behind.landed == 0
        again(kafka_batch(spark, kafka, orders, notes), 0)
        assert len(load(lake, "fresh.changelog").scan().to_arrow()) == 4
    finally:
        again.close()
    with pytest.raises(SystemExit):
        parse_stream_args(["--topics", "a,b", "--bootstrap-servers", "x", "--checkpoint", "c",
                           "--table-template", "d.{table}", "--format", "iceberg",
                           "--iceberg-warehouse", str(lake), "--changelog", "/a/path"])


def test_the_fresh_read_refuses_what_is_no_changelog_or_table_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "data.csv").write_text("id\n1\n")
    done = subprocess.run(
        [sys.executable, "-m", "spark_jobs.fresh", "--changelog", str(tmp_path / "plain"),
         "--table", str(tmp_path / "none"), "--registry-url", "http://127.0.0.1:9",
         "--master", "local[1]"], cwd=ROOT, capture_output=True, text=True, timeout=300,
        check=False)
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.strip().splitlines()[-1] == (
        f"fresh: error: --changelog {tmp_path / 'plain'}: no Delta table there")
