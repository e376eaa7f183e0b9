"""The stream into Apache Iceberg tables (``--format iceberg``) end to end: changes encoded by
the service, produced to a real broker, applied by Structured Streaming to Iceberg tables in a
JDBC catalog on SQLite (merge-on-read MERGE, keyless append in ``__partition``, a version
registered mid-way, keyed or keyless, and a keyless table an earlier version made), and
read back with PyIceberg, not Spark; exactly once under SIGKILL of the driver; the refusals."""

from __future__ import annotations

import dataclasses
import os
import random
import re
import socket
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import types as T

from spark_jobs.errors import JobError
from spark_jobs.jobs import bulk_read
from spark_jobs.jobs import stream as stream_job
from spark_jobs.jobs.preflight import check_stream_paths
from spark_jobs.jobs.stream import run
from spark_jobs.settings.config import (
    Deletes,
    JobConfig,
    OutputFormat,
    StreamConfig,
    TableFormat,
    Trigger,
)
from spark_jobs.settings.iceberg import IcebergCatalog
from spark_jobs.settings.tables import PathTemplate, Topics
from spark_jobs.sinks import iceberg as sinks_iceberg
from spark_jobs.sinks import iceberg_guard
from spark_jobs.sinks.iceberg import APP_ID, BATCH_ID, DELETED, FILLING, use_catalog
from tests.spark import test_stream_order as order
from tests.spark.test_bulk_read import encode, register, service  # noqa: F401  (fixture)
from tests.spark.test_stream import (
    ITEMS_V1,
    ITEMS_V2,
    change,
    create_topic,
    produce_by_key,
    send,
    stream,
)
from tests.spark.test_stream_recovery import history, kill_at_random
from tests.support import replay
from tests.support.iceberg import catalog, load, read_iceberg, sorted_rows
from tests.support.parts import ROOT, Broker


def iceberg_stream(tmp_path: Path, broker: Broker, http: httpx.Client, topic: str, *,
                   name: str = "shop.items", **changes: Any) -> StreamConfig:
    """The stream of `topic` into the Iceberg table `name` of the warehouse tmp_path/lake."""
    warehouse = tmp_path / "lake"
    warehouse.mkdir(exist_ok=True)
    return StreamConfig(**dict(dict(
        topic=topic, bootstrap_servers=broker.bootstrap, service_url=str(http.base_url),
        table_path=name, checkpoint=str(tmp_path / "checkpoint"),
        trigger=Trigger(available_now=True), table_format=TableFormat.ICEBERG,
        iceberg=IcebergCatalog.sqlite(warehouse=str(warehouse))), **changes))


