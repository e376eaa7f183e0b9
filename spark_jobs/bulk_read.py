"""``python -m spark_jobs.bulk_read``: a flat-avro topic (Kafka or a dump) -> typed Parquet or a
Delta table (the job itself: `spark_jobs.jobs.bulk_read`). See ``--help``; errors are one line
on stderr and exit code 2, with no output left behind.

The command line imports no pyspark: ``--help`` works where only the service is installed, and
the master and the broker are checked before the JVM starts.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from spark_jobs.jobs.preflight import check_catalog_file
from spark_jobs.session import run_job
from spark_jobs.settings.config import JobConfig, parse_args
from spark_jobs.sources import kafka_check

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["main"]


def _checks(config: JobConfig) -> None:
    """What is checked before the JVM starts (after the master): a refused login or TLS
    handshake is one line at once."""
    if config.iceberg is not None:
        check_catalog_file(config.iceberg)
    if config.bootstrap_servers:
        kafka_check.check_broker(config.bootstrap_servers, kafka=config.kafka)


def main(argv: Sequence[str] | None = None) -> int:
    """Parse argv, check, run on a fresh session, report errors in one line (exit 2)."""
    config = parse_args(argv)

    def work(spark: SparkSession) -> None:
        from spark_jobs.jobs.bulk_read import run

        run(spark, config)

    iceberg = config.iceberg
    return run_job("bulk_read", work, master=config.master, checks=lambda: _checks(config),
                   paths=(config.input, None if iceberg or config.in_catalog else config.output,
                          config.dead_letter,
                          iceberg.warehouse if iceberg else None))


if __name__ == "__main__":
    sys.exit(main())
