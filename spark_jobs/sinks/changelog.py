"""The database's changelog (docs/streaming.md, "Land first, merge behind"): one table (Delta at a
path, or Iceberg in the catalog, as the typed tables) that every micro-batch of a whole-database
stream appends all its topics' messages to, in one commit,
before any typed table is touched. The typed tables are MERGEd from it behind
(`spark_jobs.jobs.apply`), and a reader gets any table as of the newest changelog commit with
`spark_jobs.fresh`.

A row is a Kafka message as it came (the Confluent frames of key and value, undecoded: the append
reads no schema and no table) with what the apply and the fresh read select on: the micro-batch
(`BATCH`), the table it goes to, the operation, the schema ids of key and value, and when it
landed. Every append carries (the changelog's app id, the batch id), as Delta's ``txnAppId`` /
``txnVersion`` or in the Iceberg snapshot's summary, so a batch Spark re-runs after a crash is
skipped when the changelog has it.

The batch is also each typed table's watermark: a typed table's commit carries the newest batch
it applied the same way (`TableWriter.applied`), so the changes a table has not applied are the
changelog's rows of its topic with a larger batch, after any crash.
"""

from __future__ import annotations

from delta.tables import DeltaTable
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from service.core.framing import HEADER_SIZE, MAGIC_BYTE
from spark_jobs.errors import JobError
from spark_jobs.settings.config import StreamConfig, TableFormat
from spark_jobs.sinks import iceberg, upkeep
from spark_jobs.sinks.columns import KAFKA_SCHEMA
from spark_jobs.sources.files import path_exists, qualified

__all__ = ["APP_ID_PROPERTY", "BATCH", "COLUMNS", "Changelog", "DeltaChangelog",
           "IcebergChangelog", "KAFKA_COLUMNS", "LANDED", "OPTIONS", "TABLE", "changelog_app_id",
           "open_changelog", "schema_id", "txn_version"]

BATCH = "_batch"
"""The micro-batch that landed the row (the stream's batch id)."""

TABLE = "_table"
"""``database.table`` of the row's topic, as its value schema names it."""

LANDED = "_landed"
"""When the row's micro-batch appended it (the driver's clock)."""

APP_ID_PROPERTY = "flatavro.app_id"
"""Table property: the stream's app id (a typed table's Delta app id derives from it)."""

KAFKA_COLUMNS = tuple(KAFKA_SCHEMA.fieldNames())
"""The Kafka source's columns (`columns.KAFKA_SCHEMA`, what `decode` reads), kept as they came."""

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


OPTIONS = ("flatavro.order", "flatavro.deletes", "flatavro.history", "flatavro.mode")
"""The changelog's properties that say how its stream applies the typed tables."""


def changelog_app_id(app_id: str) -> str:
    """The changelog's app id for the stream `app_id`."""
    return f"{app_id}-changelog"


def schema_id(column: str) -> Column:
    """The schema id of a Confluent frame in `column` (null: absent, short or another magic
    byte; the apply's decode names the fault then). An AWS Glue frame (first byte ``0x03``)
    has no schema id either: its version UUID stays in the frame's bytes 2-17, and the number
    a driver gives a Glue version holds in that process only, so none is kept."""
    raw = F.col(column)
    return F.when((F.length(raw) >= HEADER_SIZE) & (F.substring(raw, 1, 1) == F.lit(
        bytearray([MAGIC_BYTE]))), F.conv(F.hex(F.substring(raw, 2, 4)), 16, 10).cast("int"))


def _rows(batch: DataFrame, *, tables: dict[str, str], batch_id: int) -> DataFrame:
    """The changelog rows of micro-batch `batch_id` (the Kafka source's rows; `tables`: each
    topic's ``database.table``)."""
    names = F.create_map(*[F.lit(x) for pair in sorted(tables.items()) for x in pair])
    return batch.select(
        F.lit(batch_id).cast("long").alias(BATCH), names[F.col("topic")].alias(TABLE),
        "topic", "partition", "offset", "timestamp",
        F.when(F.col("value").isNull(), F.lit("delete")).otherwise(F.lit("upsert")).alias("_op"),
        schema_id("key").alias("_key_schema_id"), schema_id("value").alias("_value_schema_id"),
        "key", "value", F.current_timestamp().alias(LANDED))


