"""The commit-order guard of an Iceberg table (``--format iceberg``, hard deletes in commit
order): what `ordering` keeps for a Delta table, kept in the catalog (docs/streaming.md,
"Iceberg").

A hard delete leaves no row whose commit ts a replayed older change could be compared with, so
the key and the commit ts of what the delete removed stay behind as a tombstone. A Delta table
keeps its tombstones in a folder of its own that readers skip; an Iceberg table is what its
catalog names, so its guard is a table of its own beside it, ``<namespace>.<table>__flatavro_guard``
(`guard_name`), marked with the property ``flatavro.guard-of``. It has the table's key columns and
``_tidb_commit_ts``.

Exactly once as the table is: the guard's write carries (app id, batch id) in its snapshot's
summary and comes before the table's; a crash between the two re-runs the batch, the guard
skips it (its snapshots name the batch) and the table applies it.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from spark_jobs.decoding.transforms import COMMIT_TS, PHYSICAL_SHIFT
from spark_jobs.sinks import merge, ordering
from spark_jobs.sinks.iceberg import (
    exists,
    identifier,
    in_session,
    snapshot_summary,
    table_columns,
)

__all__ = ["GUARD_OF", "GUARD_SUFFIX", "expire", "guard_name", "open_guard", "record",
           "with_tombstones"]

GUARD_SUFFIX = "__flatavro_guard"
"""What a table's name takes to name its guard."""

GUARD_OF = "flatavro.guard-of"
"""The guard's table property naming its table."""


def guard_name(name: str) -> str:
    """The guard of table `name` (``namespace.table``)."""
    return name + GUARD_SUFFIX


def open_guard(spark: SparkSession, name: str, *, columns: T.StructType, keys: list[str],
               format_version: int) -> bool | None:
    """Create the guard of table `name` when it has none (`columns`: the table's); check an
    existing one. Whether it holds any tombstone; None when it was created now (empty).

    Raises:
        JobError: the guard's columns are not the table's key columns and commit ts (the key
            changed since it was made), naming both.
    """
    want = ordering.guard_columns(columns, keys)
    guard = guard_name(name)
    if exists(spark, guard):
        ordering.check_guard_columns(table_columns(spark, guard), want, guard=guard, keys=keys,
                                     fix=f"rebuild {name} and drop its guard "
                                         f"(docs/streaming.md, 'Iceberg')")
        return not spark.table(identifier(guard)).isEmpty()
    listed = ", ".join(f"`{f.name}` {f.dataType.simpleString()}" for f in want.fields)
    spark.sql(f"CREATE TABLE IF NOT EXISTS {identifier(guard)} ({listed}) USING iceberg "
              f"TBLPROPERTIES ('format-version' = '{format_version}', "
              f"'{GUARD_OF}' = '{name}')")
    return None


def with_tombstones(spark: SparkSession, name: str, *, winners: DataFrame, keys: list[str]
                    ) -> DataFrame:
    """`winners` (moved into `spark`) with `TOMBSTONE`: the commit ts of its key's tombstone,
    null when none."""
    return ordering.tombstones_joined(in_session(spark, winners),
                                      spark.table(identifier(guard_name(name))), keys=keys)


def record(spark: SparkSession, name: str, *, winners: DataFrame, keys: list[str],
           app_id: str, batch_id: int) -> None:
    """Keep a tombstone for each key the batch deletes (`ordering.removed_commits`, the table
    read before the batch's MERGE); a key's tombstone keeps the highest commit ts. The write
    names (`app_id`, `batch_id`) in the guard's snapshot; the caller skips a batch the guard's
    snapshots name already."""
    source = ordering.removed_commits(in_session(spark, winners),
                                      spark.table(identifier(name)), keys=keys)
    view = f"flatavro_tombstones_{batch_id}"
    source.createOrReplaceTempView(view)
    on = merge.key_on(keys)
    try:
        with snapshot_summary(spark, app_id=app_id, batch_id=batch_id):
            spark.sql(f"MERGE INTO {identifier(guard_name(name))} t USING {view} s ON {on} "
                      f"WHEN MATCHED AND s.`{COMMIT_TS}` > t.`{COMMIT_TS}` "
                      f"THEN UPDATE SET t.`{COMMIT_TS}` = s.`{COMMIT_TS}` "
                      f"WHEN NOT MATCHED THEN INSERT *")
    finally:
        spark.catalog.dropTempView(view)


def expire(spark: SparkSession, name: str, *, retention_ms: int, now_ms: int) -> None:
    """Remove the tombstones whose commit is older than `retention_ms` before `now_ms` (as
    `ordering.expire` does for Delta)."""
    spark.sql(f"DELETE FROM {identifier(guard_name(name))} WHERE "
              f"shiftright(`{COMMIT_TS}`, {PHYSICAL_SHIFT}) < {now_ms - retention_ms}")
