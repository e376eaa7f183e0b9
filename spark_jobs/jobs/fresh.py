"""The fresh read (docs/streaming.md, "Reading fresh"): a typed table of a ``--changelog`` stream
(Delta or Iceberg) as of the newest landed micro-batch, in one query: the table (as the apply
last left it) with the changes it has not applied yet, decided exactly as the table's next MERGE
will decide them (the same clauses, evaluated as a query: `merge.MergeResult`), so the answer is
the table the apply will commit, row for row, before it commits it.

A reader pins both tables first: the changelog's newest version, then the typed table's
snapshot and the batch it applied in it (Delta: its ``txnVersion``; Iceberg: the batch its
snapshots name). The pending changes are
the changelog's rows of the table's topic after that batch. Nothing is written.
"""

from __future__ import annotations

from dataclasses import dataclass

from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from spark_jobs.decoding.bad_messages import triaged
from spark_jobs.decoding.registry import resolve_schemas
from spark_jobs.decoding.schemas import TopicVersions
from spark_jobs.decoding.transforms import (
    DELETED,
    TOMBSTONE,
    in_commit_order,
    last_change_per_key,
    ordered_by_commit,
    with_frames,
)
from spark_jobs.errors import JobError
from spark_jobs.jobs.table_writer import columns_for
from spark_jobs.settings.config import Deletes, Mode, StreamConfig, TableFormat
from spark_jobs.settings.iceberg import IcebergCatalog
from spark_jobs.settings.tables import PathTemplate
from spark_jobs.sinks import changelog, delta, history, iceberg, iceberg_guard, merge, ordering
from spark_jobs.sinks.columns import plan_evolution, table_schema
from spark_jobs.sources.files import path_exists

__all__ = ["FreshSource", "fresh_read", "fresh_view"]


@dataclass(frozen=True, slots=True)
class FreshSource:
    """Where the fresh read finds the table's schemas (a `SchemaSource`)."""

    topic: str = ""
    service_url: str | None = None
    registry_url: str | None = None


@dataclass(frozen=True, slots=True)
class _Typed:
    """A typed table pinned for the read: its rows at one snapshot, the batch it applied in
    that snapshot, its topic, and its tombstones (None: no guard)."""

    rows: DataFrame
    applied: int
    topic: str
    guard: DataFrame | None


def _stream_config(log_table: changelog.Changelog, *, source: FreshSource,
                   catalog: IcebergCatalog | None) -> StreamConfig:
    """The stream's settings that decide its MERGEs, from the changelog's properties."""
    props = log_table.properties()
    missing = [name for name in (changelog.APP_ID_PROPERTY, *changelog.OPTIONS)
               if name not in props]
    if missing:
        raise JobError(f"the table {log_table.where} is not a changelog of flatavro's stream "
                       f"(it lacks the properties {', '.join(missing)})")
    return StreamConfig(
        topic="", bootstrap_servers="", table_path="", checkpoint="",
        service_url=source.service_url, registry_url=source.registry_url,
        commit_order=props["flatavro.order"] == "commit",
        deletes=Deletes(props["flatavro.deletes"]), history=props["flatavro.history"] == "true",
        mode=Mode(props["flatavro.mode"]), table_template=PathTemplate("{topic}"),
        table_format=TableFormat.DELTA if catalog is None else TableFormat.ICEBERG,
        iceberg=catalog)


def _delta_table(spark: SparkSession, path: str, *, app_id: str) -> _Typed:
    if not path_exists(spark, path, empty_is_absent=True) or not DeltaTable.isDeltaTable(
            spark, path):
        raise JobError(f"--table {path}: no Delta table there")
    row = DeltaTable.forPath(spark, path).detail().select("properties").first()
    topic = (row[0] or {}).get(delta.TOPIC_PROPERTY) if row is not None else None
    if topic is None:
        raise JobError(f"--table {path}: not a table of flatavro's stream (no "
                       f"{delta.TOPIC_PROPERTY} property)")
    version, applied = changelog.txn_version(spark, path, app_id=f"{app_id}-{topic}")
    guard = ordering.guard_path(path)
    return _Typed(spark.read.format("delta").option("versionAsOf", version).load(path), applied,
                  topic, spark.read.format("delta").load(guard)
                  if path_exists(spark, guard, empty_is_absent=True) else None)


def _iceberg_table(spark: SparkSession, name: str, *, app_id: str) -> _Typed:
    if not iceberg.exists(spark, name):
        raise JobError(f"--table {name}: the catalog has no such table")
    topic = iceberg.properties(spark, name).get(iceberg.TOPIC_PROPERTY)
    if topic is None:
        raise JobError(f"--table {name}: not a table of flatavro's stream (no "
                       f"{iceberg.TOPIC_PROPERTY} property)")
    ident = iceberg.identifier(name)
    snapshots = spark.sql(f"SELECT snapshot_id, summary FROM {ident}.snapshots ORDER BY "
                          f"committed_at").collect()
    applied = max((int(r[1][iceberg.BATCH_ID]) for r in snapshots
                   if (r[1] or {}).get(iceberg.APP_ID) == f"{app_id}-{topic}"), default=-1)
    rows = (spark.read.option("snapshot-id", int(snapshots[-1][0])).table(ident) if snapshots
            else spark.table(ident))
    guard = iceberg_guard.guard_name(name)
    return _Typed(rows, applied, topic, spark.table(iceberg.identifier(guard))
                  if iceberg.exists(spark, guard) else None)


