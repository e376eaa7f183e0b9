"""The fresh read (docs/streaming.md, "Reading fresh"): a typed table of a ``--changelog`` stream as
of the newest landed micro-batch, in one query: the table (as the apply last left it) with the
changes it has not applied yet, decided exactly as the table's next MERGE will decide them (the
same clauses, evaluated as a query: `merge.MergeResult`), so the answer is the table the apply
will commit, row for row, before it commits it.

A reader pins both tables first: the changelog's newest version, then the typed table's
snapshot and the batch it applied (its ``txnVersion`` in that snapshot). The pending changes are
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
from spark_jobs.jobs.table_writer import columns_for, table_app_id
from spark_jobs.settings.config import Deletes, Mode, StreamConfig
from spark_jobs.settings.tables import PathTemplate
from spark_jobs.sinks import changelog, delta, history, merge, ordering
from spark_jobs.sinks.columns import plan_evolution, table_schema
from spark_jobs.sources.files import path_exists

__all__ = ["FreshSource", "fresh_read", "fresh_view"]


@dataclass(frozen=True, slots=True)
class FreshSource:
    """Where the fresh read finds the table's schemas (a `SchemaSource`)."""

    topic: str = ""
    service_url: str | None = None
    registry_url: str | None = None


def _stream_config(spark: SparkSession, path: str, *, source: FreshSource, topic: str
                   ) -> StreamConfig:
    """The stream's settings that decide its MERGEs, from the changelog's properties."""
    props = changelog.properties(spark, path)
    missing = [name for name in (changelog.APP_ID_PROPERTY, *changelog.OPTIONS)
               if name not in props]
    if missing:
        raise JobError(f"the Delta table at {path} is not a changelog of flatavro's stream (it "
                       f"lacks the properties {', '.join(missing)})")
    return StreamConfig(
        topic=topic, bootstrap_servers="", table_path="", checkpoint="",
        service_url=source.service_url, registry_url=source.registry_url,
        commit_order=props["flatavro.order"] == "commit",
        deletes=Deletes(props["flatavro.deletes"]), history=props["flatavro.history"] == "true",
        mode=Mode(props["flatavro.mode"]), table_template=PathTemplate("{topic}"))


def _snapshot(spark: SparkSession, path: str, *, app_id: str) -> tuple[int, int]:
    """The typed table's newest version and the batch it applied in it (-1: none)."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    snapshot = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(
        spark._jsparkSession, path).update(  # type: ignore[attr-defined]
        False, jvm.scala.Option.empty(), jvm.scala.Option.empty())
    found = snapshot.transactions().get(app_id)
    return int(snapshot.version()), int(found.get()) if found.isDefined() else -1


def fresh_read(spark: SparkSession, *, changelog_path: str, table: str,
               source: FreshSource) -> DataFrame:
    """The Delta table at `table` (a typed table of the stream whose changelog is at
    `changelog_path`) as of the changelog's newest batch; `source` finds its schemas.

    Raises:
        JobError: a path that is not such a table or changelog; a pending change that cannot be
            decoded in failfast mode (naming its partition and offset).
    """
    for what, path in (("--changelog", changelog_path), ("--table", table)):
        if not path_exists(spark, path, empty_is_absent=True) or not DeltaTable.isDeltaTable(
                spark, path):
            raise JobError(f"{what} {path}: no Delta table there")
    log_version = int(DeltaTable.forPath(spark, changelog_path).history(1).first()[0])  # type: ignore[index]
    topic = DeltaTable.forPath(spark, table).detail().first()["properties"].get(  # type: ignore[index]
        delta.TOPIC_PROPERTY)
    if topic is None:
        raise JobError(f"--table {table}: not a table of flatavro's stream (no "
                       f"{delta.TOPIC_PROPERTY} property)")
    config = _stream_config(spark, changelog_path, source=source, topic=topic)
    app_id = changelog.stream_app_id(spark, changelog_path)
    assert app_id is not None  # checked by _stream_config
    version, applied = _snapshot(spark, table, app_id=table_app_id(config, app_id=app_id,
                                                                   topic=topic))
    typed = spark.read.format("delta").option("versionAsOf", version).load(table)
    rows = (spark.read.format("delta").option("versionAsOf", log_version).load(changelog_path)
            .where((F.col(changelog.BATCH) > applied) & (F.col("topic") == topic))
            .select(*changelog.KAFKA_COLUMNS))
    schemas = resolve_schemas(config, topic)
    with triaged(with_frames(rows), schemas, mode=config.mode) as sorted_messages:
        return _merged(config, schemas, typed=typed, changes=sorted_messages.rows,
                       guard=ordering.guard_path(table))


def _merged(config: StreamConfig, schemas: TopicVersions, *, typed: DataFrame,
            changes: DataFrame, guard: str) -> DataFrame:
    """`typed` (the table's rows) after the MERGE (or append) the apply would make of
    `changes` (decoded)."""
    spark = typed.sparkSession
    want = columns_for(config, schemas, columns=table_schema(spark, schemas))
    evolution = plan_evolution(typed.schema, want, subject=schemas.value.subject)
    if evolution:
        typed = delta.evolved(typed, evolution=evolution, subject=schemas.value)
    columns = [f.name for f in want.fields]
    typed = typed.select(*[F.col(f"`{c}`") for c in columns])
    if schemas.key is None:
        return typed.unionByName(changes.select(*[F.col(f"`{c}`") for c in columns]))
    keys = schemas.key.field_names()
    result = merge.MergeResult()
    soft = config.deletes is Deletes.SOFT
    if config.history:
        values = [c for c in columns if c not in history.HISTORY_COLUMNS]
        source = history.changed_versions(changes, typed, keys=keys, values=values)
        history.history_clauses(result, columns)
        return result.rows(typed, source, on=history.merge_on(keys), columns=columns)
    ordered = config.commit_order and ordered_by_commit(schemas)
    if not ordered:
        source = last_change_per_key(changes, keys)
    elif soft:
        source = in_commit_order(changes, keys, bound_row=[c for c in columns if c != DELETED]
                                 ).withColumn(TOMBSTONE, F.lit(None).cast(T.LongType()))
    else:
        winners = in_commit_order(changes, keys)
        source = (ordering.tombstones_joined(winners, ordering.newest(
            spark.read.format("delta").load(guard), keys=keys), keys=keys)
            if path_exists(spark, guard, empty_is_absent=True)
            else winners.withColumn(TOMBSTONE, F.lit(None).cast(T.LongType())))
    merge.clauses(result, merge.values(columns, soft=soft), ordered=ordered, soft=soft)
    return result.rows(typed, source, on=merge.key_on(keys), columns=columns)


def fresh_view(spark: SparkSession, name: str, *, changelog_path: str, table: str,
               source: FreshSource) -> DataFrame:
    """`fresh_read` as the session's temporary view `name` (for SQL); the DataFrame."""
    rows = fresh_read(spark, changelog_path=changelog_path, table=table, source=source)
    rows.createOrReplaceTempView(name)
    return rows
