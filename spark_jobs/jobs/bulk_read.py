"""What ``python -m spark_jobs.bulk_read`` runs (`spark_jobs.bulk_read` is the command line):
a flat-avro topic (Kafka or a dump) -> typed Parquet or a Delta table.

Wiring only: resolve the schemas once (driver), read, check frames in Spark SQL, decode each
writer id's rows with its writer schema into the latest (reader) schema, write. See
``--help``; errors are one line on stderr and exit code 2, with no output left behind.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession

from spark_jobs.decoding.bad_messages import triaged
from spark_jobs.decoding.registry import resolve_schemas
from spark_jobs.decoding.schemas import TopicVersions
from spark_jobs.decoding.transforms import latest_state, with_frames
from spark_jobs.errors import JobError
from spark_jobs.settings.config import JobConfig
from spark_jobs.sinks import parquet
from spark_jobs.sources import kafka, kafka_check

__all__ = ["run"]


def run(spark: SparkSession, config: JobConfig) -> None:
    """Run the job in `spark` (tests call this with their session).

    Raises:
        JobError: bad input, unreachable service/registry/broker, a bad message in failfast
            mode.
    """
    schemas = resolve_schemas(config)
    if config.materialize and schemas.key is None:
        raise JobError(f"topic {config.topic} has no key schema: --materialize needs a key")
    for path in filter(None, (config.output, config.dead_letter)):
        parquet.require_absent(spark, path, overwrite=config.overwrite)
    if config.bootstrap_servers:
        kafka_check.check_topic(config.bootstrap_servers, config.topic, kafka=config.kafka)
    framed = with_frames(kafka.read_source(spark, config))
    with triaged(framed, schemas, mode=config.mode) as messages:
        if messages.dead is not None:
            assert config.dead_letter is not None  # parse_args: permissive needs it
            parquet.write_parquet(spark, messages.dead, path=config.dead_letter)
        parquet.write_output(spark, _output(messages.rows, schemas, config=config),
                             path=config.output, data_format=config.output_format.value)


def _output(rows: DataFrame, schemas: TopicVersions, *, config: JobConfig) -> DataFrame:
    """Every change, or with ``--materialize`` the latest state per key."""
    if config.materialize:
        assert schemas.key is not None
        return latest_state(rows, schemas.key.field_names())
    return rows
