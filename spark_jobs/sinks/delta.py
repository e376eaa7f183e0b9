"""The Delta table a stream keeps equal to the TiDB table: its schema (what `decode` gives for
the topic's latest version), the checks before a stream writes to a path, schema evolution in
one commit, MERGE by key and keyless append, each idempotent per micro-batch.

Idempotence uses Delta's own idempotent writes: a write carries (app id, batch id) and Delta
skips it when the table already recorded that batch for that app id (``txnAppId`` /
``txnVersion``; the session settings below for MERGE).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from delta.tables import DeltaTable
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.avro.functions import from_avro

from spark_jobs.decoding.schemas import SubjectVersions, TopicVersions, for_spark
from spark_jobs.decoding.transforms import (
    BOOKKEEPING,
    BOUND,
    BOUND_ROW,
    COMMIT_TS,
    DELETED,
    HAS_DELETE,
    PHYSICAL_SHIFT,
    PHYSICAL_TIME,
    TOMBSTONE,
    decode,
    with_frames,
)
from spark_jobs.errors import JobError, not_a_dead_letter_table, not_a_delta_table
from spark_jobs.settings.config import Mode
from spark_jobs.sinks.upkeep import DELETION_VECTORS_PROPERTY
from spark_jobs.sources.files import path_exists, qualified

__all__ = ["Evolution", "table_schema", "version_schemas", "plan_evolution", "check_table",
           "create_table", "evolve", "merge_changes", "append_changes", "TOPIC_PROPERTY",
           "KAFKA_SCHEMA", "check_dead_letter_table", "idempotent", "with_deleted",
           "CHANGE_DATA_FEED_PROPERTY", "enable_change_data_feed"]

TOPIC_PROPERTY = "flatavro.topic"
"""Table property naming the topic a stream applies to the table."""

KAFKA_SCHEMA = T.StructType([
    T.StructField("key", T.BinaryType()), T.StructField("value", T.BinaryType()),
    T.StructField("topic", T.StringType()), T.StructField("partition", T.IntegerType()),
    T.StructField("offset", T.LongType()), T.StructField("timestamp", T.TimestampType())])
"""The Kafka source's columns (what `decode` reads)."""

DEAD_LETTER_COLUMNS = ("key", "value", "partition", "offset", "reason")

_TXN_APP_ID = "spark.databricks.delta.write.txnAppId"
_TXN_VERSION = "spark.databricks.delta.write.txnVersion"

# Integral and floating types in widening order; a later one holds every value of an earlier.
_INTEGRAL = ("tinyint", "smallint", "int", "bigint")
_INTEGRAL_DIGITS = {"tinyint": 3, "smallint": 5, "int": 10, "bigint": 20}


def table_schema(spark: SparkSession, schemas: TopicVersions) -> T.StructType:
    """The table's columns for the topic's latest version: the value's columns as `decode`
    types them; a keyless topic (no key schema) also keeps `BOOKKEEPING` (a change log).
    Every column nullable (Delta writes them so)."""
    empty = with_frames(spark.createDataFrame([], KAFKA_SCHEMA))
    decoded = decode(empty, schemas, mode=Mode.FAILFAST)
    names = schemas.value.field_names() + (list(BOOKKEEPING) if schemas.key is None else [])
    return T.StructType([T.StructField(f.name, f.dataType, True)
                         for f in decoded.select(*names).schema.fields])


def version_schemas(spark: SparkSession, schemas: TopicVersions) -> dict[int, T.StructType]:
    """The table's columns as each registered value version (by schema id) would have them."""
    return {schema_id: table_schema(spark, TopicVersions(
        schemas.topic, schemas.key, SubjectVersions(schemas.value.subject, text, schema_id,
                                                    {schema_id: text})))
        for schema_id, text in schemas.value.by_id.items()}


def _describe(schema: T.StructType) -> dict[str, str]:
    return {f.name: f.dataType.simpleString() for f in schema.fields}


def _difference(have: T.StructType, want: T.StructType) -> str:
    old, new = _describe(have), _describe(want)
    parts = [f"lacks {', '.join(n for n in new if n not in old)}"
             if any(n not in old for n in new) else "",
             f"has {', '.join(n for n in old if n not in new)} that the topic has not"
             if any(n not in new for n in old) else ""]
    parts += [f"{n} is {old[n]} where the topic has {new[n]}" for n in new
              if n in old and old[n] != new[n]]
    return "; ".join(p for p in parts if p)


