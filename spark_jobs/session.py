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
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from spark_jobs.errors import JobError, one_line

if TYPE_CHECKING:  # imported where a session is built: the checks run on any python3
    from pyspark.sql import SparkSession

__all__ = ["MASTER_CONNECT_SECONDS", "jar_paths", "master_addresses", "check_master",
           "build_session", "run_job"]

_ROOT = Path(__file__).resolve().parents[1]
_REQUIRED = ("spark-avro_2.13", "spark-sql-kafka-0-10_2.13", "delta-spark_2.13")
_STANDALONE = "spark://"
_STANDALONE_PORT = 7077

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


def _without_submit(builder: SparkSession.Builder, master: str) -> SparkSession.Builder:
    """What ``spark-submit`` would otherwise give: the cached jars in ``spark.jars`` (the
    driver serves them to a cluster's executors), the master, no UI or progress bars."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers: this interpreter
    if _on_this_machine(master):
        # One machine: the driver listens on loopback only, not on the address Spark would
        # pick from eth0 (executors of a remote cluster need a reachable driver: left alone).
        # Few shuffle partitions, and Delta rebuilds its table state from the log in 4 tasks
        # instead of 50 (both cost per micro-batch).
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        builder = builder.config("spark.driver.host", "127.0.0.1").config(
            "spark.driver.bindAddress", "127.0.0.1").config(
            "spark.sql.shuffle.partitions", "4").config(
            "spark.databricks.delta.snapshotPartitions", "4")
    return builder.config("spark.jars", ",".join(jar_paths())).config(
        "spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false").master(
        master)


def build_session(app_name: str, master: str | None = None) -> SparkSession:
    """The job's session. Under ``spark-submit`` (which starts the JVM first and hands Python
    its gateway) the jars come from ``--packages`` or ``--jars`` and the master from the
    submit; otherwise the cached jars go in ``spark.jars`` and `master` defaults to
    ``local[*]``.

    Raises:
        JobError: a standalone master (``spark://``) that does not answer (within
            `MASTER_CONNECT_SECONDS`) or does not start the session (something else listens
            there: Spark gives up after three 20 s registration attempts), or jars missing
            from the cache.
    """
    from py4j.protocol import Py4JJavaError
    from pyspark.sql import SparkSession

    if master is not None:
        check_master(master)
    builder = SparkSession.builder.appName(app_name).config(
        "spark.sql.session.timeZone", "UTC").config(
        "spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension").config(
        "spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        builder = _without_submit(builder, master or "local[*]")
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