def txn_version(spark: SparkSession, path: str, *, app_id: str) -> tuple[int, int]:
    """The Delta table at `path`'s newest version, and the newest batch it recorded for `app_id`
    in it (its ``txnVersion``; -1 when none). Read from the table's log (no Spark job)."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    snapshot = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(
        spark._jsparkSession, path).update(  # type: ignore[attr-defined]
        False, jvm.scala.Option.empty(), jvm.scala.Option.empty())
    found = snapshot.transactions().get(app_id)
    return int(snapshot.version()), int(found.get()) if found.isDefined() else -1


class Changelog:
    """The changelog of one stream, whatever its format: `DeltaChangelog`, `IcebergChangelog`.
    `where` is its path or its name (``namespace.table`` in the catalog)."""

    where: str
    spark: SparkSession  # the session its reads and writes go through
    FORMAT_PROPERTIES: dict[str, str] = {}
    """Table properties of the format's own that the changelog keeps (set on older ones too)."""

    def create_or_check(self, *, app_id: str, options: dict[str, str]) -> None:
        """The changelog, made when absent, for the stream `app_id`; `options` (how the stream
        applies its tables: `OPTIONS`) kept as its properties, for the fresh read.

        Raises:
            JobError: the place holds something else than a changelog, or another stream's.
        """
        options = {**options, **self.FORMAT_PROPERTIES}
        if not self._exists():
            self._create({APP_ID_PROPERTY: app_id, **options})
            return
        owner = self.properties().get(APP_ID_PROPERTY)
        if owner != app_id:
            raise JobError(f"--changelog {self.where} is the changelog of another stream (app "
                           f"id {owner}, this checkpoint's is {app_id}): one changelog per "
                           f"stream")
        have = self.read().columns
        if have != COLUMNS.fieldNames():
            raise JobError(f"--changelog {self.where} has the columns {', '.join(have)}, not "
                           f"a changelog's ({', '.join(COLUMNS.fieldNames())})")
        if {**self.properties(), **options} != self.properties():
            self._set_properties(options)

    def stream_app_id(self) -> str | None:
        """The app id of the stream whose changelog this is."""
        return self.properties().get(APP_ID_PROPERTY)

    def pending(self, *, topic: str, after: int, upto: int | None = None) -> DataFrame:
        """The rows of `topic` from batches after `after` (up to `upto`)."""
        rows = self.read().where((F.col(BATCH) > after) & (F.col("topic") == topic))
        return rows if upto is None else rows.where(F.col(BATCH) <= upto)

    def expire(self, *, applied_by_topic: dict[str, int], retention_ms: int, now_ms: int
               ) -> int:
        """Remove the rows older than `retention_ms` before `now_ms` that their topic's table
        has applied (`applied_by_topic`: each topic's newest applied batch); a row of a topic
        not in it, or of a batch its table has not applied, stays whatever its age. One commit
        (none when nothing goes); the count of rows removed."""
        if not applied_by_topic:
            return 0
        done = " OR ".join(f"(topic = '{topic}' AND {BATCH} <= {batch})"
                           for topic, batch in sorted(applied_by_topic.items()))
        gone = f"{LANDED} < timestamp_millis({now_ms - retention_ms}) AND ({done})"
        count = self.read().where(gone).count()
        if count:
            self._delete(gone)
        return count

    # What each format does.
    def _exists(self) -> bool:
        raise NotImplementedError

    def _create(self, properties: dict[str, str]) -> None:
        raise NotImplementedError

    def _set_properties(self, properties: dict[str, str]) -> None:
        raise NotImplementedError

    def _delete(self, condition: str) -> None:
        raise NotImplementedError

    def properties(self) -> dict[str, str]:
        """The changelog's table properties."""
        raise NotImplementedError

    def read(self, *, pinned: bool = False) -> DataFrame:
        """Every row; `pinned`: as of the newest commit now, whatever is committed later."""
        raise NotImplementedError

    def append(self, batch: DataFrame, *, tables: dict[str, str], app_id: str,
               batch_id: int) -> None:
        """Append micro-batch `batch_id` (the Kafka source's rows; `tables`: each topic's
        ``database.table``) in one commit, skipped when the changelog has that batch."""
        raise NotImplementedError

    def landed(self, *, app_id: str) -> int:
        """The newest batch landed by the stream `app_id` (-1: none)."""
        raise NotImplementedError

    def compact(self) -> str:
        """Compact the changelog and drop the files no snapshot needs; what was done."""
        raise NotImplementedError


