"""Fault injection as TiCDC really behaves: a table's history with ``_tidb_commit_ts``
(enable-tidb-extension), sent as TiCDC's Kafka sink sends it after changefeed restarts (windows
of changes sent again at higher offsets: inserts, updates, deletes and re-inserts of the same
keys, split across micro-batches), over two partitions produced at different speeds, to a real
broker, applied by the real stream.

After every committed table version (read back by delta-rs's time travel, not Spark) no key shows
a row older, by commit ts, than a row it showed before (a key that comes back after a delete
comes back no older than its last row); the final table equals the source; Delta's Change Data
Feed shows each applied change once. ``--deletes soft`` keeps each deleted key's last row with
``_deleted``. Seeded and random: each run prints its seed (FLATAVRO_ORDER_SEED repeats one).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import httpx
import pyarrow as pa
import pytest
from deltalake import DeltaTable, QueryBuilder
from pyspark.sql import SparkSession

from service.core.values import PHYSICAL_SHIFT
from spark_jobs.errors import JobError
from spark_jobs.jobs.stream import run
from spark_jobs.settings.config import Deletes, StreamConfig, Trigger
from tests.spark.test_bulk_read import encode, service  # noqa: F401  (fixture)
from tests.spark.test_stream import create_topic
from tests.spark.test_stream_recovery import kill_at_random
from tests.support import replay
from tests.support.parts import ROOT, Broker
from tests.support.replay import Change

DDL = "CREATE TABLE shop.{table} (id INT PRIMARY KEY, name VARCHAR(20), qty INT)"
PARTITIONS = 2
TS = "_tidb_commit_ts"


def _seed() -> int:
    seed = int(os.environ.get("FLATAVRO_ORDER_SEED") or random.SystemRandom().randrange(2**31))
    print(f"FLATAVRO_ORDER_SEED={seed}")
    return seed


def register_orders(http: httpx.Client, topic: str, table: str = "orders") -> None:
    """shop.`table`'s schemas for `topic`, with ``_tidb_commit_ts``."""
    done = http.post("/v1/tables/register", json={
        "ddl": DDL.format(table=table), "topic": topic,
        "options": {"enable_tidb_extension": True}})
    assert done.status_code == 200, done.text


def produce_sent(broker: Broker, http: httpx.Client, topic: str, partition: int,
             changes: list[Change]) -> None:
    from confluent_kafka import Producer

    if not changes:
        return
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    for change, (key, value) in zip(changes, encode(http, topic, [c.record() for c in changes]),
                                    strict=True):
        # Sent at its commit's physical time (TiCDC sends soon after; --history ends a deleted
        # version at its delete's Kafka timestamp).
        producer.produce(topic, key=key, value=value, partition=partition,
                         timestamp=change.ts >> PHYSICAL_SHIFT)
    assert producer.flush(30) == 0


