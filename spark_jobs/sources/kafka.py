"""Reading the topic: a Kafka batch (the bulk read) or a Parquet dump of one, with the Kafka
source's columns."""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession

from spark_jobs.errors import JobError
from spark_jobs.settings.config import JobConfig

__all__ = ["KAFKA_COLUMNS", "READ_OPTIONS", "read_source"]

KAFKA_COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp")
"""The Kafka source's columns a job reads (a dump must have them)."""

_KAFKA_TIMEOUT_MS = "20000"

READ_OPTIONS = {
    # Only what committed transactions wrote. The Java client's default, read_uncommitted,
    # also returns the messages of aborted transactions: a bridge that crashed mid-transaction
    # sends them again in its next one, and the table would hold them twice
    # (docs/bridge.md, "Exactly once"). For a producer without transactions (TiCDC) it reads
    # the same. Spark's offsets then stop at the last stable offset.
    "kafka.isolation.level": "read_committed",
    # A task's offset range can end at a transaction's commit marker, which is no record: the
    # consumer's last fetch then finds nothing and the broker holds it fetch.max.wait.ms (500 ms
    # by default), once per Kafka partition per micro-batch. Without transactions too, each
    # partition's read paid the wait it is given (20 ms: a landing micro-batch over 100 topics
    # of 3 partitions took 1.85 s at 20 ms, 0.38 s at 0; docs/speed.md). Every offset a task
    # asks for exists (the offsets end at the last stable offset), so a fetch never has to wait.
    "kafka.fetch.max.wait.ms": "0",
}
"""The Kafka source options of every job (stream and bulk read)."""


def read_source(spark: SparkSession, config: JobConfig) -> DataFrame:
    """The raw messages with the Kafka source's columns.

    Raises:
        JobError: a dump without the ``value`` column (or another Kafka column).
    """
    if config.input is not None:
        df = spark.read.parquet(config.input)
        missing = [c for c in KAFKA_COLUMNS if c not in df.columns and c != "topic"]
        if missing:
            raise JobError(f"the dump {config.input} lacks column(s) {', '.join(missing)}; "
                           f"it needs the Kafka source's {', '.join(KAFKA_COLUMNS)}")
        return df
    return (spark.read.format("kafka")
            .option("kafka.bootstrap.servers", str(config.bootstrap_servers))
            .option(*config.subscription().spark_option())
            .option("startingOffsets", config.starting_offsets)
            .option("endingOffsets", config.ending_offsets)
            .option("kafka.request.timeout.ms", _KAFKA_TIMEOUT_MS)
            .option("kafka.default.api.timeout.ms", _KAFKA_TIMEOUT_MS)
            .options(**READ_OPTIONS)
            .options(**config.kafka.spark_options())
            .load())
