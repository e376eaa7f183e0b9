"""The commit-order guard of a stream's table (docs/streaming.md, "Commit order"): what a MERGE
compares so that a table does not go back in time when TiCDC sends changes again.

TiCDC's Kafka sink is at least once: after a changefeed restart it sends everything after its
checkpoint again, so older commits arrive at larger offsets. A table whose value schema carries
``_tidb_commit_ts`` keeps each row's commit ts (one of the row's columns), and its MERGE replaces
a row only with a newer commit (`merge.clauses`). A hard delete leaves no row to compare with,
so the key and the commit ts of what the delete removed stay behind as a *tombstone* in the
table's guard: a Delta table inside the table's directory, under ``_flatavro_guard`` (Delta and
its readers skip directories that start with ``_``; it moves and goes with the table).

The guard is written before the table, with the same (app id, batch id) pair: a crash between the
two commits re-runs the batch, the guard skips it and the table applies it, and a tombstone the
guard already holds changes none of the table's decisions (its commit ts is the one the MERGE
computes from the row and the batch).
"""

from __future__ import annotations

from delta.tables import DeltaTable
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from spark_jobs.decoding.transforms import (
    BOUND,
    COMMIT_TS,
    HAS_DELETE,
    PHYSICAL_SHIFT,
    TOMBSTONE,
)
from spark_jobs.errors import JobError
from spark_jobs.sinks.delta import append_changes
from spark_jobs.sources.files import path_exists, qualified

__all__ = ["GUARD_DIR", "check_guard_columns", "create_guard", "expire", "expired",
           "guard_columns", "guard_path", "keyed", "newest", "open_guard", "record",
           "removed_commits", "tombstones_joined", "with_tombstones"]

GUARD_DIR = "_flatavro_guard"
"""The guard's directory inside the table's."""


def guard_path(path: str) -> str:
    """The guard table of the table at `path`."""
    return f"{path.rstrip('/')}/{GUARD_DIR}"


def guard_columns(columns: T.StructType, keys: list[str]) -> T.StructType:
    """A tombstone: the key columns (of the table's `columns`) and the commit ts of what the
    key's delete removed (the same in Delta's guard and Iceberg's)."""
    fields = {f.name: f for f in columns.fields}
    return T.StructType([T.StructField(k, fields[k].dataType, True) for k in keys] + [
        T.StructField(COMMIT_TS, T.LongType(), True)])


def open_guard(spark: SparkSession, path: str, *, columns: T.StructType, keys: list[str]
               ) -> bool:
    """Check the guard of the table at `path`; whether the table has one (`create_guard` makes
    it before the first delete's tombstone, so a guard holds tombstones unless all expired:
    joined with an empty guard, a MERGE decides the same).

    Raises:
        JobError: the guard's columns are not the table's key columns (the key changed since
            it was made), naming both.
    """
    guard = guard_path(path)
    if not path_exists(spark, guard, empty_is_absent=True):
        return False
    check_guard_columns(DeltaTable.forPath(spark, guard).toDF().schema,
                        guard_columns(columns, keys), guard=f"at {guard}", keys=keys,
                        fix="move the table aside and rebuild it (docs/streaming.md, "
                            "'Commit order')")
    return True


def create_guard(spark: SparkSession, path: str, *, columns: T.StructType, keys: list[str]
                 ) -> None:
    """Make the (empty) guard of the table at `path` unless it exists: before the first
    tombstone, so a table whose batches delete nothing costs no second table."""
    DeltaTable.createIfNotExists(spark).location(qualified(spark, guard_path(path))).addColumns(
        guard_columns(columns, keys)).execute()


def check_guard_columns(have: T.StructType, want: T.StructType, *, guard: str, keys: list[str],
                        fix: str) -> None:
    """Refuse a guard whose columns (`have`) are not `want` (`guard_columns`).

    Raises:
        JobError: naming the guard (`guard`), both sets of columns and the `fix`.
    """
    if [(f.name, f.dataType) for f in have.fields] != [(f.name, f.dataType)
                                                       for f in want.fields]:
        raise JobError(
            f"the commit-order guard {guard} holds columns "
            f"{', '.join(f.name for f in have.fields)}, not the table's key "
            f"{', '.join(keys)} with {COMMIT_TS}: the key changed; {fix}")


def _guard(spark: SparkSession, path: str) -> DataFrame:
    return spark.read.format("delta").load(guard_path(path))


def keyed(rows: DataFrame, other: DataFrame, *, keys: list[str], prefix: str) -> DataFrame:
    """`rows` left-joined with `other` on the key columns (null-safe); `other`'s columns
    renamed with `prefix`, its key columns dropped."""
    renamed = other.select(*[F.col(c).alias(prefix + c) for c in other.columns])
    on = [rows[k].eqNullSafe(renamed[prefix + k]) for k in keys]
    return rows.join(renamed, on, "left").drop(*[prefix + k for k in keys])


