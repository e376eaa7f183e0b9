"""Real parts, started on first use, one per test session unless a test needs its own: a
single-node KRaft broker (deploy/kafka/kafka.sh) for the Spark and bridge tests, Apicurio
Registry (deploy/apicurio/apicurio.sh) and a `flatavro serve` as external registries, a
local Spark session, a Spark standalone cluster, SeaweedFS as an S3 store and a TiDB server
as the upstream TiDB (the parts themselves are in tests/support/parts.py, cluster.py,
object_store.py and tidb.py). Each fails loudly
when its part is missing; nothing is skipped. Also the hook marking each test with the parts
it needs."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from deploy.spark import jvm_archive
from deploy.spark.local_cluster import SparkCluster
from tests.support.object_store import ObjectStore
from tests.support.parts import (
    Apicurio,
    Broker,
    FlatavroRegistry,
    SecuredBroker,
    not_in_fast_tier,
)
from tests.support.tidb import UpstreamTiDB

_FIXTURE_MARKS = {"kafka": "kafka", "spark": "spark", "spark_cluster": "spark",
                  "apicurio": "apicurio", "secured_kafka": "kafka", "object_store": "spark",
                  "upstream_tidb": "spark"}
_FOLDER_MARKS = {"spark": "spark", "bridge": "kafka"}
_FILE_MARKS = {"test_docs_browser.py": "browser", "test_console_browser.py": "browser",
               "test_fetch.py": "maven",
               "test_readme_quickstart.py": "apicurio", "test_kafka_settings.py": None,
               "test_evolution_plan.py": None, "test_kafka_options.py": None,
               "test_stream_metrics_counts.py": None, "test_helm.py": "helm",
               "test_object_store_settings.py": None, "test_preflight.py": None}


_LONG_FILES = {"test_stream_order.py": 18, "test_stream_database.py": 25,
               "test_changelog.py": 11, "test_object_store.py": 10.4,
               "test_stream_recovery.py": 9.5, "test_cluster.py": 8.8,
               "test_stream_iceberg.py": 6.7,
               "test_readme_streaming.py": 4.9, "test_stream_table_health.py": 4.5,
               "test_broker_restarts.py": 3.2, "test_stream_catalog.py": 2.8,
               "test_history.py": 2.5, "test_bridge_protocols.py": 4.4,
               "test_schemathesis.py": 1.9, "test_bridge_operations.py": 1.6,
               "test_bulk_read.py": 1.4, "test_deletion_vectors.py": 1.3,
               "test_flatread.py": 1.3, "test_limits.py": 1.3, "test_stream.py": 1.2,
               "test_secured_kafka.py": 1.1}
"""Files that take a minute or more: their minutes in a full `make test` (both workers busy,
measured with per-file wall times per worker), roughly; longest first."""


def pytest_configure(config: pytest.Config) -> None:
    """Every Spark driver the tests start in local mode (the `spark` session, and the jobs run
    as ``python -m spark_jobs...`` subprocesses, which inherit the environment) gets the C1 JIT
    alone, no whole-stage code generation (jvm_archive.NO_WHOLE_STAGE) and the class-data
    archive of deploy/spark/jvm_archive.py (when `make test` made it), through
    SPARK_SUBMIT_OPTS and an
    empty SPARK_CONF_DIR, unless the caller set either. The brokers deploy/kafka starts get
    the same JIT (and the serial collector) through KAFKA_JVM_PERFORMANCE_OPTS."""
    os.environ.setdefault("KAFKA_JVM_PERFORMANCE_OPTS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
    if not {"SPARK_CONF_DIR", "SPARK_SUBMIT_OPTS"} & set(os.environ) and \
            importlib.util.find_spec("pyspark") is not None:
        os.environ.update(jvm_archive.driver_env())


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`--dist loadfile` (the Makefile's) spreads the files as tests/support/scheduling.py
    explains: a worker busy with a long file queues a short one behind it, not a long one."""
    if config.getvalue("dist") != "loadfile":
        return None
    from tests.support.scheduling import ShortFileBehindLong

    return ShortFileBehindLong(config, log, minutes=_LONG_FILES)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test with the real parts it needs, from its fixtures, folder and file:
    `kafka` (a broker), `spark` (a Spark session or job), `apicurio` (Apicurio's JVM),
    `browser` (headless Chromium), `maven` (Maven Central), `helm` (the helm binary).
    `make check` runs the rest."""
    for item in items:
        path = Path(str(item.fspath))
        marks = {_FIXTURE_MARKS[f] for f in getattr(item, "fixturenames", ())
                 if f in _FIXTURE_MARKS}
        callspec = getattr(item, "callspec", None)
        if callspec is not None and callspec.params.get("registry") == "apicurio":
            marks.add("apicurio")
        if path.name in _FILE_MARKS:
            marks |= {_FILE_MARKS[path.name]} - {None}
            if _FILE_MARKS[path.name] is None:
                marks.discard(_FOLDER_MARKS.get(path.parent.name, ""))
        elif path.parent.name in _FOLDER_MARKS:
            marks.add(_FOLDER_MARKS[path.parent.name])
        for mark in sorted(marks):
            item.add_marker(mark)
    # Longest files first: with `--dist loadfile --no-loadscope-reorder` (the Makefile) xdist
    # hands files to workers in this order, so the long ones start at once instead of ending
    # the run alone on one worker (its default order is by number of tests per file).
    items.sort(key=lambda item: _LONG_FILES.get(Path(str(item.fspath)).name, 0), reverse=True)


@pytest.fixture(scope="session")
def kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    broker = Broker(tmp_path_factory.mktemp("kafka"))
    yield broker
    broker.stop()


@pytest.fixture(scope="session")
def secured_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecuredBroker]:
    """One broker of the secured profile (SASL_SSL, SCRAM-SHA-512, its own CA) for the
    session: the bridge and the Spark jobs use topics of their own."""
    broker = SecuredBroker(tmp_path_factory.mktemp("secured-kafka"))
    yield broker
    broker.stop()


@pytest.fixture(scope="session")
def apicurio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Apicurio]:
    """One Apicurio for the session: tests use subjects of their own."""
    registry = Apicurio(tmp_path_factory.mktemp("apicurio"))
    yield registry
    registry.stop()


@pytest.fixture(scope="session")
def flatavro_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FlatavroRegistry]:
    """One `flatavro serve` as a registry for the session: tests use subjects of their own."""
    registry = FlatavroRegistry(tmp_path_factory.mktemp("flatavro-registry"))
    yield registry
    registry.stop()


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """One local[2] Spark session with the Maven-cache jars for the test session."""
    not_in_fast_tier("a Spark session", "spark")
    from spark_jobs.session import build_session

    # This session lives as long as the worker: the C2 JIT pays off there (the table-health
    # test's 24 MERGEs took 153 s with it, 206 s with C1 alone).
    submit_opts = os.environ.get("SPARK_SUBMIT_OPTS")
    if submit_opts is not None:
        os.environ["SPARK_SUBMIT_OPTS"] = " ".join(
            option for option in submit_opts.split()
            if option not in (jvm_archive.C1_JIT, jvm_archive.C1_CODE_CACHE))
    try:
        session = build_session("flatavro-tests", "local[2]")
    finally:
        if submit_opts is not None:
            os.environ["SPARK_SUBMIT_OPTS"] = submit_opts
    yield session
    session.stop()


@pytest.fixture(scope="session")
def object_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ObjectStore]:
    """One SeaweedFS (S3 on loopback) for the session, marked `spark` like the object-storage
    tests (make test builds it); tests use buckets or prefixes of their own."""
    store = ObjectStore(tmp_path_factory.mktemp("seaweedfs"))
    yield store
    store.stop()


@pytest.fixture(scope="session")
def upstream_tidb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UpstreamTiDB]:
    """One TiDB server (unistore, on loopback) for the session, marked `spark` like the other
    built servers (make test builds it); tests use databases of their own."""
    tidb = UpstreamTiDB(tmp_path_factory.mktemp("tidb"))
    yield tidb
    tidb.stop()


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkCluster]:
    """One Spark standalone cluster (a master, two 1-core workers on loopback) for the test
    session; a test that kills a worker starts it again."""
    not_in_fast_tier("a Spark cluster", "spark")
    cluster = SparkCluster(tmp_path_factory.mktemp("spark-cluster"))
    yield cluster
    cluster.stop()
