"""The Spark session: spark-avro, spark-sql-kafka and Delta Lake from the Maven cache via
``spark.jars``, with Delta's SQL extension and catalog; a standalone master is checked first.

pyspark is imported only to build a session: deploy/spark/submit.sh runs the master and jar
checks with any python3."""

from __future__ import annotations

import ipaddress
import os
import socket
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from spark_jobs.errors import JobError, one_line
from spark_jobs.settings import object_store

if TYPE_CHECKING:  # imported where a session is built: the checks run on any python3
    from pyspark.sql import SparkSession

__all__ = ["CODEGEN_CACHE_ENTRIES", "KAFKA_CONSUMER_CACHE", "MASTER_CONNECT_SECONDS",
           "REDACTION_REGEX", "jar_paths",
           "master_addresses", "check_master", "build_session", "run_job"]

_ROOT = Path(__file__).resolve().parents[1]
_REQUIRED = ("spark-avro_2.13", "spark-sql-kafka-0-10_2.13", "delta-spark_2.13")
_STANDALONE = "spark://"
_STANDALONE_PORT = 7077

REDACTION_REGEX = (r"(?i)secret|password|token|credential|access[.]key"
                   r"|sasl[.]jaas[.]config|ssl[.]keystore[.]key")
"""Spark's ``spark.redaction.regex`` (its default, then the Kafka client's secret options): a
configuration or option whose name or value matches is shown as ``*********(redacted)`` in the
UI, the event log and plan strings (``kafka.sasl.jaas.config`` holds the SASL password; an
Iceberg REST catalog's ``credential`` its OAuth secret)."""

CODEGEN_CACHE_ENTRIES = 2000
"""Spark's cache of compiled generated classes (``spark.sql.codegen.cache.maxEntries``, 100 by
default; deploy/spark/submit.sh and the Helm stream job pass the same). A stream runs the same
plans every micro-batch, but one table's Delta MERGE alone compiles some 30 classes, so a few
tables' stream cycles through more than 100 and, least recently used first, evicts each class just
before it is needed again: Delta's own MERGEs of 20 small tables compiled some 1,400 classes
per round (about 10 s of a 50 s round on 2 cores), and with 5,000 entries one (docs/speed.md,
"A whole database in one stream")."""

KAFKA_CONSUMER_CACHE = 1024
"""Kafka consumers an executor keeps between micro-batches (``spark.kafka.consumer.cache.capacity``,
64 by default; deploy/spark/submit.sh and the Helm stream job pass the same). Spark keeps a
consumer per Kafka partition; a whole database's stream reads hundreds of partitions each
micro-batch, and with 64 it closed and made most of them again every time: a micro-batch over
100 topics of 3 partitions took 0.67 s with 64 and 0.38 s with 1,024 (docs/speed.md, "Land
first, merge behind"). An idle consumer is closed after 5 minutes anyway."""

MASTER_CONNECT_SECONDS = 10.0
"""How long the job waits for a standalone master to accept a connection, all masters of a
``spark://h1,h2`` URL together (Spark itself gives up only after three 20 s registration
attempts, with a Java trace)."""


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


def master_addresses(master: str) -> list[tuple[str, int]]:
    """The (host, port) of each master of a standalone URL ``spark://h1[:p1][,h2[:p2]]`` (port
    7077 when none is given); empty for any other master (``local[*]``, ``yarn`` ...).

    Raises:
        JobError: a port that is not a number.
    """
    if not master.startswith(_STANDALONE):
        return []
    addresses = []
    for part in master.removeprefix(_STANDALONE).split(","):
        host, colon, port = part.rpartition(":")
        if not colon or part.endswith("]"):  # no port (an IPv6 address is in brackets)
            host, port = part, str(_STANDALONE_PORT)
        if not port.isdigit():
            raise JobError(f"the Spark master {master} has a port that is not a number: {port}")
        addresses.append((host.strip("[]"), int(port)))
    return addresses


def check_master(master: str, *, timeout: float = MASTER_CONNECT_SECONDS,
                 option: str = "--master") -> None:
    """Return once a master of a standalone URL accepts a TCP connection (at once for other
    masters); the wait for all of them is bounded by `timeout` seconds. `option` is what the
    error tells the user to fix.

    Raises:
        JobError: no master of `master` accepts a connection: one line naming the URL.
    """
    deadline = time.monotonic() + timeout
    refused = []
    for host, port in master_addresses(master):
        try:
            with socket.create_connection(
                    (host, port), timeout=max(deadline - time.monotonic(), 0.1)):
                return
        except OSError as exc:
            refused.append(f"{host}:{port}: {exc.strerror or str(exc) or type(exc).__name__}")
    if refused:
        raise JobError(f"the Spark master {master} does not answer ({'; '.join(refused)}): "
                       f"start it, or point {option} at a running one")


