"""The Spark session: spark-avro, spark-sql-kafka and Delta Lake from the Maven cache via
``spark.jars``, with Delta's SQL extension and catalog."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

from pyspark.sql import SparkSession

from spark_jobs.errors import JobError, one_line

__all__ = ["jar_paths", "build_session", "run_job"]

_ROOT = Path(__file__).resolve().parents[1]
_REQUIRED = ("spark-avro_2.13", "spark-sql-kafka-0-10_2.13", "delta-spark_2.13")


def jar_paths() -> list[str]:
    """The jars deploy/jvm/fetch.sh put in the cache (``FLATAVRO_JVM_CACHE`` or .cache/jvm).

    Raises:
        JobError: the cache lacks spark-avro, spark-sql-kafka or delta-spark (run
            ``make setup``).
    """
    cache = Path(os.environ.get("FLATAVRO_JVM_CACHE", _ROOT / ".cache" / "jvm")) / "spark"
    jars = sorted(str(p) for p in cache.glob("*.jar"))
    for name in _REQUIRED:
        if not any(Path(j).name.startswith(name + "-") for j in jars):
            raise JobError(f"{name} is not in {cache}: run `make setup` (deploy/jvm/fetch.sh)")
    return jars


def build_session(app_name: str, master: str | None = None) -> SparkSession:
    """The job's session. Under ``spark-submit`` (which starts the JVM first and hands Python
    its gateway) the jars come from ``--packages`` and the master from the submit; otherwise
    the cached jars go in ``spark.jars`` and `master` defaults to ``local[*]``."""
    builder = SparkSession.builder.appName(app_name).config(
        "spark.sql.session.timeZone", "UTC").config(
        "spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension").config(
        "spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers: this interpreter
        if (master or "local").startswith("local"):
            # One machine: the driver listens on loopback only, not on the address Spark
            # would pick from eth0 (a cluster master needs a reachable driver: left alone).
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
            builder = builder.config("spark.driver.host", "127.0.0.1").config(
                "spark.driver.bindAddress", "127.0.0.1")
        # One machine: few shuffle partitions, and Delta rebuilds its table state from the log
        # in 4 tasks instead of 50 (both cost per micro-batch); no progress bars on stderr.
        builder = builder.config("spark.jars", ",".join(jar_paths())).config(
            "spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false").config(
            "spark.sql.shuffle.partitions", "4").config(
            "spark.databricks.delta.snapshotPartitions", "4").master(master or "local[*]")
    elif master:
        builder = builder.master(master)
    return builder.getOrCreate()


def run_job(name: str, work: Callable[[SparkSession], None], *, master: str | None) -> int:
    """Run `work` on a fresh session named ``flatavro-<name>`` and stop the session; an error
    is one line ``<name>: error: ...`` on stderr and exit code 2, a Spark/JVM failure its
    first line, not a Java trace."""
    try:
        spark = build_session(f"flatavro-{name.replace('_', '-')}", master)
        try:
            work(spark)
        finally:
            spark.stop()
    except JobError as exc:
        print(f"{name}: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    except Exception as exc:  # a Spark/JVM failure
        print(f"{name}: error: {one_line(exc)}", file=sys.stderr)
        return 2
    return 0
