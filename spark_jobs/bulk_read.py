"""``python -m spark_jobs.bulk_read``: a flat-avro topic (Kafka or a dump) -> typed Parquet or a
Delta table.

Wiring only: resolve the schemas once (driver), read, check frames in Spark SQL, decode each
writer id's rows with its writer schema into the latest (reader) schema, write. See
``--help``; errors are one line on stderr and exit code 2, with no output left behind.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_jobs import sources
from spark_jobs.config import JobConfig, Mode, parse_args
from spark_jobs.errors import JobError
from spark_jobs.schemas import TopicSchemas, resolve_schemas
from spark_jobs.session import run_job
from spark_jobs.transforms import (
    BAD_FRAME,
    dead_letters,
    decode,
    fail_on_problem,
    frame_problem,
    latest_state,
    with_frames,
)

__all__ = ["main", "run"]


def run(spark: SparkSession, config: JobConfig) -> None:
    """Run the job in `spark` (tests call this with their session).

    Raises:
        JobError: bad input, unreachable service/registry/broker, bad frames in failfast mode.
    """
    schemas = resolve_schemas(config)
    if config.materialize and schemas.key is None:
        raise JobError(f"topic {config.topic} has no key schema: --materialize needs a key")
    for path in filter(None, (config.output, config.dead_letter)):
        sources.require_absent(spark, path, config.overwrite)
    if config.bootstrap_servers:
        sources.check_topic(config)
    framed = with_frames(sources.read_source(spark, config)).withColumn(
        "_problem", frame_problem(schemas))
    if config.mode is Mode.FAILFAST:
        good = framed.where(fail_on_problem())
    else:
        assert config.dead_letter is not None
        good = framed.where("_problem IS NULL")
    decoded = decode(good, schemas, config.mode)
    if config.mode is Mode.PERMISSIVE:
        dead = dead_letters(framed.where("_problem IS NOT NULL"), F.col("_problem")).unionByName(
            dead_letters(decoded.where("_undecoded"),
                         F.lit("the body does not decode with its writer schema"),
                         partition="_partition", offset="_offset"))
        sources.write_parquet(spark, dead, str(config.dead_letter))
    # FAILFAST from_avro raises instead of giving null, so there is nothing to filter (and a
    # filter on the decoded struct would be pushed below it, decoding every body twice).
    ok = decoded if config.mode is Mode.FAILFAST else decoded.where("NOT _undecoded")
    rows = _typed(ok, schemas, config)
    try:
        sources.write_output(spark, rows, config.output, config.output_format.value)
    except Exception as exc:
        text = str(exc)
        if BAD_FRAME not in text:
            raise
        reason = text.split(BAD_FRAME, 1)[1].splitlines()[0].split(" SQLSTATE")[0].rstrip(". ")
        raise JobError(f"{reason} (--mode permissive --dead-letter PATH sets bad messages "
                       f"aside)") from exc


def _typed(decoded: DataFrame, schemas: TopicSchemas, config: JobConfig) -> DataFrame:
    rows = decoded.drop("_undecoded", "key", "value")
    if config.materialize:
        assert schemas.key is not None
        return latest_state(rows, schemas.key.field_names())
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    """Parse argv, run on a fresh session, report errors in one line (exit 2)."""
    config = parse_args(argv)
    return run_job("bulk_read", config.master, lambda spark: run(spark, config))


if __name__ == "__main__":
    sys.exit(main())
