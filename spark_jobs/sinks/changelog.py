"""The database's changelog (docs/streaming.md, "Land first, merge behind"): one Delta table that
every micro-batch of a whole-database stream appends all its topics' messages to, in one commit,
before any typed table is touched. The typed tables are MERGEd from it behind
(`spark_jobs.jobs.apply`), and a reader gets any table as of the newest changelog commit with
`spark_jobs.fresh`.

A row is a Kafka message as it came (the Confluent frames of key and value, undecoded: the append
reads no schema and no table) with what the apply and the fresh read select on: the micro-batch
(`BATCH`), the table it goes to, the operation, the schema ids of key and value, and when it
landed. Every append carries (the changelog's app id, the batch id) as Delta's ``txnAppId`` /
``txnVersion``, so a batch Spark re-runs after a crash is skipped when the changelog has it.

The batch is also each typed table's watermark: a typed table's MERGE carries the newest batch it
applied as its ``txnVersion`` (`applied`), so the changes a table has not applied are the
changelog's rows of its topic with a larger batch, after any crash.
"""

from __future__ import annotations

from delta.tables import DeltaTable
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from service.core.framing import HEADER_SIZE, MAGIC_BYTE
from spark_jobs.errors import JobError
from spark_jobs.sources.files import path_exists, qualified

__all__ = ["APP_ID_PROPERTY", "BATCH", "COLUMNS", "KAFKA_COLUMNS", "LANDED", "OPTIONS", "TABLE",
           "properties",
           "applied", "append", "changelog_app_id", "create_or_check", "expire", "pending",
           "schema_id", "stream_app_id"]

BATCH = "_batch"
"""The micro-batch that landed the row (the stream's batch id)."""

TABLE = "_table"
"""``database.table`` of the row's topic, as its value schema names it."""

LANDED = "_landed"
"""When the row's micro-batch appended it (the driver's clock)."""

APP_ID_PROPERTY = "flatavro.app_id"
"""Table property: the stream's app id (a typed table's Delta app id derives from it)."""

KAFKA_COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp")
"""The Kafka source's columns, kept as they came."""

COLUMNS = T.StructType([
    T.StructField(BATCH, T.LongType(), False),
    T.StructField(TABLE, T.StringType(), False),
    T.StructField("topic", T.StringType(), False),
    T.StructField("partition", T.IntegerType(), False),
    T.StructField("offset", T.LongType(), False),
    T.StructField("timestamp", T.TimestampType(), True),
    T.StructField("_op", T.StringType(), False),
    T.StructField("_key_schema_id", T.IntegerType(), True),
    T.StructField("_value_schema_id", T.IntegerType(), True),
    T.StructField("key", T.BinaryType(), True),
    T.StructField("value", T.BinaryType(), True),
    T.StructField(LANDED, T.TimestampType(), False)])
"""The changelog's columns; the batch first, so that Delta's file statistics (the first 32
columns) let a read of a batch range skip every other file."""


def changelog_app_id(app_id: str) -> str:
    """The changelog's Delta app id for the stream `app_id`."""
    return f"{app_id}-changelog"


def schema_id(column: str) -> Column:
    """The schema id of a Confluent frame in `column` (null: absent, short or another magic
    byte; the apply's decode names the fault then)."""
    raw = F.col(column)
    return F.when((F.length(raw) >= HEADER_SIZE) & (F.substring(raw, 1, 1) == F.lit(
        bytearray([MAGIC_BYTE]))), F.conv(F.hex(F.substring(raw, 2, 4)), 16, 10).cast("int"))


def create_or_check(spark: SparkSession, path: str, *, app_id: str,
                    options: dict[str, str]) -> None:
    """The changelog at `path`, made when absent, for the stream `app_id`; `options` (how the
    stream applies its tables: `OPTIONS`) kept as its properties, for the fresh read.

    Raises:
        JobError: the path holds something else than a changelog, or another stream's.
    """
    if not path_exists(spark, path, empty_is_absent=True):
        builder = (DeltaTable.createIfNotExists(spark).location(qualified(spark, path))
                   .addColumns(COLUMNS).property(APP_ID_PROPERTY, app_id))
        for name, value in options.items():
            builder = builder.property(name, value)
        builder.execute()
        return
    if not DeltaTable.isDeltaTable(spark, path):
        raise JobError(f"--changelog {path} holds files that are no Delta table: give the "
                       f"changelog a place of its own")
    owner = stream_app_id(spark, path)
    if owner != app_id:
        raise JobError(f"--changelog {path} is the changelog of another stream (app id "
                       f"{owner}, this checkpoint's is {app_id}): one changelog per stream")
    have = [f.name for f in DeltaTable.forPath(spark, path).toDF().schema.fields]
    if have != COLUMNS.fieldNames():
        raise JobError(f"--changelog {path} has the columns {', '.join(have)}, not a "
                       f"changelog's ({', '.join(COLUMNS.fieldNames())})")
    if properties(spark, path) != {**properties(spark, path), **options}:
        assigned = ", ".join(f"'{k}' = '{v}'" for k, v in sorted(options.items()))
        spark.sql(f"ALTER TABLE delta.`{qualified(spark, path)}` SET TBLPROPERTIES ({assigned})")