@dataclass(frozen=True, slots=True)
class Evolution:
    """How the table's columns must change to hold the latest version's rows."""

    added: tuple[str, ...]
    removed: tuple[str, ...]
    widened: tuple[str, ...]
    target: T.StructType

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.widened)

    def __str__(self) -> str:
        parts = [f"added {', '.join(self.added)}" if self.added else "",
                 f"dropped {', '.join(self.removed)}" if self.removed else "",
                 f"widened {', '.join(self.widened)}" if self.widened else ""]
        return "; ".join(p for p in parts if p)


def _widens(old: T.DataType, new: T.DataType) -> bool:
    """Every value of `old` is a value of `new` (TiDB's MODIFY COLUMN to a wider type)."""
    o, n = old.simpleString(), new.simpleString()
    if o in _INTEGRAL and n in _INTEGRAL:
        return _INTEGRAL.index(o) <= _INTEGRAL.index(n)
    if o == "float" and n == "double":
        return True
    if isinstance(new, T.DecimalType):
        if isinstance(old, T.DecimalType):
            return (new.scale >= old.scale
                    and new.precision - new.scale >= old.precision - old.scale)
        return o in _INTEGRAL_DIGITS and new.precision - new.scale >= _INTEGRAL_DIGITS[o]
    return o == "date" and n in ("timestamp", "timestamp_ntz")


def plan_evolution(have: T.StructType, want: T.StructType, *, subject: str) -> Evolution:
    """What changes the table needs (empty when none).

    Raises:
        JobError: a column's type changed in a way that is not a widening (naming the column,
            both types and what to do).
    """
    old = {f.name: f.dataType for f in have.fields}
    new = {f.name: f.dataType for f in want.fields}
    for name, data_type in new.items():
        if name in old and old[name] != data_type and not _widens(old[name], data_type):
            raise JobError(
                f"column {name} changed from {old[name].simpleString()} to "
                f"{data_type.simpleString()} in the latest version of {subject}; a Delta "
                f"table cannot change a column that way in place (only widenings: a larger "
                f"integer, float to double, a wider decimal, date to timestamp). Stop the "
                f"stream, move the table aside and rebuild it (bulk_read --format delta "
                f"--materialize, then a new --checkpoint with --starting-offsets earliest: the "
                f"last change per key wins, so nothing is lost or doubled)")
    return Evolution(
        added=tuple(n for n in new if n not in old),
        removed=tuple(n for n in old if n not in new),
        widened=tuple(n for n in new if n in old and old[n] != new[n]), target=want)


def check_table(spark: SparkSession, path: str, *, topic: str,
                versions: dict[int, T.StructType], latest: T.StructType) -> bool:
    """Whether a Delta table for `topic` exists at `path` (False: nothing there yet).

    Raises:
        JobError: the path holds something else than a Delta table, a table of another topic,
            or a table whose columns match no registered version (naming the difference).
    """
    if not path_exists(spark, path, empty_is_absent=True):
        return False
    if not DeltaTable.isDeltaTable(spark, path):
        raise not_a_delta_table(path, topic=topic)
    table = DeltaTable.forPath(spark, path)
    detail = table.detail().select("properties").first()
    assert detail is not None  # a Delta table's detail is one row
    owner = detail[0].get(TOPIC_PROPERTY)
    if owner is not None and owner != topic:
        raise JobError(f"the Delta table at {path} mirrors topic {owner}, not {topic}")
    have = table.toDF().schema
    if not any(_describe(have) == _describe(v) for v in versions.values()):
        if (DELETED in _describe(have)) != (DELETED in _describe(latest)):
            made, asked = ("soft", "hard") if DELETED in _describe(have) else ("hard", "soft")
            raise JobError(f"the Delta table at {path} was made with --deletes {made} (its "
                           f"columns {'have' if made == 'soft' else 'lack'} {DELETED}), not "
                           f"--deletes {asked}: keep its mode, or rebuild it into a new path")
        raise JobError(f"the Delta table at {path} is not a table of topic {topic}: it "
                       f"{_difference(have, latest)} (compared with the latest version)")
    return True


CHANGE_DATA_FEED_PROPERTY = "delta.enableChangeDataFeed"
"""Table property: Delta records each commit's row changes for ``readChangeFeed``."""


