"""The Delta table a stream keeps equal to the TiDB table: the checks before a stream writes to
a path, schema evolution in one commit (the columns: `columns`), MERGE by key (its clauses:
`merge`) and keyless append, each idempotent per micro-batch.

Idempotence uses Delta's own idempotent writes: a write carries (app id, batch id) and Delta
skips it when the table already recorded that batch for that app id (``txnAppId`` /
``txnVersion``; the session settings below for MERGE).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from spark_jobs.decoding.schemas import SubjectVersions
from spark_jobs.decoding.transforms import DELETED
from spark_jobs.errors import JobError, not_a_dead_letter_table, not_a_delta_table, one_line
from spark_jobs.sinks import history, merge
from spark_jobs.sinks.columns import Evolution, check_mode, defaults, describe, difference
from spark_jobs.sinks.upkeep import DELETION_VECTORS_PROPERTY, DeletionVectors, deletion_vectors
from spark_jobs.sources.files import path_exists, qualified

__all__ = ["Detail", "catalog_location", "check_table", "create_table", "evolve",
           "merge_changes", "merge_history", "save_as_table", "drop_table",
           "append_changes", "TOPIC_PROPERTY", "check_dead_letter_table", "idempotent",
           "with_deleted",
           "CHANGE_DATA_FEED_PROPERTY", "enable_change_data_feed", "committed_version", "evolved"]

TOPIC_PROPERTY = "flatavro.topic"
"""Table property naming the topic a stream applies to the table."""

DEAD_LETTER_COLUMNS = ("key", "value", "partition", "offset", "reason")

_TXN_APP_ID = "spark.databricks.delta.write.txnAppId"
_TXN_VERSION = "spark.databricks.delta.write.txnVersion"

@dataclass(frozen=True, slots=True)
class Detail:
    """What the stream reads of an existing table's ``DESCRIBE DETAIL``, once per open."""

    properties: dict[str, str]
    features: list[str]

    @property
    def deletion_vectors(self) -> DeletionVectors:
        """The table's deletion-vector state."""
        return deletion_vectors(self.properties, self.features)


def check_table(spark: SparkSession, path: str, *, topic: str,
                versions: dict[int, T.StructType], latest: T.StructType) -> Detail | None:
    """The detail of the Delta table for `topic` at `path`; None when nothing is there yet.

    Raises:
        JobError: the path holds something else than a Delta table, a table of another topic,
            or a table whose columns match no registered version (naming the difference).
    """
    if not path_exists(spark, path, empty_is_absent=True):
        return None
    if not DeltaTable.isDeltaTable(spark, path):
        raise not_a_delta_table(path, topic=topic,
                                iceberg=path_exists(spark, f"{path.rstrip('/')}/metadata"))
    table = DeltaTable.forPath(spark, path)
    row = table.detail().select("properties", "tableFeatures").first()
    assert row is not None  # a Delta table's detail is one row
    detail = Detail(properties=dict(row[0] or {}), features=list(row[1] or []))
    owner = detail.properties.get(TOPIC_PROPERTY)
    if owner is not None and owner != topic:
        raise JobError(f"the Delta table at {path} mirrors topic {owner}, not {topic}")
    have = table.toDF().schema
    if not any(describe(have) == describe(v) for v in versions.values()):
        check_mode(have, latest, table=f"the Delta table at {path}")
        raise JobError(f"the Delta table at {path} is not a table of topic {topic}: it "
                       f"{difference(have, latest)} (compared with the latest version)")
    return detail


CHANGE_DATA_FEED_PROPERTY = "delta.enableChangeDataFeed"
"""Table property: Delta records each commit's row changes for ``readChangeFeed``."""


_IN_MEMORY = "in-memory"
_namespaces = threading.Lock()  # a database's tables open in parallel; one creates it


def create_table(spark: SparkSession, path: str, *, topic: str, schema: T.StructType,
                 deletion_vectors: bool, change_data_feed: bool = False,
                 name: str | None = None) -> None:
    """An empty Delta table with the topic's columns, the topic as a property, deletion
    vectors on or off (``delta.enableDeletionVectors``, explicit either way) and, when asked,
    Delta's Change Data Feed; at `path`, or with `name` the table `name` in the session's
    catalog, at the catalog's location for it (`path` unused)."""
    builder = DeltaTable.createIfNotExists(spark)
    if name is not None:
        _create_database(spark, name)
        builder = builder.tableName(name)
    else:  # the builder wants an absolute or scheme-qualified location
        builder = builder.location(qualified(spark, path))
    builder = builder.addColumns(schema).property(TOPIC_PROPERTY, topic).property(
        DELETION_VECTORS_PROPERTY, str(deletion_vectors).lower())
    if change_data_feed:
        builder = builder.property(CHANGE_DATA_FEED_PROPERTY, "true")
    builder.execute()


