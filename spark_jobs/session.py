"""The Spark session: spark-avro and spark-sql-kafka from the Maven cache via ``spark.jars``."""

from __future__ import annotations

import os
from pathlib import Path

from pyspark.sql import SparkSession

from spark_jobs.errors import JobError

__all__ = ["jar_paths", "build_session"]

_ROOT = Path(__file__).resolve().parents[1]
_REQUIRED = ("spark-avro_2.13", "spark-sql-kafka-0-10_2.13")


def jar_paths() -> list[str]:
    """The jars deploy/jvm/fetch.sh put in the cache (``FLATAVRO_JVM_CACHE`` or .cache/jvm).

    Raises:
        JobError: the cache lacks spark-avro or spark-sql-kafka (run ``make setup``).
    """
    cache = Path(os.environ.get("FLATAVRO_JVM_CACHE", _ROOT / ".cache" / "jvm")) / "spark"
    jars = sorted(str(p) for p in cache.glob("*.jar"))
    for name in _REQUIRED:
        if not any(Path(j).name.startswith(name + "-") for j in jars):
            raise JobError(f"{name} is not in {cache}: run `make setup` (deploy/jvm/fetch.sh)")
    return jars


def build_session(app_name: str, master: str | None = None) -> SparkSession:
    """A session with the cached jars; `master` defaults to spark-submit's, else local[*]."""
    builder = SparkSession.builder.appName(app_name).config("spark.jars", ",".join(jar_paths()))
    builder = builder.config("spark.sql.session.timeZone", "UTC").config(
        "spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "4")
    if master or not os.environ.get("SPARK_SUBMIT_OPTS"):
        builder = builder.master(master or "local[*]")
    return builder.getOrCreate()