OPTIONS = ("flatavro.order", "flatavro.deletes", "flatavro.history", "flatavro.mode")
"""The changelog's properties that say how its stream applies the typed tables."""


def properties(spark: SparkSession, path: str) -> dict[str, str]:
    """The changelog's table properties."""
    row = DeltaTable.forPath(spark, path).detail().select("properties").first()
    assert row is not None  # a Delta table's detail is one row
    return dict(row[0] or {})


def stream_app_id(spark: SparkSession, path: str) -> str | None:
    """The app id of the stream whose changelog is at `path`."""
    return properties(spark, path).get(APP_ID_PROPERTY)


def append(batch: DataFrame, path: str, *, tables: dict[str, str], app_id: str,
           batch_id: int) -> None:
    """Append micro-batch `batch_id` (the Kafka source's rows; `tables`: each topic's
    ``database.table``) in one commit, skipped when the changelog has that batch."""
    names = F.create_map(*[F.lit(x) for pair in sorted(tables.items()) for x in pair])
    rows = batch.select(
        F.lit(batch_id).cast("long").alias(BATCH), names[F.col("topic")].alias(TABLE),
        "topic", "partition", "offset", "timestamp",
        F.when(F.col("value").isNull(), F.lit("delete")).otherwise(F.lit("upsert")).alias("_op"),
        schema_id("key").alias("_key_schema_id"), schema_id("value").alias("_value_schema_id"),
        "key", "value", F.current_timestamp().alias(LANDED))
    (rows.write.format("delta").mode("append").option("txnAppId", changelog_app_id(app_id))
     .option("txnVersion", str(batch_id)).save(path))


def applied(spark: SparkSession, path: str, *, app_id: str) -> int:
    """The newest batch the Delta table at `path` recorded for `app_id` (its ``txnVersion``), -1
    when none: for the changelog, the newest batch it landed; for a typed table, the newest
    batch it applied. Read from the table's newest snapshot (no Spark job)."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    log = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(
        spark._jsparkSession, path)  # type: ignore[attr-defined]
    found = log.update(False, jvm.scala.Option.empty(), jvm.scala.Option.empty()
                       ).transactions().get(app_id)
    return int(found.get()) if found.isDefined() else -1


def pending(spark: SparkSession, path: str, *, topic: str, after: int,
            upto: int | None = None) -> DataFrame:
    """The changelog's rows of `topic` from batches after `after` (up to `upto`)."""
    rows = spark.read.format("delta").load(path).where(
        (F.col(BATCH) > after) & (F.col("topic") == topic))
    return rows if upto is None else rows.where(F.col(BATCH) <= upto)


def expire(spark: SparkSession, path: str, *, applied_by_topic: dict[str, int],
           retention_ms: int, now_ms: int) -> int:
    """Remove the rows older than `retention_ms` before `now_ms` that their topic's table has
    applied (`applied_by_topic`: each topic's newest applied batch); a row of a topic not in it,
    or of a batch its table has not applied, stays whatever its age. One commit (none when
    nothing goes); the count of rows removed."""
    if not applied_by_topic:
        return 0
    done = None
    for topic, batch in sorted(applied_by_topic.items()):
        mine = (F.col("topic") == topic) & (F.col(BATCH) <= batch)
        done = mine if done is None else done | mine
    assert done is not None
    gone = (F.col(LANDED) < F.timestamp_millis(F.lit(now_ms - retention_ms))) & done
    table = DeltaTable.forPath(spark, path)
    count = table.toDF().where(gone).count()
    if count:
        table.delete(gone)
    return count