def with_tombstones(spark: SparkSession, path: str, *, winners: DataFrame, keys: list[str]
                    ) -> DataFrame:
    """`winners` with `TOMBSTONE`: the commit ts of its key's newest tombstone, null when
    none."""
    return tombstones_joined(winners, newest(_guard(spark, path), keys=keys), keys=keys)


def tombstones_joined(winners: DataFrame, guard: DataFrame, *, keys: list[str]) -> DataFrame:
    """`winners` with `TOMBSTONE` from `guard` (a guard's rows)."""
    tombs = keyed(winners, guard, keys=keys, prefix="_tomb_")
    return tombs.withColumnRenamed(f"_tomb_{COMMIT_TS}", TOMBSTONE)


def removed_commits(winners: DataFrame, rows: DataFrame, *, keys: list[str]) -> DataFrame:
    """The tombstones of the keys the batch deletes (`winners`: `in_commit_order`): each key
    with the commit ts of what its delete removed, the highest of its row in the table (`rows`:
    the table's key columns and commit ts, read before the batch's MERGE) and the batch's
    `BOUND`; none for a key that had neither.

    The table's rows of those keys are a semi join with the (few) deleted keys, which Spark
    broadcasts, not a join of the deleted keys with the whole table (a shuffle of both sides:
    as long as the table's own MERGE; docs/speed.md)."""
    deleted = winners.where(F.col(HAS_DELETE))
    wanted = deleted.select(*[F.col(k).alias(f"_deleted_{k}") for k in keys])
    removed = rows.join(wanted, [rows[k].eqNullSafe(wanted[f"_deleted_{k}"]) for k in keys],
                        "left_semi").select(*keys, COMMIT_TS)
    bounds = deleted.select(*keys, F.col(BOUND).alias(COMMIT_TS))
    return (removed.unionByName(bounds).groupBy(*keys).agg(F.max(COMMIT_TS).alias(COMMIT_TS))
            .where(F.col(COMMIT_TS).isNotNull()))


def expired(*, retention_ms: int, now_ms: int) -> Column:
    """Whether a tombstone's commit is older than `retention_ms` before `now_ms`."""
    return F.shiftright(F.col(COMMIT_TS), PHYSICAL_SHIFT) < F.lit(now_ms - retention_ms)


def record(spark: SparkSession, path: str, *, winners: DataFrame, keys: list[str],
           app_id: str, batch_id: int) -> None:
    """Keep a tombstone for each key the batch deletes (`winners`: `in_commit_order`), with the
    commit ts of what the delete removed: the highest of the row in the table (read before the
    batch's MERGE) and the batch's `BOUND`. Appended, once per (app id, batch id) like every
    write of the stream: a key may have several tombstones, and its newest counts
    (`with_tombstones`; `expire` keeps one per key). (A MERGE into the guard cost as much as
    the table's own MERGE: docs/speed.md. A batch that deletes nothing writes nothing here:
    its re-run decides the same.)"""
    source = removed_commits(winners, DeltaTable.forPath(spark, path).toDF(), keys=keys)
    append_changes(source, guard_path(path), app_id=app_id, batch_id=batch_id)


def expire(spark: SparkSession, path: str, *, retention_ms: int, now_ms: int) -> None:
    """Keep each key's newest tombstone unless its commit is older than `retention_ms` before
    `now_ms` (a replay cannot reach back that far; docs/streaming.md, "Commit order"): the
    guard rewritten in one commit, nothing removed when nothing has to be."""
    guard = _guard(spark, path)
    keys = [c for c in guard.columns if c != COMMIT_TS]
    live = ~expired(retention_ms=retention_ms, now_ms=now_ms)
    # Each key's newest tombstone and how many it has: the guard read once.
    grouped = guard.groupBy(*keys).agg(F.max(COMMIT_TS).alias(COMMIT_TS),
                                       F.count(F.lit(1)).alias("_tombstones")).persist()
    try:
        counted = grouped.agg(F.sum("_tombstones"), F.count(F.when(live, 1))).first()
        assert counted is not None  # an aggregate without grouping is one row
        if counted[1] < (counted[0] or 0):
            grouped.where(live).drop("_tombstones").write.format("delta").mode(
                "overwrite").save(guard_path(path))
    finally:
        grouped.unpersist()


def newest(guard: DataFrame, *, keys: list[str]) -> DataFrame:
    """Each key's newest tombstone among a guard's rows."""
    return guard.groupBy(*keys).agg(F.max(COMMIT_TS).alias(COMMIT_TS))