def txn_versions(path: str) -> Counter[tuple[str, int]]:
    """How many commits of the Delta table at `path` recorded each (app id, batch id): Delta's
    ``txn`` actions, read from its log."""
    recorded: Counter[tuple[str, int]] = Counter()
    for commit in sorted(Path(path, "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            txn = json.loads(line).get("txn")
            if txn is not None:
                recorded[(txn["appId"], txn["version"])] += 1
    return recorded


def _versions(path: str) -> list[tuple[int, list[dict[str, Any]]]]:
    """Every version of the table after its creation, read by delta-rs."""
    latest = DeltaTable(path).version()
    read = []
    for version in range(1, latest + 1):
        table = DeltaTable(path, version=version)
        rows = QueryBuilder().register("t", table).execute("SELECT * FROM t").read_all()
        read.append((version, pa.table(rows).to_pylist()))
    return read


def _check_never_back(versions: list[tuple[int, list[dict[str, Any]]]], by_ts: dict[int, Change],
                      *, seed: int) -> None:
    """No key shows a row older than one it showed before, and each row is the source's row
    of its commit ts."""
    shown: dict[int, int] = {}
    for version, rows in versions:
        for row in rows:
            key, ts = row["id"], row[TS]
            assert ts >= shown.get(key, -1), (
                f"seed {seed}: version {version}: key {key} went back in time from commit "
                f"{shown[key]} to {ts}")
            source = by_ts[ts]
            assert source.row is not None and source.key == key
            assert (row["name"], row["qty"]) == (source.row["name"], source.row["qty"]), (
                f"seed {seed}: version {version}: key {key} holds {row}, not the row of "
                f"commit {ts}")
            shown[key] = ts


def _stream(tmp_path: Path, kafka: Broker, http: httpx.Client, topic: str, name: str,
            **more: Any) -> StreamConfig:
    return StreamConfig(**dict(dict(
        topic=topic, bootstrap_servers=kafka.bootstrap, service_url=str(http.base_url),
        table_path=str(tmp_path / name), checkpoint=str(tmp_path / f"{name}.checkpoint"),
        trigger=Trigger(available_now=True), max_offsets_per_trigger=16), **more))


def _sent(seed: int) -> tuple[list[Change], list[list[Change]]]:
    rng = random.Random(seed)
    source = replay.history(rng, keys=10, commits=80)
    sent = replay.sends(source, rng, restarts=4)
    stale, resurrecting = replay.replayed_stale(sent)
    print(f"{len(source)} commits, {len(sent)} sent, {stale} older than one sent before, "
          f"{resurrecting} of them upserts of a deleted key")
    assert stale > 0  # the history exercises the guard
    return source, replay.by_partition(sent, PARTITIONS)


def test_replays_never_take_a_key_back_in_time(
        spark: SparkSession, kafka: Broker, service: httpx.Client,  # noqa: F811
        tmp_path: Path) -> None:
    seed = _seed()
    source, parts = _sent(seed)
    topic = f"order_{seed}"
    create_topic(kafka, topic, PARTITIONS)
    register_orders(service, topic)
    hard = _stream(tmp_path, kafka, service, topic, "hard", change_data_feed=True)
    # Partition 0 advances three changes for every one of partition 1; the stream catches up
    # after each round, in micro-batches of at most 16 messages.
    rounds = 3
    for number in range(rounds):
        for partition, step in ((0, 3), (1, 1)):
            changes = parts[partition]
            share = -(-len(changes) * step // (3 * rounds))
            produce_sent(kafka, service, topic, partition,
                     changes[number * share:(number + 1) * share] if number < rounds - 1
                     else changes[number * share:])
        run(spark, hard)

    by_ts = {c.ts: c for c in source}
    versions = _versions(hard.table_path)
    _check_never_back(versions, by_ts, seed=seed)
    final = {r["id"]: r[TS] for r in versions[-1][1]}
    assert final == {k: c.ts for k, c in replay.final_state(source).items()}, f"seed {seed}"
    _check_change_feed(hard.table_path, versions, seed=seed)
    _check_guard_survives_vacuum(spark, hard.table_path)

    # The same messages with --deletes soft: every key keeps its last row; deleted ones are
    # flagged with the commit ts of the row the delete removed.
    soft = _stream(tmp_path, kafka, service, topic, "soft", deletes=Deletes.SOFT)
    run(spark, soft)
    soft_versions = _versions(soft.table_path)
    _check_never_back(soft_versions, by_ts, seed=seed)
    present = replay.final_state(source)
    expected = {k: (c.ts, c.row["name"] if c.row else None, k not in present)
                for k, c in replay.last_rows(source).items()}
    assert {r["id"]: (r[TS], r["name"], r["_deleted"]) for r in soft_versions[-1][1]
            } == expected, f"seed {seed}"
    with pytest.raises(JobError, match=r"was made with --deletes soft \(its columns have "
                                       r"_deleted\), not --deletes hard"):
        run(spark, replace(soft, deletes=Deletes.HARD))

    # The same messages with --history: every version of the source, placed by its commit ts
    # and ended by the next or by its delete; the current rows never go back in time.
    scd = _stream(tmp_path, kafka, service, topic, "history", history=True)
    run(spark, scd)
    history = _versions(scd.table_path)
    _check_never_back([(v, [r for r in rows if r["_is_current"]]) for v, rows in history],
                      by_ts, seed=seed)
    got = {(r["id"], r["name"], r["_valid_from_ts"], r["_valid_to_ts"], r["_is_current"],
            r["_deleted"]) for r in history[-1][1]}
    assert all(r[TS] == r["_valid_from_ts"] for r in history[-1][1])
    want = replay.scd2(source)
    assert got == want, f"seed {seed}: {sorted(got - want)} / {sorted(want - got)}"
    with pytest.raises(JobError, match=r"was made with --history \(its columns have "
                                       r"_valid_from_ts\), not --deletes hard"):
        run(spark, replace(scd, history=False))


def _check_change_feed(path: str, versions: list[tuple[int, list[dict[str, Any]]]], *,
                       seed: int) -> None:
    """Delta's Change Data Feed holds, for each version, exactly the difference between it
    and the version before: one insert, delete or update pre/post image per changed key."""
    feed = pa.table(DeltaTable(path).load_cdf(starting_version=1).read_all()).to_pylist()
    got = Counter((r["_commit_version"], r["_change_type"], r["id"], r[TS]) for r in feed)
    want: Counter[tuple[int, str, int, int]] = Counter()
    before: dict[int, int] = {}
    for version, rows in versions:
        after = {r["id"]: r[TS] for r in rows}
        for key in before.keys() - after.keys():
            want[(version, "delete", key, before[key])] += 1
        for key in after.keys() - before.keys():
            want[(version, "insert", key, after[key])] += 1
        for key in before.keys() & after.keys():
            if before[key] != after[key]:
                want[(version, "update_preimage", key, before[key])] += 1
                want[(version, "update_postimage", key, after[key])] += 1
        before = after
    assert got == want, f"seed {seed}: the change feed differs: {got - want} / {want - got}"


def _check_guard_survives_vacuum(spark: SparkSession, path: str) -> None:
    """VACUUM (Delta's, with no retention; and delta-rs's, dry run) leaves the tombstones'
    folder alone: it starts with ``_``."""
    guard = f"{path}/_flatavro_guard"
    tombstones = DeltaTable(guard).file_uris()
    assert tombstones  # the history deletes keys, so the guard holds tombstones
    files = DeltaTable(path).vacuum(retention_hours=0, enforce_retention_duration=False,
                                    dry_run=True)
    assert not [f for f in files if "_flatavro_guard" in f]
    spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    try:
        spark.sql(f"VACUUM delta.`{path}` RETAIN 0 HOURS").collect()
    finally:
        spark.conf.unset("spark.databricks.delta.retentionDurationCheck.enabled")
    assert DeltaTable(guard).file_uris() == tombstones
    assert all(Path(urlparse(uri).path).exists() for uri in tombstones)


@pytest.mark.parametrize("keep", ["guard", "history", "changelog"])
def test_sigkill_in_commit_order_loses_and_doubles_nothing(
        spark: SparkSession, kafka: Broker, service: httpx.Client,  # noqa: F811
        tmp_path: Path, keep: str) -> None:
    """A whole database (two tables, `--topics` and a table template) in commit order (the
    guard, --history, or the guard behind a changelog: landing and applies both under way),
    SIGKILLed at random moments while TiCDC's replays arrive, then restarted: each final table
    equals its source (its versions, with --history); no micro-batch is recorded twice by a
    table, its guard or the changelog."""
    seed = _seed()
    rng = random.Random(seed)
    sources = {}
    for number in range(2):
        topic, table = f"order_kill_{keep}_{seed}_{number}", f"orders{number}"
        sources[table] = replay.history(rng, keys=10, commits=200)
        create_topic(kafka, topic, PARTITIONS)
        register_orders(service, topic, table)
        parts = replay.by_partition(replay.sends(sources[table], rng, restarts=3), PARTITIONS)
        for partition, changes in enumerate(parts):
            produce_sent(kafka, service, topic, partition, changes)
    lake = tmp_path / "lake"
    command = [sys.executable, "-m", "spark_jobs.stream", "--topics",
               ",".join(f"order_kill_{keep}_{seed}_{n}" for n in range(2)),
               "--bootstrap-servers", kafka.bootstrap, "--service-url", str(service.base_url),
               "--table-path-template", str(lake / "{database}" / "{table}"),
               "--checkpoint", str(tmp_path / "checkpoint"), "--master", "local[2]",
               *(["--history"] if keep == "history" else []),
               *(["--changelog", str(tmp_path / "changelog"), "--apply-lag", "2s"]
                 if keep == "changelog" else [])]
    for attempt in range(3):
        kill_at_random([*command, "--trigger", "processing-time=1 seconds",
                        "--max-offsets-per-trigger", "40"], rng, tmp_path / f"{attempt}.log")
    done = subprocess.run([*command, "--trigger", "available-now"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]

    for table, source in sources.items():
        path = str(lake / "shop" / table)
        final = _versions(path)[-1][1]
        if keep == "history":
            got = {(r["id"], r["name"], r["_valid_from_ts"], r["_valid_to_ts"],
                    r["_is_current"], r["_deleted"]) for r in final}
            want = replay.scd2(source)
            assert got == want, f"seed {seed}: {table}: {sorted(got - want)} / {sorted(want - got)}"
        else:
            assert {r["id"]: r[TS] for r in final} == {
                k: c.ts for k, c in replay.final_state(source).items()}, f"seed {seed}: {table}"
        logs = [path, *([] if keep == "history" else [f"{path}/_flatavro_guard"]),
                *([str(tmp_path / "changelog")] if keep == "changelog" else [])]
        for delta_log in logs:
            recorded = txn_versions(delta_log)
            assert recorded and max(recorded.values()) == 1, (
                f"seed {seed}: {delta_log} recorded a micro-batch twice: "
                f"{[pair for pair, n in recorded.items() if n > 1]}")
