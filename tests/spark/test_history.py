"""``--history`` (SCD type 2) on hand-made micro-batches MERGEd into a real Delta table: every
version placed by its commit ts whatever the arrival order, a DELETE ending the version that
arrived before it at the message's Kafka time, a version sent again after a delete reopening,
and a batch applied twice changing nothing."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from spark_jobs.sinks import delta, history

VALUES = T.StructType([T.StructField("id", T.IntegerType()), T.StructField("name", T.StringType()),
                       T.StructField("_tidb_commit_ts", T.LongType())])
COLUMNS = [f.name for f in history.with_history(VALUES).fields]
BOOK = "_op string, _partition int, _offset long, _timestamp timestamp"
SHIFT = 18
EPOCH = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def ms(at: int) -> int:
    return int(EPOCH.timestamp() * 1000) + at


def ts(at: int) -> int:
    """A commit ts at `at` ms after EPOCH (logical 1)."""
    return (ms(at) << SHIFT) + 1


class Table:
    """A ``--history`` table and the offsets of the messages applied to it."""

    def __init__(self, spark: SparkSession, path: Path) -> None:
        self.spark, self.path, self.offset, self.batch = spark, str(path), 0, 0
        spark.createDataFrame([], history.with_history(VALUES)).write.format("delta").save(
            self.path)

    def frame(self, *changes: tuple[Any, ...]) -> DataFrame:
        """(id, name, commit at) upserts and (id, None, sent at) deletes, in arrival order."""
        rows = []
        for key, name, at in changes:
            self.offset += 1
            sent = EPOCH + dt.timedelta(milliseconds=at)
            rows.append((key, name, ts(at) if name is not None else None,
                         "delete" if name is None else "upsert", 0, self.offset, sent))
        schema = ", ".join(f"{f.name} {f.dataType.simpleString()}" for f in VALUES.fields)
        return self.spark.createDataFrame(rows, f"{schema}, {BOOK}")

    def apply(self, *changes: tuple[Any, ...], again: bool = False) -> dict[str, int] | None:
        if not again:
            self.batch += 1
            self.last = self.frame(*changes)
        return delta.merge_history(self.spark, self.path, changes=self.last, key_columns=["id"],
                                   columns=COLUMNS, app_id="app", batch_id=self.batch)

    def rows(self) -> list[tuple[Any, ...]]:
        read = self.spark.read.format("delta").load(self.path).collect()
        return sorted((r["id"], r["name"], r["_valid_from_ts"], r["_valid_to_ts"],
                       r["_is_current"], r["_deleted"]) for r in read)


def test_versions_are_placed_by_commit_ts_and_deletes_end_them(
        spark: SparkSession, tmp_path: Path) -> None:
    table = Table(spark, tmp_path / "t")
    # 1: a, b, then a delete sent at 35 ms; 2: c only; 3: deleted before it was ever seen.
    table.apply((1, "a", 10), (1, "b", 20), (2, "c", 5), (1, None, 35), (3, None, 40))
    assert table.rows() == [
        (1, "a", ts(10), ts(20), False, False),
        (1, "b", ts(20), ms(35) << SHIFT, False, True),
        (2, "c", ts(5), None, True, False)]
    # 1 comes back; 2's version at 3 ms arrives late: placed before c, ended by it.
    table.apply((1, "d", 50), (2, "early", 3))
    assert table.rows() == [
        (1, "a", ts(10), ts(20), False, False),
        (1, "b", ts(20), ms(35) << SHIFT, False, True),
        (1, "d", ts(50), None, True, False),
        (2, "c", ts(5), None, True, False),
        (2, "early", ts(3), ts(5), False, False)]
    # The same batch again (a re-run after a crash) is skipped; its changes sent again in a
    # new batch change no version, only where each arrived last.
    assert table.apply(again=True) is None
    before = table.rows()
    counts = table.apply((1, "d", 50), (2, "early", 3))
    assert table.rows() == before
    assert counts == {"numTargetRowsInserted": 0, "numTargetRowsUpdated": 2,
                      "numTargetRowsDeleted": 0}


def test_a_delete_sent_again_reopens_when_the_version_after_it_comes_again(
        spark: SparkSession, tmp_path: Path) -> None:
    table = Table(spark, tmp_path / "t")
    table.apply((1, "a", 10), (1, None, 15), (1, "b", 20))
    want = [(1, "a", ts(10), ms(15) << SHIFT, False, True), (1, "b", ts(20), None, True, False)]
    assert table.rows() == want
    # TiCDC restarts with its checkpoint just before the delete: the delete comes first in a
    # batch of its own. It cannot be told from a delete of b, so it ends b (at b's commit at
    # the earliest) ...
    table.apply((1, None, 15))
    assert table.rows() == [want[0], (1, "b", ts(20), ts(20), False, True)]
    # ... until b is sent again after it: the delete was before b.
    table.apply((1, "b", 20))
    assert table.rows() == want
    # The same suffix again, one message a batch: the delete ends a, which arrived last (not b,
    # the newest in the table).
    for change in ((1, "a", 10), (1, None, 15), (1, "b", 20)):
        table.apply(change)
        if change[1] is None:
            assert table.rows() == want
    assert table.rows() == want
    # A delete sent again on its own keeps the first delete's time; sent again after its version,
    # it is the delete that ends the version sent again.
    table.apply((1, "c", 30), (1, None, 40))
    table.apply((1, None, 45))
    assert table.rows()[-1] == (1, "c", ts(30), ms(40) << SHIFT, False, True)
    table.apply((1, "c", 30), (1, None, 50))
    assert table.rows()[-1] == (1, "c", ts(30), ms(50) << SHIFT, False, True)


def test_a_version_sent_again_is_ended_by_the_delete_after_it_not_by_an_older_one(
        spark: SparkSession, tmp_path: Path) -> None:
    # The SIGKILL test's seed 357222685: a replay starting right at an older delete ends the
    # newer version at its own commit for a while; the replay then sends that version and its
    # own delete in one batch, and the delete's time is its end (not the end before).
    table = Table(spark, tmp_path / "t")
    table.apply((1, "a", 10), (1, None, 15), (1, "b", 20))
    table.apply((1, None, 15))
    assert table.rows()[-1] == (1, "b", ts(20), ts(20), False, True)
    table.apply((1, "b", 20), (1, None, 30))
    assert table.rows() == [(1, "a", ts(10), ms(15) << SHIFT, False, True),
                            (1, "b", ts(20), ms(30) << SHIFT, False, True)]
    # The same with the older delete, the version and its delete in one batch.
    table.apply((1, "c", 40))
    table.apply((1, None, 30), (1, "c", 40), (1, None, 60), (1, None, 70))
    assert table.rows()[-1] == (1, "c", ts(40), ms(60) << SHIFT, False, True)


def test_a_delete_time_before_its_version_is_taken_as_the_version_commit(
        spark: SparkSession, tmp_path: Path) -> None:
    # Kafka's clock behind TiDB's: the delete cannot end a version before it began.
    table = Table(spark, tmp_path / "t")
    table.apply((1, "a", 10), (1, None, 2))
    assert table.rows() == [(1, "a", ts(10), ts(10), False, True)]