def fresh_read(spark: SparkSession, *, changelog_path: str, table: str, source: FreshSource,
               catalog: IcebergCatalog | None = None) -> DataFrame:
    """The typed table `table` of the stream whose changelog is `changelog_path` (Delta: their
    paths; Iceberg, with its `catalog`: their names, ``namespace.table``) as of the
    changelog's newest batch; `source` finds its schemas.

    Raises:
        JobError: a place that is not such a table or changelog; a pending change that cannot
            be decoded in failfast mode (naming its partition and offset).
    """
    if catalog is None:
        if not path_exists(spark, changelog_path, empty_is_absent=True) or (
                not DeltaTable.isDeltaTable(spark, changelog_path)):
            raise JobError(f"--changelog {changelog_path}: no Delta table there")
        log_table: changelog.Changelog = changelog.DeltaChangelog(spark, changelog_path)
    else:
        spark = iceberg.use_catalog(spark.newSession(), catalog)
        if not iceberg.exists(spark, changelog_path):
            raise JobError(f"--changelog {changelog_path}: the catalog has no such table")
        config = StreamConfig(topic="", bootstrap_servers="", table_path="", checkpoint="",
                              iceberg=catalog, table_format=TableFormat.ICEBERG)
        log_table = changelog.IcebergChangelog(spark, config, name=changelog_path)
        spark = log_table.spark
    config = _stream_config(log_table, source=source, catalog=catalog)
    rows = log_table.read(pinned=True)  # first: what the typed table has is no older
    app_id = log_table.stream_app_id()
    assert app_id is not None  # checked by _stream_config
    typed = (_delta_table(spark, table, app_id=app_id) if catalog is None
             else _iceberg_table(spark, table, app_id=app_id))
    pending = rows.where((F.col(changelog.BATCH) > typed.applied)
                         & (F.col("topic") == typed.topic)).select(*changelog.KAFKA_COLUMNS)
    schemas = resolve_schemas(config, typed.topic)
    with triaged(with_frames(pending, schemas.framing), schemas,
                 mode=config.mode) as sorted_messages:
        return _merged(config, schemas, typed=typed, changes=sorted_messages.rows)


def _merged(config: StreamConfig, schemas: TopicVersions, *, typed: _Typed,
            changes: DataFrame) -> DataFrame:
    """`typed`'s rows after the MERGE (or append) the apply would make of `changes`
    (decoded)."""
    spark = typed.rows.sparkSession
    is_iceberg = config.table_format is TableFormat.ICEBERG
    deleted, names = (iceberg.DELETED, iceberg.HISTORY) if is_iceberg else (DELETED,
                                                                            history.DELTA)
    want = columns_for(config, schemas, columns=table_schema(spark, schemas), deleted=deleted,
                       names=names)
    if is_iceberg:
        want = iceberg.iceberg_types(want)
    # A change log: Kafka's partition as the format names it (Iceberg's table, also one an
    # earlier version made with Delta's name that the apply has not opened since).
    rows, changes = ((typed.rows, changes) if schemas.key is not None
                     else (names.log_rows(typed.rows), names.log_rows(changes)))
    evolution = plan_evolution(rows.schema, want, subject=schemas.value.subject,
                               widens=iceberg.widens if is_iceberg else None)
    if evolution:
        rows = delta.evolved(rows, evolution=evolution, subject=schemas.value)
    columns = [f.name for f in want.fields]
    rows = rows.select(*[F.col(f"`{c}`") for c in columns])
    changes = changes.select(*[F.col(f"`{c}`").cast(want[c].dataType).alias(c)
                               if c in want.fieldNames() else F.col(f"`{c}`")
                               for c in changes.columns])
    if schemas.key is None:
        return rows.unionByName(changes.select(*[F.col(f"`{c}`") for c in columns]))
    keys = schemas.key.field_names()
    result = merge.MergeResult()
    soft = config.deletes is Deletes.SOFT
    if config.history:
        values = [c for c in columns if c not in names.columns]
        source = history.changed_versions(changes, rows, keys=keys, values=values, names=names)
        history.history_clauses(result, columns, names=names)
        return result.rows(rows, source, on=history.merge_on(keys), columns=columns)
    ordered = config.commit_order and ordered_by_commit(schemas)
    no_tombstone = F.lit(None).cast(T.LongType())
    if not ordered:
        source = last_change_per_key(changes, keys)
    elif soft:
        source = in_commit_order(changes, keys, bound_row=[c for c in columns if c != deleted]
                                 ).withColumn(TOMBSTONE, no_tombstone)
    else:
        winners = in_commit_order(changes, keys)
        source = (winners.withColumn(TOMBSTONE, no_tombstone) if typed.guard is None else
                  ordering.tombstones_joined(winners, ordering.newest(typed.guard, keys=keys),
                                             keys=keys))
    merge.clauses(result, merge.values(columns, soft=soft, deleted=deleted), ordered=ordered,
                  soft=soft, deleted=deleted)
    return result.rows(rows, source, on=merge.key_on(keys), columns=columns)


def fresh_view(spark: SparkSession, name: str, *, changelog_path: str, table: str,
               source: FreshSource, catalog: IcebergCatalog | None = None) -> DataFrame:
    """`fresh_read` as the session's temporary view `name` (for SQL); the DataFrame."""
    rows = fresh_read(spark, changelog_path=changelog_path, table=table, source=source,
                      catalog=catalog)
    rows.createOrReplaceTempView(name)
    return rows