def create_table(spark: SparkSession, path: str, *, topic: str, schema: T.StructType,
                 deletion_vectors: bool, change_data_feed: bool = False) -> None:
    """An empty Delta table with the topic's columns, the topic as a property, deletion
    vectors on or off (``delta.enableDeletionVectors``, explicit either way) and, when asked,
    Delta's Change Data Feed."""
    # The builder wants an absolute or scheme-qualified location.
    builder = DeltaTable.createIfNotExists(spark).location(qualified(spark, path)).addColumns(
        schema).property(TOPIC_PROPERTY, topic).property(
        DELETION_VECTORS_PROPERTY, str(deletion_vectors).lower())
    if change_data_feed:
        builder = builder.property(CHANGE_DATA_FEED_PROPERTY, "true")
    builder.execute()


def enable_change_data_feed(spark: SparkSession, path: str) -> bool:
    """Turn Delta's Change Data Feed on for an existing table; whether it was off."""
    detail = DeltaTable.forPath(spark, path).detail().select("properties").first()
    assert detail is not None
    if (detail[0] or {}).get(CHANGE_DATA_FEED_PROPERTY, "false").lower() == "true":
        return False
    spark.sql(f"ALTER TABLE delta.`{qualified(spark, path)}` SET TBLPROPERTIES "
              f"('{CHANGE_DATA_FEED_PROPERTY}' = 'true')")
    return True


def with_deleted(schema: T.StructType) -> T.StructType:
    """A ``--deletes soft`` table's columns: `schema`'s and `DELETED`."""
    return T.StructType([*schema.fields, T.StructField(DELETED, T.BooleanType(), True)])


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


def _defaults(spark: SparkSession, subject: SubjectVersions, *, names: tuple[str, ...]
              ) -> DataFrame:
    """One row: each named column's Avro default, typed as `from_avro` types the column (Avro's
    own schema resolution fills a field the writer lacks with the reader's default, so the
    value is what a message of the old version decodes to)."""
    schema = json.loads(for_spark(subject.latest))
    fields = [f for f in schema["fields"] if f["name"] in names]
    missing = [f["name"] for f in fields if "default" not in f]
    if missing:
        raise JobError(
            f"column(s) {', '.join(missing)} added to {subject.subject} without a default "
            f"(NOT NULL, no DEFAULT): the rows already in the table have no value the stream "
            f"can know; rebuild the table (bulk_read --format delta --materialize)")
    record = {"type": "record", "name": schema["name"], "namespace": schema.get("namespace", "")}
    reader = json.dumps(dict(record, fields=fields))
    value = from_avro(F.lit(bytearray()), json.dumps(dict(record, fields=[])),
                      {"avroSchema": reader, "mode": "FAILFAST"})
    return spark.range(1).select(value.alias("d")).select("d.*")


def evolve(spark: SparkSession, path: str, *, evolution: Evolution,
           subject: SubjectVersions) -> None:
    """Give the table the latest version's columns in one commit: new columns hold their
    default in every existing row (as TiDB shows them after ``ADD COLUMN ... DEFAULT``),
    dropped columns go, widened ones are cast. The whole table is rewritten once (Delta's
    ``overwriteSchema``), so a crash leaves the old table or the new one, never a mix."""
    rows = DeltaTable.forPath(spark, path).toDF()
    if evolution.added:
        rows = rows.crossJoin(F.broadcast(_defaults(spark, subject, names=evolution.added)))
    rows = rows.select(*[F.col(f"`{f.name}`").cast(f.dataType).alias(f.name)
                         for f in evolution.target.fields])
    rows.write.format("delta").mode("overwrite").option("overwriteSchema", "true").save(path)


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


