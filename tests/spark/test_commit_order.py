"""`in_commit_order` and `latest_state(by_commit=True)` on hand-made micro-batches: the change
kept per key is the newest commit, not the last to arrive; a delete (no commit ts of its own)
is placed after the key's changes that arrived before it. The guard's tombstones expire."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from spark_jobs.decoding.transforms import BOUND, HAS_DELETE, in_commit_order, latest_state
from spark_jobs.errors import JobError
from spark_jobs.sinks import ordering

COLUMNS = "id int, name string, _tidb_commit_ts long, _op string, _partition int, _offset long"


def batch(spark: SparkSession, *changes: tuple[Any, ...]) -> DataFrame:
    """(id, name or None for a delete, commit ts or None), in arrival order on partition 0."""
    rows = [(key, name, ts, "delete" if name is None else "upsert", 0, offset)
            for offset, (key, name, ts) in enumerate(changes)]
    return spark.createDataFrame(rows, COLUMNS)


def kept(df: DataFrame) -> dict[int, tuple[Any, ...]]:
    return {r["id"]: (r["_op"], r["name"], r["_tidb_commit_ts"], r[HAS_DELETE], r[BOUND])
            for r in in_commit_order(df, ["id"]).collect()}


def test_the_newest_commit_wins_whatever_the_arrival_order(spark: SparkSession) -> None:
    changes = batch(spark, (1, "new", 20), (1, "old", 10), (2, "a", 5), (2, "b", 6))
    assert kept(changes) == {1: ("upsert", "new", 20, False, None),
                             2: ("upsert", "b", 6, False, None)}


def test_a_delete_is_after_the_changes_before_it(spark: SparkSession) -> None:
    # 1: deleted after its commit 20; the replayed commit 10 after it is older than the
    #    delete's bound (20): kept as the upsert, which the bound rules out.
    # 2: deleted, then re-inserted by a newer commit: the insert survives the delete.
    # 3: a replayed delete first, then the key's own newer row: the row is kept as the upsert
    #    (whether it survives depends on the table's row: the MERGE decides).
    changes = batch(spark, (1, "a", 20), (1, None, None), (1, "stale", 10),
                    (2, "x", 5), (2, None, None), (2, "back", 7),
                    (3, None, None), (3, "row", 9))
    assert kept(changes) == {1: ("upsert", "stale", 10, True, 20),
                             2: ("upsert", "back", 7, True, 5),
                             3: ("upsert", "row", 9, True, None)}
    state = latest_state(changes, ["id"], by_commit=True)
    assert sorted((r["id"], r["name"]) for r in state.collect()) == [(2, "back"), (3, "row")]


def test_an_upsert_older_than_the_delete_bound_does_not_survive(spark: SparkSession) -> None:
    changes = batch(spark, (1, "b", 30), (1, None, None), (1, "a", 10))
    assert latest_state(changes, ["id"], by_commit=True).count() == 0
    # Kafka order would keep the replayed older row.
    assert [r["name"] for r in latest_state(changes, ["id"]).collect()] == ["a"]


def test_tombstones_expire_after_the_retention_and_the_guard_keeps_its_key(
        spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "table")
    columns = T.StructType([T.StructField("id", T.IntegerType()),
                            T.StructField("_tidb_commit_ts", T.LongType())])
    spark.createDataFrame([], columns).write.format("delta").save(path)
    assert ordering.open_guard(spark, path, columns=columns, keys=["id"]) is False
    ordering.create_guard(spark, path, columns=columns, keys=["id"])
    assert ordering.open_guard(spark, path, columns=columns, keys=["id"]) is True
    now_ms = 1_764_000_000_000
    day = 86_400_000
    # The guard is appended to: a key deleted twice has two tombstones, the newest counts.
    tombs = [(1, (now_ms - 8 * day) << 18), (2, (now_ms - 6 * day) << 18), (3, now_ms << 18),
             (3, (now_ms - 9 * day) << 18), (2, (now_ms - 7 * day) << 18)]
    spark.createDataFrame(tombs, "id int, _tidb_commit_ts long").write.format("delta").mode(
        "append").save(ordering.guard_path(path))
    ordering.expire(spark, path, retention_ms=7 * day, now_ms=now_ms)
    left = spark.read.format("delta").load(ordering.guard_path(path))
    assert sorted((r["id"], r["_tidb_commit_ts"]) for r in left.collect()) == [
        (2, (now_ms - 6 * day) << 18), (3, now_ms << 18)]
    # A table whose key changed since its guard was made is refused, naming both.
    other = T.StructType([T.StructField("sku", T.StringType()), *columns.fields])
    with pytest.raises(JobError, match=r"holds columns id, _tidb_commit_ts, not the table's "
                                       r"key sku with _tidb_commit_ts"):
        ordering.open_guard(spark, path, columns=other, keys=["sku"])