class DeltaChangelog(Changelog):
    """The changelog as a Delta table at a path."""

    FORMAT_PROPERTIES = {"delta.checkpointInterval": "100"}  # noqa: RUF012 - read only
    """Delta writes a checkpoint of the log every 10 commits by default, inside the commit
    that reaches it: a landing micro-batch over 100 topics then took 2.6-4.0 s instead of
    0.9 s, every tenth batch (docs/speed.md). Every 100th instead; a reader replays at most
    100 small JSON commits."""

    def __init__(self, spark: SparkSession, path: str) -> None:
        self.spark, self.where = spark, path

    def _exists(self) -> bool:
        if not path_exists(self.spark, self.where, empty_is_absent=True):
            return False
        if not DeltaTable.isDeltaTable(self.spark, self.where):
            raise JobError(f"--changelog {self.where} holds files that are no Delta table: "
                           f"give the changelog a place of its own")
        return True

    def _create(self, properties: dict[str, str]) -> None:
        builder = (DeltaTable.createIfNotExists(self.spark)
                   .location(qualified(self.spark, self.where)).addColumns(COLUMNS))
        for name, value in properties.items():
            builder = builder.property(name, value)
        builder.execute()

    def _set_properties(self, properties: dict[str, str]) -> None:
        assigned = ", ".join(f"'{k}' = '{v}'" for k, v in sorted(properties.items()))
        self.spark.sql(f"ALTER TABLE delta.`{qualified(self.spark, self.where)}` SET "
                       f"TBLPROPERTIES ({assigned})")

    def _delete(self, condition: str) -> None:
        DeltaTable.forPath(self.spark, self.where).delete(condition)

    def properties(self) -> dict[str, str]:
        """The table properties."""
        row = DeltaTable.forPath(self.spark, self.where).detail().select("properties").first()
        assert row is not None  # a Delta table's detail is one row
        return dict(row[0] or {})

    def read(self, *, pinned: bool = False) -> DataFrame:
        """Every row (`pinned`: as of the newest commit now)."""
        reader = self.spark.read.format("delta")
        if pinned:
            version, _ = txn_version(self.spark, self.where, app_id="")
            reader = reader.option("versionAsOf", version)
        return reader.load(self.where)

    def append(self, batch: DataFrame, *, tables: dict[str, str], app_id: str,
               batch_id: int) -> None:
        """Append micro-batch `batch_id` in one commit, unless landed."""
        (_rows(batch, tables=tables, batch_id=batch_id).write.format("delta").mode("append")
         .option("txnAppId", changelog_app_id(app_id)).option("txnVersion", str(batch_id))
         .save(self.where))

    def landed(self, *, app_id: str) -> int:
        """The newest batch the stream `app_id` landed (-1: none)."""
        return txn_version(self.spark, self.where, app_id=changelog_app_id(app_id))[1]

    def compact(self) -> str:
        """Compact; what was done."""
        compaction = upkeep.optimize(self.spark, self.where)
        self.spark.sql(f"VACUUM delta.`{qualified(self.spark, self.where)}`").collect()
        return f"OPTIMIZE {compaction}, VACUUM"