def _clauses(builder: Any, values: dict[str, str | Column], *, ordered: bool, soft: bool
             ) -> Any:
    """The MERGE's clauses (docs/streaming.md, "Commit order" and "Deletes").

    In Kafka order the last change per key wins. In commit order the source is
    `transforms.in_commit_order` with `TOMBSTONE`: what the key's deletes removed is known to be
    no newer than ``m``, the highest of the row's commit ts, the tombstone's and the batch's
    `BOUND`. The key ends deleted when the batch deletes it and has no upsert at least that new;
    otherwise its upsert replaces the row only when newer than it, and fills an empty key only
    when no older than ``m``."""
    if not ordered:
        return _offset_clauses(builder, values, soft=soft)
    ts = f"`{COMMIT_TS}`"
    m = (f"greatest(coalesce(t.{ts}, -1), coalesce(s.{TOMBSTONE}, -1), "
         f"coalesce(s.{BOUND}, -1))")
    gone = f"(s.{HAS_DELETE} AND (s._op = 'delete' OR s.{ts} < {m}))"
    upsert = f"NOT {gone} AND s._op = 'upsert'"
    empty = f"greatest(coalesce(s.{TOMBSTONE}, -1), coalesce(s.{BOUND}, -1))"
    if not soft:
        return (builder.whenMatchedDelete(gone)
                .whenMatchedUpdate(f"{upsert} AND s.{ts} > coalesce(t.{ts}, -1)", values)
                .whenNotMatchedInsert(f"s._op = 'upsert' AND s.{ts} >= {empty}", values))
    deleted = f"`{DELETED}`"
    mark: dict[str, str | Column] = {deleted: F.lit(True), ts: F.expr(m),
                                     f"`{PHYSICAL_TIME}`": F.shiftright(F.expr(m),
                                                                        PHYSICAL_SHIFT)}
    # A soft-deleted row is its key's tombstone: its commit ts is what the delete removed,
    # which is the batch's upsert before the delete when that is newer than the row.
    back = f"(s.{ts} > t.{ts} OR (t.{deleted} AND s.{ts} >= t.{ts}))"
    removed = {**values, **{c: F.col(f"s.{BOUND_ROW}.{c}") for c in values if c != deleted},
               **mark}
    tomb = {**removed, ts: F.col(f"s.{BOUND}"),
            f"`{PHYSICAL_TIME}`": F.shiftright(F.col(f"s.{BOUND}"), PHYSICAL_SHIFT)}
    return (builder.whenMatchedUpdate(f"{gone} AND s.{BOUND} > coalesce(t.{ts}, -1)", removed)
            .whenMatchedUpdate(f"{gone} AND (NOT t.{deleted} OR {m} > t.{ts})", mark)
            .whenMatchedUpdate(f"{upsert} AND {back}", values)
            .whenNotMatchedInsert(f"s._op = 'upsert' AND s.{ts} >= {empty}", values)
            .whenNotMatchedInsert(f"s.{HAS_DELETE} AND s.{BOUND} IS NOT NULL", tomb))


def _offset_clauses(builder: Any, values: dict[str, str | Column], *, soft: bool) -> Any:
    """Kafka order: the source is the last change per key."""
    if soft:
        builder = builder.whenMatchedUpdate(f"s._op = 'delete' AND NOT t.`{DELETED}`",
                                            {f"`{DELETED}`": F.lit(True)})
    else:
        builder = builder.whenMatchedDelete("s._op = 'delete'")
    return (builder.whenMatchedUpdate("s._op = 'upsert'", values)
            .whenNotMatchedInsert("s._op = 'upsert'", values))


def merge_changes(spark: SparkSession, path: str, *, changes: DataFrame,
                  key_columns: list[str], columns: list[str], app_id: str,
                  batch_id: int, ordered: bool = False, soft: bool = False
                  ) -> dict[str, int] | None:
    """MERGE the last change per key (`_clauses`: in offset or commit order; deletes remove the
    row or, `soft`, set its `DELETED`). Skipped by Delta when this (app id, batch id) is
    already in the table's log.

    Returns:
        the MERGE's counts under Delta's ``operationMetrics`` names
        (``numTargetRowsInserted``, ``...Updated``, ``...Deleted``), as ``execute()`` returns
        them (no history read); None when Delta skipped the batch.
    """
    values: dict[str, str | Column] = {f"`{c}`": F.col(f"s.`{c}`") for c in columns
                                       if c != DELETED}
    if soft:
        values[f"`{DELETED}`"] = F.lit(False)
    on = " AND ".join(f"t.`{k}` <=> s.`{k}`" for k in key_columns)
    with idempotent(spark, app_id=app_id, batch_id=batch_id):
        builder = DeltaTable.forPath(spark, path).alias("t").merge(changes.alias("s"), on)
        counts = _clauses(builder, values, ordered=ordered, soft=soft).execute().collect()
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