def catalog_location(spark: SparkSession, name: str) -> str | None:
    """The location of the Delta table `name` in the session's catalog (``database.table``
    or ``catalog.database.table``); None when the catalog has no such table.

    Raises:
        JobError: the session's catalog is Spark's in-memory one (its names end with the job,
            so a restart would not find the table), or `name` is a table of another format
            or a view.
    """
    if spark.conf.get("spark.sql.catalogImplementation", _IN_MEMORY) == _IN_MEMORY and (
            name.count(".") == 1 or name.startswith("spark_catalog.")):
        raise JobError(f"the table {name}: the session's catalog is Spark's in-memory one, "
                       f"whose names end with the job (a restart would not find the table): "
                       f"configure a metastore (spark.sql.catalogImplementation=hive, "
                       f"docs/streaming.md), or give the table a path")
    if not spark.catalog.tableExists(name):
        return None
    try:
        row = spark.sql(f"DESCRIBE DETAIL {_quoted(name)}").select("format", "location").first()
    except Exception as exc:  # a view, or a table Delta cannot describe
        raise JobError(f"the table {name} in the session's catalog is not a Delta table: "
                       f"{one_line(exc)}") from exc
    assert row is not None  # a table's detail is one row
    if (row[0] or "").lower() != "delta":
        raise JobError(f"the table {name} in the session's catalog is a {row[0]} table, not a "
                       f"Delta table: give the stream another name")
    return str(row[1])


def save_as_table(rows: DataFrame, *, name: str, overwrite: bool) -> None:
    """`rows` as the Delta table `name` of the session's catalog (its database made when
    absent), replacing the table there with `overwrite`: one commit either way (a failed
    write leaves no table, or the old one)."""
    _create_database(rows.sparkSession, name)
    rows.write.format("delta").mode("overwrite" if overwrite else "error").saveAsTable(name)


def drop_table(spark: SparkSession, name: str) -> None:
    """Drop the table `name` this run made in the session's catalog (a later topic failed)."""
    spark.sql(f"DROP TABLE IF EXISTS {_quoted(name)}")


def _create_database(spark: SparkSession, name: str) -> None:
    """The database of table `name` in the session's catalog, made when absent (one thread at
    a time: a database's tables open in parallel)."""
    with _namespaces:
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {_quoted(name.rpartition('.')[0])}")


def _quoted(name: str) -> str:
    """`name`'s parts in backquotes (each is letters, digits and '_')."""
    return ".".join(f"`{part}`" for part in name.split("."))


def enable_change_data_feed(spark: SparkSession, path: str, *, detail: Detail) -> bool:
    """Turn Delta's Change Data Feed on for an existing table (`detail`: its detail); whether
    it was off."""
    if detail.properties.get(CHANGE_DATA_FEED_PROPERTY, "false").lower() == "true":
        return False
    spark.sql(f"ALTER TABLE delta.`{qualified(spark, path)}` SET TBLPROPERTIES "
              f"('{CHANGE_DATA_FEED_PROPERTY}' = 'true')")
    return True


def with_deleted(schema: T.StructType, *, name: str = DELETED) -> T.StructType:
    """A ``--deletes soft`` table's columns: `schema`'s and its flag `name` (`DELETED`)."""
    return T.StructType([*schema.fields, T.StructField(name, T.BooleanType(), True)])


def check_dead_letter_table(spark: SparkSession, path: str) -> None:
    """Refuse a dead-letter path that holds something else than a dead-letter table.

    Raises:
        JobError: naming what is there.
    """
    if not path_exists(spark, path, empty_is_absent=True):
        return
    if not DeltaTable.isDeltaTable(spark, path):
        raise not_a_dead_letter_table(path)
    columns = DeltaTable.forPath(spark, path).toDF().columns
    if columns != list(DEAD_LETTER_COLUMNS):
        raise JobError(f"the Delta table at {path} is not a dead-letter table: its columns are "
                       f"{', '.join(columns)}, not {', '.join(DEAD_LETTER_COLUMNS)}")