class IcebergChangelog(Changelog):
    """The changelog as an Iceberg table of the catalog (`iceberg.CATALOG`), ``namespace.table``;
    written through a session of its own (its snapshot properties are the session's)."""

    def __init__(self, spark: SparkSession, config: StreamConfig, *, name: str) -> None:
        assert config.iceberg is not None
        self.spark = iceberg.use_catalog(spark.newSession(), config.iceberg)
        self.where, self.format_version = name, config.iceberg_format_version
        self.last: int | None = None  # the newest batch landed (read once)

    def _exists(self) -> bool:
        return iceberg.exists(self.spark, self.where)

    def _create(self, properties: dict[str, str]) -> None:
        iceberg.create_namespace(self.spark, self.where.split(".")[:-1])
        columns = ", ".join(f"`{f.name}` {f.dataType.simpleString()}" for f in COLUMNS.fields)
        listed = ", ".join(f"'{k}' = '{v}'" for k, v in {
            "format-version": str(self.format_version), **properties}.items())
        self.spark.sql(f"CREATE TABLE IF NOT EXISTS {iceberg.identifier(self.where)} "
                       f"({columns}) USING iceberg TBLPROPERTIES ({listed})")

    def _set_properties(self, properties: dict[str, str]) -> None:
        assigned = ", ".join(f"'{k}' = '{v}'" for k, v in sorted(properties.items()))
        self.spark.sql(f"ALTER TABLE {iceberg.identifier(self.where)} SET TBLPROPERTIES "
                       f"({assigned})")

    def _delete(self, condition: str) -> None:
        self.spark.sql(f"DELETE FROM {iceberg.identifier(self.where)} WHERE {condition}")

    def properties(self) -> dict[str, str]:
        """The table properties."""
        return iceberg.properties(self.spark, self.where)

    def read(self, *, pinned: bool = False) -> DataFrame:
        """Every row (`pinned`: as of the newest commit now)."""
        name = iceberg.identifier(self.where)
        if not pinned:
            return self.spark.table(name)
        newest = self.spark.sql(f"SELECT snapshot_id FROM {name}.snapshots ORDER BY "
                                f"committed_at DESC LIMIT 1").first()
        if newest is None:  # no commit yet
            return self.spark.table(name)
        return self.spark.read.option("snapshot-id", int(newest[0])).table(name)

    def append(self, batch: DataFrame, *, tables: dict[str, str], app_id: str,
               batch_id: int) -> None:
        """Append micro-batch `batch_id` in one commit, unless landed."""
        if self.last is None:
            self.last = self.landed(app_id=app_id)
        if batch_id <= self.last:
            return
        rows = iceberg.in_session(self.spark, _rows(batch, tables=tables, batch_id=batch_id))
        with iceberg.snapshot_summary(self.spark, app_id=changelog_app_id(app_id),
                                      batch_id=batch_id):
            rows.writeTo(iceberg.identifier(self.where)).append()
        self.last = batch_id

    def landed(self, *, app_id: str) -> int:
        """The newest batch the stream `app_id` landed (-1: none)."""
        # The snapshots name the batches; the rows too, should the snapshots have expired.
        named = iceberg.last_batch(self.spark, self.where, app_id=changelog_app_id(app_id))
        row = self.read().agg(F.max(BATCH)).first()
        return max(-1, named if named is not None else -1,
                   int(row[0]) if row is not None and row[0] is not None else -1)

    def compact(self) -> str:
        """Compact; what was done."""
        return iceberg.rewrite(self.spark, self.where)


def open_changelog(spark: SparkSession, config: StreamConfig) -> Changelog:
    """The changelog of `config`'s stream (``--changelog``), in its tables' format."""
    assert config.changelog is not None
    if config.table_format is TableFormat.ICEBERG:
        return IcebergChangelog(spark, config, name=config.changelog)
    return DeltaChangelog(spark, config.changelog)