def expect(*data: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    """Rows as PyIceberg reads them: prices as decimals."""
    return sorted(tuple(Decimal(v) if isinstance(v, str) and re.fullmatch(r"-?\d+\.\d+", v)
                        else v for v in row) for row in data)


def test_a_keyed_topic_is_merged_on_read_and_read_back_by_pyiceberg(
        spark: SparkSession, kafka: Broker, service: httpx.Client,  # noqa: F811
        tmp_path: Path) -> None:
    topic = "iceberg_items"
    create_topic(kafka, topic)
    register(service, ITEMS_V1, topic)
    send(kafka, service, topic, [
        change("insert", 1, "a", "1.00"), change("insert", 2, "b", "2.00"),
        change("insert", 3, "c", "3.00"), change("update", 1, "a2", "1.50"),
        change("update", 1, "a3", "1.75"), change("delete", 2),
        change("insert", 4, "d", None), change("update", 3, "c2", "3.30")])
    config = iceberg_stream(tmp_path, kafka, service, topic)
    lake = tmp_path / "lake"
    run(spark, config)
    rows_1 = sorted_rows(lake, "shop.items", "id", "name", "price")
    assert rows_1 == sorted([(1, "a3", Decimal("1.75")), (3, "c2", Decimal("3.30")),
                             (4, "d", None)])

    # Next micro-batches, two messages each: re-insert the deleted key, delete and update.
    send(kafka, service, topic, [change("insert", 2, "b-again", "2.20"), change("delete", 4),
                                 change("update", 3, "c3", "3.33"), change("delete", 1),
                                 change("insert", 5, "e", "5.00")])
    run(spark, iceberg_stream(tmp_path, kafka, service, topic, max_offsets_per_trigger=2))
    assert sorted_rows(lake, "shop.items", "id", "name", "price") == sorted([
        (2, "b-again", Decimal("2.20")), (3, "c3", Decimal("3.33")), (5, "e", Decimal("5.00"))])
    table = load(lake, "shop.items")
    assert table.properties["write.merge.mode"] == "merge-on-read"
    assert table.metadata.format_version == 3
    summaries = [s.summary for s in table.snapshots()]
    assert any(int(s["total-delete-files"]) > 0 for s in summaries if s is not None), \
        "the MERGEs wrote no deletion vector: not merge-on-read"
    batches = [int(s[BATCH_ID]) for s in summaries if s is not None and BATCH_ID in s]
    assert batches == sorted(batches) and len(batches) == len(set(batches)) >= 3
    assert all(s[APP_ID].startswith("flatavro-stream-") for s in summaries
               if s is not None and BATCH_ID in s)

    # Nothing new: an available-now re-run commits nothing.
    run(spark, config)
    assert len(load(lake, "shop.items").snapshots()) == len(summaries)

    # A version with a new column (DEFAULT 7): the rows already there read 7, as in TiDB.
    register(service, ITEMS_V2, topic)
    send(kafka, service, topic, [change("insert", 6, "f", "6.00", qty=60)])
    run(spark, config)
    assert sorted_rows(lake, "shop.items", "id", "qty") == [(2, 7), (3, 7), (5, 7), (6, 60)]
    assert FILLING not in load(lake, "shop.items").properties

    # A crash between ADD COLUMNS and the fill leaves the property, and rows of the old
    # version only (its column still empty): the next start fills it.
    assert config.iceberg is not None
    crashed = use_catalog(spark.newSession(), config.iceberg)
    crashed.sql(f"ALTER TABLE flatavro.shop.items SET TBLPROPERTIES ('{FILLING}' = 'qty')")
    crashed.sql("DELETE FROM flatavro.shop.items WHERE id = 6")
    crashed.sql("UPDATE flatavro.shop.items SET qty = NULL")
    run(spark, config)
    assert sorted_rows(lake, "shop.items", "id", "qty") == [(2, 7), (3, 7), (5, 7)]
    assert FILLING not in load(lake, "shop.items").properties


def test_a_keyless_topic_is_appended(
        spark: SparkSession, kafka: Broker, service: httpx.Client,  # noqa: F811
        tmp_path: Path) -> None:
    topic = "iceberg_log"
    create_topic(kafka, topic)
    register(service, "CREATE TABLE shop.log (id INT, note VARCHAR(20))", topic)
    messages = encode(service, topic, [{"op": "insert", "row": {"id": 1, "note": "x"}},
                                       {"op": "insert", "row": {"id": 1, "note": "x"}},
                                       {"op": "delete", "row": {"id": 1, "note": "x"}}])
    produce_by_key(kafka, topic, messages, [0, 0, 0])
    run(spark, iceberg_stream(tmp_path, kafka, service, topic, name="shop.log"))
    assert sorted_rows(tmp_path / "lake", "shop.log", "_offset", "id", "note", "_op") == [
        (0, 1, "x", "upsert"), (1, 1, "x", "upsert"), (2, None, None, "delete")]
    assert "write.merge.mode" not in load(tmp_path / "lake", "shop.log").properties


LOG_V1 = "CREATE TABLE shop.log (id INT, note VARCHAR(20))"
LOG_V2 = "CREATE TABLE shop.log (id INT, note VARCHAR(20), tag VARCHAR(8) DEFAULT 'x')"


@pytest.mark.parametrize("made_before", [False, True], ids=["new", "made-before-v2"])
def test_a_keyless_table_gains_a_column_with_its_default(
        spark: SparkSession, kafka: Broker, service: httpx.Client,  # noqa: F811
        tmp_path: Path, capsys: pytest.CaptureFixture[str], made_before: bool) -> None:
    """A keyless topic's change log keeps Kafka's partition in ``__partition`` (Iceberg refuses
    a MERGE into a table with a ``_partition`` column, and the fill of an added column's
    default is one): ``ADD COLUMN ... DEFAULT 'x'`` mid-stream, the rows already there read
    'x'. `made_before`: a format v2 table an earlier version made with ``_partition`` is
    renamed once, when the stream opens it, its values kept, then evolves."""
    topic = f"iceberg_log_{'old' if made_before else 'new'}"
    create_topic(kafka, topic)
    register(service, LOG_V1, topic)
    send(kafka, service, topic, [{"op": "insert", "row": {"id": 1, "note": "a"}},
                                 {"op": "insert", "row": {"id": 2, "note": "b"}}])
    config = iceberg_stream(tmp_path, kafka, service, topic, name="shop.log",
                            iceberg_format_version=2 if made_before else 3)
    run(spark, config)
    lake = tmp_path / "lake"
    assert "_partition" not in read_iceberg(lake, "shop.log").column_names
    assert config.iceberg is not None
    session = use_catalog(spark.newSession(), config.iceberg)
    if made_before:  # the table as an earlier version left it
        session.sql("ALTER TABLE flatavro.shop.log RENAME COLUMN __partition TO _partition")
    capsys.readouterr()

    register(service, LOG_V2, topic)
    send(kafka, service, topic, [{"op": "insert", "row": {"id": 3, "note": "c", "tag": "y"}}])
    run(spark, config)
    # Ids 1, 2, 3 in partitions 1, 2, 0 (produce_by_key): each its partition's first message.
    assert sorted_rows(lake, "shop.log", "id", "note", "tag", "__partition", "_offset") == [
        (1, "a", "x", 1, 0), (2, "b", "x", 2, 0), (3, "c", "y", 0, 0)]
    assert "_partition" not in read_iceberg(lake, "shop.log").column_names
    assert FILLING not in load(lake, "shop.log").properties
    renamed = ("table flatavro.shop.log: column _partition renamed __partition (Iceberg "
               "reserves _partition")
    assert (renamed in capsys.readouterr().err) is made_before
    # Once: the renamed table has nothing left to rename.
    assert sinks_iceberg.rename_partition(
        session, "shop.log", topic=topic,
        latest=sinks_iceberg.iceberg_types(session.table("flatavro.shop.log").schema)) is None


def test_a_micro_batch_applied_twice_is_skipped(
        spark: SparkSession, kafka: Broker, service: httpx.Client,  # noqa: F811
        tmp_path: Path) -> None:
    topic = "iceberg_replay"
    create_topic(kafka, topic)
    register(service, ITEMS_V1.replace(" PRIMARY KEY", ""), topic)  # keyless: no MERGE to hide
    send(kafka, service, topic, [change("insert", 1, "a", "1.00"),
                                 change("insert", 2, "b", "2.00")])
    config = iceberg_stream(tmp_path, kafka, service, topic, name="shop.replay")
    applier = stream_job.prepare(spark, config)
    try:
        batch = (spark.read.format("kafka").option("kafka.bootstrap.servers", kafka.bootstrap)
                 .option("subscribe", topic).load())
        applier(batch, 0)
        applier(batch, 0)  # Spark re-runs batch 0 after a crash: the snapshot names it
    finally:
        applier.close()
    assert len(sorted_rows(tmp_path / "lake", "shop.replay")) == 2
    # A new process: the batch id is read back from the snapshots, not remembered.
    applier = stream_job.prepare(spark, config)
    try:
        applier(batch, 0)
    finally:
        applier.close()
    assert len(sorted_rows(tmp_path / "lake", "shop.replay")) == 2


def cli(config: StreamConfig, *extra: str) -> list[str]:
    assert config.iceberg is not None
    return [sys.executable, "-m", "spark_jobs.stream", "--topic", config.topic,
            "--bootstrap-servers", config.bootstrap_servers, "--service-url",
            str(config.service_url), "--format", "iceberg", "--iceberg-warehouse",
            str(config.iceberg.warehouse), "--table", config.table_path, "--checkpoint",
            config.checkpoint, "--master", "local[2]", *extra]


def test_sigkill_at_random_moments_loses_and_doubles_nothing(
        kafka: Broker, service: httpx.Client, tmp_path: Path) -> None:  # noqa: F811
    seed = int(os.environ.get("FLATAVRO_KILL_SEED", random.randrange(1 << 30)))
    print(f"seed {seed} (FLATAVRO_KILL_SEED={seed} repeats these kill moments)")
    topic = "iceberg_kill"
    create_topic(kafka, topic)
    register(service, ITEMS_V1, topic)
    changes, state = history(seed, 1200)
    send(kafka, service, topic, changes)
    config = iceberg_stream(tmp_path, kafka, service, topic, name="shop.kill")
    rng = random.Random(seed)
    every = ["--max-offsets-per-trigger", "100", "--optimize-every", "4"]
    command = cli(config, "--trigger", "processing-time=1 seconds", *every)
    for attempt in range(2):
        kill_at_random(command, rng, tmp_path / f"{attempt}.log")
    done = subprocess.run(cli(config, "--trigger", "available-now", *every), cwd=ROOT,
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert sorted_rows(tmp_path / "lake", "shop.kill", "id", "name", "price") == expect(
        *state.values())
    logs = "".join((tmp_path / f"{a}.log").read_text() for a in range(2)) + done.stderr
    assert "rewrite_data_files" in logs, "no compaction ran (--optimize-every 4)"


def test_refusals(spark: SparkSession, kafka: Broker, service: httpx.Client,  # noqa: F811
                  tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    topic = "iceberg_refused"
    create_topic(kafka, topic)
    register(service, ITEMS_V1, topic)
    # A Delta table where the Iceberg table would go.
    delta_place = tmp_path / "lake" / "shop" / "items"
    spark.range(1).write.format("delta").save(str(delta_place))
    with pytest.raises(JobError, match=f"^{delta_place}, where the Iceberg table shop.items "
                                       f"would go, holds a Delta table"):
        run(spark, iceberg_stream(tmp_path, kafka, service, topic))
    # The reverse: --format delta on an Iceberg table's folder.
    run(spark, iceberg_stream(tmp_path, kafka, service, topic, name="shop.made",
                              checkpoint=str(tmp_path / "made.checkpoint")))
    made = tmp_path / "lake" / "shop" / "made"
    for refused in (lambda: run(spark, stream(tmp_path / "d", kafka, service, topic,
                                               table_path=str(made))),
                    lambda: check_stream_paths(stream(tmp_path / "d", kafka, service, topic,
                                                      table_path=str(made)))):
        with pytest.raises(JobError, match=f"^{made} holds an Iceberg table, not a Delta "
                                           f"table: stream it with --format iceberg"):
            refused()
    # A catalog table whose column has another type than the topic's.
    config = iceberg_stream(tmp_path, kafka, service, topic, name="shop.other")
    assert config.iceberg is not None
    other = use_catalog(spark.newSession(), config.iceberg)
    other.sql("CREATE NAMESPACE IF NOT EXISTS flatavro.shop")
    other.sql("CREATE TABLE flatavro.shop.other (id INT, name STRING, price STRING) "
              "USING iceberg")
    with pytest.raises(JobError, match="the Iceberg table shop.other is not a table of topic "
                                       "iceberg_refused: it price is string where the topic "
                                       "has decimal.8,2."):
        run(spark, config)
    # A catalog that does not answer: one line naming it.
    rest = tmp_path / "rest.properties"
    rest.write_text("type=rest\nuri=http://127.0.0.1:9/catalog\ncredential=id:hidden\n")
    config = iceberg_stream(tmp_path, kafka, service, topic,
                            iceberg=IcebergCatalog.read(str(rest)))
    with pytest.raises(JobError) as caught:
        run(spark, config)
    assert str(caught.value).startswith("the Iceberg catalog http://127.0.0.1:9/catalog ")
    assert "hidden" not in str(caught.value)
    # One that takes the connection and never answers: named when the wait is over (60 s in
    # the job; 3 s here).
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        uri = f"http://127.0.0.1:{silent.getsockname()[1]}/catalog"
        rest.write_text(f"type=rest\nuri={uri}\n")
        monkeypatch.setattr(sinks_iceberg, "CATALOG_SECONDS", 3.0)
        with pytest.raises(JobError, match=f"^the Iceberg catalog {uri} did not answer within "
                                           f"3 s \\(--catalog-config {rest}\\)$"):
            run(spark, iceberg_stream(tmp_path, kafka, service, topic,
                                      iceberg=IcebergCatalog.read(str(rest))))


def test_bulk_read_writes_an_iceberg_table_whole_that_the_stream_continues(
        spark: SparkSession, kafka: Broker, service: httpx.Client,  # noqa: F811
        tmp_path: Path) -> None:
    topic = "iceberg_bulk"
    create_topic(kafka, topic)
    register(service, ITEMS_V1, topic)
    send(kafka, service, topic, [change("insert", 1, "a", "1.00"), change("insert", 2, "b", "2.00"),
                                 change("update", 1, "a2", "1.10"), change("delete", 2)])
    lake = tmp_path / "lake"
    catalog = IcebergCatalog.sqlite(warehouse=str(lake))
    job = JobConfig(topic=topic, output="shop.bulk", bootstrap_servers=kafka.bootstrap,
                    service_url=str(service.base_url), output_format=OutputFormat.ICEBERG,
                    iceberg=catalog, materialize=True)
    bulk_read.run(spark, job)
    assert sorted_rows(lake, "shop.bulk", "id", "name", "price") == [(1, "a2", Decimal("1.10"))]
    assert load(lake, "shop.bulk").properties["write.merge.mode"] == "merge-on-read"
    with pytest.raises(JobError, match="^the Iceberg table shop.bulk exists; pass --overwrite"):
        bulk_read.run(spark, job)
    # Every change, replacing the table in one commit.
    bulk_read.run(spark, dataclasses.replace(job, materialize=False, overwrite=True))
    every = read_iceberg(lake, "shop.bulk")
    assert every.num_rows == 4
    assert {"__partition", "_offset"} <= set(every.column_names)  # Iceberg's names
    assert "_partition" not in every.column_names
    # The materialized state, then the stream from there on (a table rebuilt as the stream's
    # refusals suggest).
    bulk_read.run(spark, dataclasses.replace(job, overwrite=True))
    send(kafka, service, topic, [change("insert", 3, "c", "3.00")])
    run(spark, iceberg_stream(tmp_path, kafka, service, topic, name="shop.bulk"))
    assert sorted_rows(lake, "shop.bulk", "id", "name") == [(1, "a2"), (3, "c")]


def database(broker: Broker, http: httpx.Client, name: str) -> tuple[str, str]:
    """Two tables of database `name` on topics of their own: ``orders`` (keyed: ids 1 and 2
    inserted, 1 deleted) and ``notes`` (keyless: one row, id 7); their topics."""
    orders, notes = f"iceberg_{name}_orders", f"iceberg_{name}_notes"
    for topic in (orders, notes):
        create_topic(broker, topic)
    register(http, ITEMS_V1.replace("shop.items", f"{name}.orders"), orders)
    register(http, f"CREATE TABLE {name}.notes (id INT, note VARCHAR(20))", notes)
    send(broker, http, orders, [change("insert", 1, "a", "1.00"), change("delete", 1),
                                change("insert", 2, "b", "2.00")])
    produce_by_key(broker, notes, encode(http, notes, [
        {"op": "insert", "row": {"id": 7, "note": "x"}}]), [0])
    return orders, notes


def test_a_whole_database_into_iceberg_tables_named_by_the_template(
        spark: SparkSession, kafka: Broker, service: httpx.Client,  # noqa: F811
        tmp_path: Path) -> None:
    orders, notes = database(kafka, service, "whole")
    config = iceberg_stream(tmp_path, kafka, service, "", name="",
                            topics=Topics(names=(orders, notes)),
                            table_template=PathTemplate("{database}.{table}"),
                            iceberg_format_version=2)  # position delete files, read back too
    run(spark, config)
    lake = tmp_path / "lake"
    assert sorted_rows(lake, "whole.orders", "id", "name") == [(2, "b")]
    assert load(lake, "whole.orders").metadata.format_version == 2
    assert sorted_rows(lake, "whole.notes", "id", "note") == [(7, "x")]
    # Each table is exactly once on its own: its app id names the topic.
    ids = {name: {s.summary[APP_ID] for s in load(lake, name).snapshots()
                  if s.summary is not None and APP_ID in s.summary}
           for name in ("whole.orders", "whole.notes")}
    assert [i.pop().rsplit("-", 1)[-1] for i in ids.values()] == [orders, notes]


def test_bulk_read_of_a_database_into_iceberg_tables_named_by_the_template(
        spark: SparkSession, kafka: Broker, service: httpx.Client,  # noqa: F811
        tmp_path: Path) -> None:
    orders, notes = database(kafka, service, "bulkdb")
    lake = tmp_path / "lake"
    job = JobConfig(topic="", output="", bootstrap_servers=kafka.bootstrap,
                    service_url=str(service.base_url), output_format=OutputFormat.ICEBERG,
                    iceberg=IcebergCatalog.sqlite(warehouse=str(lake)),
                    topics=Topics(names=(orders, notes)),
                    output_template=PathTemplate("{database}.{table}"))
    bulk_read.run(spark, job)
    # Every change, a delete as its key (docs/bulk-read.md).
    assert sorted_rows(lake, "bulkdb.orders", "id", "_op") == [
        (1, "delete"), (1, "upsert"), (2, "upsert")]
    assert sorted_rows(lake, "bulkdb.notes", "id", "note") == [(7, "x")]
    # A second run finds the tables there (topics in name order): refused before anything is
    # written.
    with pytest.raises(JobError, match="^the Iceberg table bulkdb.notes exists; pass "
                                       "--overwrite"):
        bulk_read.run(spark, job)


def replayed_snapshots(spark: SparkSession, broker: Broker, http: httpx.Client,
                       config: StreamConfig, parts: list[list[replay.Change]]
                       ) -> list[tuple[int, list[dict[str, Any]]]]:
    """Send each partition's changes (`parts`) in two halves, the stream catching up after
    each; every snapshot of the table ``shop.orders`` then, read by PyIceberg."""
    for number in range(2):
        for partition, changes in enumerate(parts):
            half = -(-len(changes) // 2)
            order.produce_sent(broker, http, config.topic, partition,
                               changes[number * half:(number + 1) * half])
        run(spark, config)
    assert config.iceberg is not None and config.iceberg.warehouse is not None
    table = load(Path(config.iceberg.warehouse), "shop.orders")
    return [(s.snapshot_id, table.scan(snapshot_id=s.snapshot_id).to_arrow().to_pylist())
            for s in table.snapshots()]


@pytest.mark.parametrize("deletes", [Deletes.SOFT, Deletes.HARD])
def test_commit_order_never_takes_a_key_back_in_time(
        spark: SparkSession, kafka: Broker, service: httpx.Client,  # noqa: F811
        tmp_path: Path, deletes: Deletes, capsys: pytest.CaptureFixture[str]) -> None:
    """TiCDC's replays (tests/support/replay.py), applied in commit order: no snapshot of the
    Iceberg table shows a key older than an earlier snapshot did. With --deletes soft the last
    one holds every key's last row, deleted ones flagged in ``__deleted`` (Iceberg reserves
    ``_deleted``); with hard deletes it holds the source table, the deleted keys' tombstones in
    the guard table beside it."""
    seed = order._seed()
    source, parts = order._sent(seed)
    topic = f"iceberg_order_{deletes.value}_{seed}"
    create_topic(kafka, topic, order.PARTITIONS)
    order.register_orders(service, topic)
    config = iceberg_stream(tmp_path, kafka, service, topic, name="shop.orders",
                            deletes=deletes, max_offsets_per_trigger=16)
    snapshots = replayed_snapshots(spark, kafka, service, config, parts)
    order._check_never_back(snapshots, {c.ts: c for c in source}, seed=seed)
    present = replay.final_state(source)
    if deletes is Deletes.SOFT:
        expected = {k: (c.ts, c.row["name"] if c.row else None, k not in present)
                    for k, c in replay.last_rows(source).items()}
        assert {r["id"]: (r[order.TS], r["name"], r[DELETED]) for r in snapshots[-1][1]
                } == expected, f"seed {seed}"
        assert not catalog(tmp_path / "lake").table_exists(
            iceberg_guard.guard_name("shop.orders"))  # a soft-deleted row is its tombstone
        return
    assert {r["id"]: r[order.TS] for r in snapshots[-1][1]} == {
        k: c.ts for k, c in present.items()}, f"seed {seed}"
    assert ("table flatavro.shop.orders: tombstones of hard deletes in "
            "flatavro.shop.orders__flatavro_guard") in capsys.readouterr().err
    guard = load(tmp_path / "lake", iceberg_guard.guard_name("shop.orders"))
    assert guard.properties[iceberg_guard.GUARD_OF] == "shop.orders"
    # A replayed insert older than the row a delete removed in an earlier batch: the key stays
    # deleted (without the guard it would come back; a replay of the removed row itself would
    # come back, docs/streaming.md, 'Commit order').
    ts = max(c.ts for c in source) + 1
    inserted = replay.Change(ts, 99, "insert", {"id": 99, "name": "late", "qty": 1})
    order.produce_sent(kafka, service, topic, 0, [
        inserted, replay.Change(ts + 1, 99, "update", {"id": 99, "name": "later", "qty": 2}),
        replay.Change(ts + 2, 99, "delete")])
    run(spark, config)
    order.produce_sent(kafka, service, topic, 1, [inserted])
    run(spark, config)
    assert 99 not in {r["id"] for r in read_iceberg(tmp_path / "lake", "shop.orders").to_pylist()}
    guard = load(tmp_path / "lake", iceberg_guard.guard_name("shop.orders"))
    tombs = {r["id"]: r[order.TS] for r in guard.scan().to_arrow().to_pylist()}
    assert tombs[99] == ts + 1
    # A key deleted at the end is guarded with the commit ts of the row its delete removed.
    assert {k: tombs.get(k) for k, c in replay.last_rows(source).items() if k not in present
            } == {k: c.ts for k, c in replay.last_rows(source).items() if k not in present
                  }, f"seed {seed}"


def test_history_keeps_every_version_placed_by_its_commit_ts(
        spark: SparkSession, kafka: Broker, service: httpx.Client,  # noqa: F811
        tmp_path: Path) -> None:
    """--history into Iceberg on the replays above: the last snapshot holds the source's
    versions computed by hand (``__deleted`` and ``__partition`` for Delta's ``_deleted`` and
    ``_partition``, Iceberg's metadata columns); no snapshot's current rows go back in time;
    the table opened without --history is refused."""
    seed = order._seed()
    source, parts = order._sent(seed)
    topic = f"iceberg_history_{seed}"
    create_topic(kafka, topic, order.PARTITIONS)
    order.register_orders(service, topic)
    config = iceberg_stream(tmp_path, kafka, service, topic, name="shop.orders", history=True,
                            max_offsets_per_trigger=16)
    snapshots = replayed_snapshots(spark, kafka, service, config, parts)
    order._check_never_back([(v, [r for r in rows if r["_is_current"]]) for v, rows in snapshots],
                            {c.ts: c for c in source}, seed=seed)
    final = snapshots[-1][1]
    assert {"__partition", "_offset"} <= final[0].keys()
    got = {(r["id"], r["name"], r["_valid_from_ts"], r["_valid_to_ts"], r["_is_current"],
            r[DELETED]) for r in final}
    want = replay.scd2(source)
    assert got == want, f"seed {seed}: {sorted(got - want)} / {sorted(want - got)}"
    with pytest.raises(JobError, match=r"^the Iceberg table shop.orders was made with --history "
                                       r"\(its columns have _valid_from_ts\), not --deletes "
                                       r"hard"):
        run(spark, dataclasses.replace(config, history=False))


def test_an_iceberg_guards_tombstones_expire_and_its_key_is_checked(
        spark: SparkSession, tmp_path: Path) -> None:
    """The guard of ``--deletes hard`` in commit order, as `iceberg_guard` keeps it: made beside
    its table, emptied of tombstones older than the retention, refused when the key changed."""
    lake = tmp_path / "lake"
    lake.mkdir()
    session = use_catalog(spark.newSession(), IcebergCatalog.sqlite(warehouse=str(lake)))
    columns = T.StructType([T.StructField("id", T.IntegerType()),
                            T.StructField("_tidb_commit_ts", T.LongType())])
    session.sql("CREATE NAMESPACE IF NOT EXISTS flatavro.shop")
    assert not iceberg_guard.open_guard(session, "shop.t", columns=columns, keys=["id"],
                                        format_version=3)
    now_ms, day = 1_764_000_000_000, 86_400_000
    tombs = [(1, (now_ms - 8 * day) << 18), (2, (now_ms - 6 * day) << 18), (3, now_ms << 18)]
    session.createDataFrame(tombs, "id int, _tidb_commit_ts long").writeTo(
        "flatavro.shop.t__flatavro_guard").append()
    assert iceberg_guard.open_guard(session, "shop.t", columns=columns, keys=["id"],
                                    format_version=3)
    iceberg_guard.expire(session, "shop.t", retention_ms=7 * day, now_ms=now_ms)
    assert sorted_rows(lake, "shop.t__flatavro_guard", "id") == [(2,), (3,)]
    other = T.StructType([T.StructField("sku", T.StringType()), *columns.fields])
    with pytest.raises(JobError, match=r"^the commit-order guard shop.t__flatavro_guard holds "
                                       r"columns id, _tidb_commit_ts, not the table's key sku "
                                       r"with _tidb_commit_ts: the key changed; rebuild shop.t"):
        iceberg_guard.open_guard(session, "shop.t", columns=other, keys=["sku"],
                                 format_version=3)


def test_the_tables_of_a_new_namespace_opened_at_once_make_it_once(
        spark: SparkSession, tmp_path: Path) -> None:
    """The stream opens a database's tables in parallel: two threads making one new namespace
    in the JDBC catalog at once (found on s3a: a primary-key violation in
    iceberg_namespace_properties)."""
    lake = tmp_path / "lake"
    lake.mkdir()
    session = use_catalog(spark.newSession(), IcebergCatalog.sqlite(warehouse=str(lake)))
    names = [f"db{n}" for n in range(6)]
    with ThreadPoolExecutor(2) as pool:
        for name in names:
            list(pool.map(sinks_iceberg.create_namespace, [session] * 2, [[name]] * 2))
    assert sorted(str(r[0]) for r in session.sql("SHOW NAMESPACES IN flatavro").collect()) == names
