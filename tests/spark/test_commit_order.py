"""`in_commit_order` and `latest_state(by_commit=True)` on hand-made micro-batches: the change
kept per key is the newest commit, not the last to arrive; a delete (no commit ts of its own)
is placed after the key's changes that arrived before it."""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, SparkSession

from spark_jobs.decoding.transforms import BOUND, HAS_DELETE, in_commit_order, latest_state

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