def _on_this_machine(master: str) -> bool:
    """``local[...]``, or standalone masters on loopback only (whose workers, which reach
    them there, run on this machine too)."""
    if master.startswith("local"):
        return True
    addresses = master_addresses(master)
    return bool(addresses) and all(_loopback(host) for host, _ in addresses)


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _without_submit(builder: SparkSession.Builder, master: str, *,
                    s3a: bool) -> SparkSession.Builder:
    """What ``spark-submit`` would otherwise give: the cached jars in ``spark.jars`` (the
    driver serves them to a cluster's executors; with `s3a`, hadoop-aws's too), the master,
    `CODEGEN_CACHE_ENTRIES` and `KAFKA_CONSUMER_CACHE` (deploy/spark/submit.sh's), no UI or
    progress bars."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers: this interpreter
    if _on_this_machine(master):
        # One machine: the driver listens on loopback only, not on the address Spark would
        # pick from eth0 (executors of a remote cluster need a reachable driver: left alone).
        # Few shuffle partitions, and Delta rebuilds its table state from the log in 4 tasks
        # instead of 50 (both cost per micro-batch). VACUUM lists a table's folders in 4
        # tasks, not 10,000 (test_stream_order's VACUUM: 73 s, then about 4 s).
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        builder = builder.config("spark.driver.host", "127.0.0.1").config(
            "spark.driver.bindAddress", "127.0.0.1").config(
            "spark.sql.shuffle.partitions", "4").config(
            "spark.databricks.delta.snapshotPartitions", "4").config(
            "spark.sql.sources.parallelPartitionDiscovery.parallelism", "4")
    jars = jar_paths() + (object_store.hadoop_aws_jars() if s3a else [])
    return builder.config("spark.jars", ",".join(jars)).config(
        "spark.sql.codegen.cache.maxEntries", str(CODEGEN_CACHE_ENTRIES)).config(
        "spark.kafka.consumer.cache.capacity", str(KAFKA_CONSUMER_CACHE)).config(
        "spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false").master(
        master)


def build_session(app_name: str, master: str | None = None, *,
                  paths: Sequence[str | None] = ()) -> SparkSession:
    """The job's session. Under ``spark-submit`` (which starts the JVM first and hands Python
    its gateway) the jars come from ``--packages`` or ``--jars`` and the master from the
    submit; otherwise the cached jars go in ``spark.jars`` and `master` defaults to
    ``local[*]``. When one of `paths` (the job's tables, checkpoint, input, output) is
    ``s3a://``, S3A is configured from the AWS environment (spark_jobs/settings/object_store.py).

    Raises:
        JobError: a standalone master (``spark://``) that does not answer (within
            `MASTER_CONNECT_SECONDS`) or does not start the session (something else listens
            there: Spark gives up after three 20 s registration attempts), or jars missing
            from the cache, or AWS settings that cannot work.
    """
    from py4j.protocol import Py4JJavaError
    from pyspark.sql import SparkSession

    if master is not None:
        check_master(master)
    s3a = bool(object_store.s3a_paths(paths))
    if s3a:
        object_store.check_environment(os.environ)
    builder = SparkSession.builder.appName(app_name).config(
        "spark.sql.session.timeZone", "UTC").config(
        "spark.redaction.regex", REDACTION_REGEX).config(
        "spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension").config(
        "spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog"
    ).config("spark.scheduler.mode", "FAIR")  # the stream's tables share the executors
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ  # master and jars come from spark-submit
    cluster = submitted or not (master or "local").startswith("local")
    for name, value in (object_store.spark_settings(os.environ, executors=cluster) if s3a
                        else {}).items():
        builder = builder.config(name, value)
    if not submitted:
        builder = _without_submit(builder, master or "local[*]", s3a=s3a)
    elif master:
        builder = builder.master(master)
    try:
        return builder.getOrCreate()
    except Py4JJavaError as exc:
        if not master_addresses(master or ""):
            raise
        # A standalone master that listens but takes no application (Spark says why in its log)
        reason = one_line(Exception(str(exc.java_exception.getMessage())))
        raise JobError(f"the Spark session on master {master} did not start: {reason}"
                       ) from exc


_SPARK_PACKAGES = ("pyspark", "py4j", "delta")
"""What the `spark` extra installs (`delta`: delta-spark's Python package)."""


def run_job(name: str, work: Callable[[SparkSession], None], *, master: str | None,
            checks: Callable[[], None] = lambda: None, paths: Sequence[str | None] = ()) -> int:
    """Run `work` on a fresh session named ``flatavro-<name>`` and stop the session; an error
    is one line ``<name>: error: ...`` on stderr and exit code 2, a Spark/JVM failure its
    first line, not a Java trace. Before the JVM starts: the standalone master answers, then
    `checks` (the job's checks that need no session). The buckets of `paths` that are
    ``s3a://`` are reached first thing in the session (a missing credential or bucket, an
    endpoint that does not answer: one line)."""
    try:
        if master is not None:
            check_master(master)
        checks()
        spark = build_session(f"flatavro-{name.replace('_', '-')}", master, paths=paths)
        try:
            object_store.check_paths(spark, object_store.s3a_paths(paths))
            work(spark)
        finally:
            spark.stop()
    except JobError as exc:
        print(f"{name}: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in _SPARK_PACKAGES:
            raise
        print(f"{name}: error: the Spark jobs need the `spark` extra (pyspark, delta-spark) "
              f"and this Python ({sys.executable}) lacks {exc.name}: run `make setup` (or "
              f"pip install -e '.[spark]' in the clone)", file=sys.stderr)
        return 2
    except Exception as exc:  # a Spark/JVM failure
        print(f"{name}: error: {one_line(exc)}", file=sys.stderr)
        return 2
    return 0
