"""Reading the topic: a Kafka batch (the bulk read) or a Parquet dump of one, with the Kafka
source's columns."""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession

from spark_jobs.errors import JobError
from spark_jobs.settings.config import JobConfig

__all__ = ["KAFKA_COLUMNS", "read_source"]

KAFKA_COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp")
"""The Kafka source's columns a job reads (a dump must have them)."""

_KAFKA_TIMEOUT_MS = "20000"


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
            .options(**config.kafka.spark_options())
            .load())