def evolve(spark: SparkSession, path: str, *, evolution: Evolution,
           subject: SubjectVersions) -> None:
    """Give the table the latest version's columns in one commit: new columns hold their
    default in every existing row (as TiDB shows them after ``ADD COLUMN ... DEFAULT``),
    dropped columns go, widened ones are cast. The whole table is rewritten once (Delta's
    ``overwriteSchema``), so a crash leaves the old table or the new one, never a mix."""
    rows = evolved(DeltaTable.forPath(spark, path).toDF(), evolution=evolution,
                   subject=subject)
    rows.write.format("delta").mode("overwrite").option("overwriteSchema", "true").save(path)


def evolved(rows: DataFrame, *, evolution: Evolution, subject: SubjectVersions) -> DataFrame:
    """`rows` (a table's) with the latest version's columns (`evolve`'s rows, or a fresh read's
    of a table the apply has not evolved yet)."""
    if evolution.added:
        rows = rows.crossJoin(F.broadcast(defaults(rows.sparkSession, subject,
                                                   names=evolution.added)))
    return rows.select(*[F.col(f"`{f.name}`").cast(f.dataType).alias(f.name)
                         for f in evolution.target.fields])


@contextmanager
def idempotent(spark: SparkSession, *, app_id: str, batch_id: int) -> Iterator[None]:
    """The MERGEs run inside carry (`app_id`, `batch_id`): Delta skips one whose table has
    recorded that pair."""
    spark.conf.set(_TXN_APP_ID, app_id)
    spark.conf.set(_TXN_VERSION, str(batch_id))
    try:
        yield
    finally:
        spark.conf.unset(_TXN_APP_ID)
        spark.conf.unset(_TXN_VERSION)


def merge_changes(spark: SparkSession, path: str, *, changes: DataFrame,
                  key_columns: list[str], columns: list[str], app_id: str,
                  batch_id: int, ordered: bool = False, soft: bool = False
                  ) -> dict[str, int] | None:
    """MERGE the last change per key (`merge.clauses`: in offset or commit order; deletes remove the
    row or, `soft`, set its `DELETED`). Skipped by Delta when this (app id, batch id) is
    already in the table's log.

    Returns:
        the MERGE's counts under Delta's ``operationMetrics`` names
        (``numTargetRowsInserted``, ``...Updated``, ``...Deleted``), as ``execute()`` returns
        them (no history read); None when Delta skipped the batch.
    """
    assigned = merge.values(columns, soft=soft)
    on = merge.key_on(key_columns)
    with idempotent(spark, app_id=app_id, batch_id=batch_id):
        builder = DeltaTable.forPath(spark, path).alias("t").merge(changes.alias("s"), on)
        counts = merge.clauses(builder, assigned, ordered=ordered,
                               soft=soft).execute().collect()
    return _counts(counts)


def merge_history(spark: SparkSession, path: str, *, changes: DataFrame, key_columns: list[str],
                  columns: list[str], app_id: str, batch_id: int) -> dict[str, int] | None:
    """MERGE a batch into a ``--history`` table (`history.changed_versions`): new versions
    inserted, the spans that changed updated; skipped by Delta like `merge_changes`."""
    table = DeltaTable.forPath(spark, path)
    values = [c for c in columns if c not in history.HISTORY_COLUMNS]
    source = history.changed_versions(changes, table.toDF(), keys=key_columns, values=values)
    on = history.merge_on(key_columns)
    with idempotent(spark, app_id=app_id, batch_id=batch_id):
        counts = history.history_clauses(table.alias("t").merge(source.alias("s"), on),
                                         columns).execute().collect()
    return _counts(counts)


def _counts(counts: list[Any]) -> dict[str, int] | None:
    """A MERGE's counts (None: Delta skipped it)."""
    if not counts:
        return None
    row = counts[0]
    return {"numTargetRowsInserted": int(row["num_inserted_rows"]),
            "numTargetRowsUpdated": int(row["num_updated_rows"]),
            "numTargetRowsDeleted": int(row["num_deleted_rows"])}


def committed_version(spark: SparkSession, path: str) -> int:
    """The table's version as this driver last saw it: after its own commit, that commit's.
    Read from Delta's cached snapshot (``DeltaLog.unsafeVolatileSnapshot``), which runs no
    Spark job, where ``history(1)`` runs one per call."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    log = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(
        spark._jsparkSession, path)  # type: ignore[attr-defined]
    return int(log.unsafeVolatileSnapshot().version())


def append_changes(df: DataFrame, path: str, *, app_id: str, batch_id: int) -> None:
    """Append rows (a keyless table's changes, dead letters), once per (app id, batch id)."""
    (df.write.format("delta").mode("append").option("txnAppId", app_id)
     .option("txnVersion", str(batch_id)).save(path))
