"""``python -m spark_jobs.stream``: keep a Delta table equal to the TiDB table behind a flat-avro
topic with Spark Structured Streaming (the job itself: `spark_jobs.jobs.stream`). See ``--help``
and docs/streaming.md.

The command line imports no pyspark: ``--help`` works where only the service is installed, and
the checks that need no JVM (the standalone master answers, local table and checkpoint paths,
the broker accepts the client) end a bad start in one line before the ~20 s a Spark session
takes to start.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from spark_jobs.jobs.preflight import check_stream_paths
from spark_jobs.session import run_job
from spark_jobs.settings.config import StreamConfig, parse_stream_args
from spark_jobs.sources import kafka_check

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["main"]


def _checks(config: StreamConfig) -> None:
    """What is checked before the JVM starts (after the master)."""
    check_stream_paths(config)
    kafka_check.check_broker(config.bootstrap_servers, kafka=config.kafka)


def main(argv: Sequence[str] | None = None) -> int:
    """Parse argv, check, run on a fresh session until caught up or signalled; errors in one
    line (exit 2)."""
    config = parse_stream_args(argv)
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())

    def work(spark: SparkSession) -> None:
        from spark_jobs.jobs.stream import run

        run(spark, config, stop=stop)

    iceberg = config.iceberg
    return run_job("stream", work, master=config.master, checks=lambda: _checks(config),
                   paths=(None if config.named else config.table_path, config.checkpoint,
                          config.dead_letter, iceberg.warehouse if iceberg else None))


if __name__ == "__main__":
    sys.exit(main())
