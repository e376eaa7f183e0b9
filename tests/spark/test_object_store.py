"""Delta tables and stream checkpoints on S3-compatible object storage: the jobs write to
``s3a://`` paths on a real SeaweedFS (S3 on loopback) with credentials from the standard AWS
variables or a profile, survive a SIGKILL with the checkpoint on the store too, and name a
missing credential, refused credentials, a missing bucket or an endpoint that does not answer
in one line. Tables are read back by Spark (S3A) and by delta-rs."""

from __future__ import annotations

import os
import random
import re
import subprocess
import sys
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest
from pyspark.sql import SparkSession

if TYPE_CHECKING:
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.table import Table

from deploy.spark.local_cluster import SparkCluster
from spark_jobs.errors import JobError
from spark_jobs.settings import object_store
from tests.spark.test_bulk_read import register, service  # noqa: F401  (fixture)
from tests.spark.test_cluster import SUBMIT_SH, assert_ran_on_executors, new_applications
from tests.spark.test_stream import ITEMS_V1, ITEMS_V2, change, create_topic, send
from tests.spark.test_stream_recovery import history, kill_at_random
from tests.support.delta import read_delta
from tests.support.harness import free_port
from tests.support.object_store import ObjectStore, spark_read
from tests.support.parts import ROOT, Broker


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ObjectStore]:
    server = ObjectStore(tmp_path_factory.mktemp("seaweedfs"))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def lake(store: ObjectStore) -> str:
    return store.bucket("lake")


@pytest.fixture(scope="module")
def refused_topic(kafka: Broker) -> str:
    create_topic(kafka, "s3a_refused")
    return "s3a_refused"


def bulk_read(kafka: Broker, service: httpx.Client, topic: str,  # noqa: F811
              *, output: str, env: dict[str, str], fmt: tuple[str, ...] = ("--format", "delta")
              ) -> subprocess.CompletedProcess[str]:
    """``spark_jobs.bulk_read`` of `topic` into `output` materialized (`fmt`: the format's
    options)."""
    return subprocess.run(
        [sys.executable, "-m", "spark_jobs.bulk_read",
         *bulk_read_args(kafka, service, topic, output, fmt=fmt), "--master", "local[2]"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)


def bulk_read_args(kafka: Broker, service: httpx.Client, topic: str,  # noqa: F811
                   output: str, *, fmt: tuple[str, ...] = ("--format", "delta")) -> list[str]:
    return ["--topic", topic, "--bootstrap-servers", kafka.bootstrap, "--service-url",
            str(service.base_url), "--output", output, *fmt, "--materialize"]


def by_delta_rs(store: ObjectStore, path: str) -> list[tuple[object, ...]]:
    table = read_delta(path, storage_options=store.storage_options())
    return sorted(tuple(str(v) if v is not None and not isinstance(v, int | str) else v
                        for v in row.values()) for row in table.to_pylist())


def test_bulk_read_writes_a_delta_table_with_a_profile(
        kafka: Broker, service: httpx.Client, store: ObjectStore,  # noqa: F811
        lake: str, tmp_path: Path) -> None:
    topic = "s3a_bulk"
    create_topic(kafka, topic)
    register(service, ITEMS_V1, topic)
    send(kafka, service, topic, [change("insert", 1, "a", "1.00"), change("insert", 2, "b", "2.50"),
                                 change("update", 1, "a2", "1.25"), change("delete", 2),
                                 change("insert", 3, "c", None)])
    # Credentials from a profile in a shared credentials file, none in the variables.
    credentials = tmp_path / "credentials"
    credentials.write_text(f"[lakehouse]\naws_access_key_id = {store.access_key}\n"
                           f"aws_secret_access_key = {store.secret_key}\n")
    env = store.env(AWS_ACCESS_KEY_ID="", AWS_SECRET_ACCESS_KEY="", AWS_PROFILE="lakehouse",
                    AWS_SHARED_CREDENTIALS_FILE=str(credentials),
                    AWS_CONFIG_FILE=str(tmp_path / "no-config"))
    output = f"{lake}/tables/{topic}"
    done = bulk_read(kafka, service, topic, output=output, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert store.secret_key not in done.stderr
    expected = [(1, "a2", "1.25"), (3, "c", None)]
    read = spark_read(output, env=env)
    assert read["columns"][:3] == ["id", "name", "price"]
    assert [row[:3] for row in read["rows"]] == expected
    assert [row[:3] for row in by_delta_rs(store, output)] == expected


def test_a_database_streamed_sigkilled_and_restarted_on_s3a_loses_and_doubles_nothing(
        kafka: Broker, service: httpx.Client, store: ObjectStore,  # noqa: F811
        lake: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whole-database mode on the store: a keyed and a keyless topic by pattern, tables from
    the template, the checkpoint on s3a too; SIGKILL at a random moment, then a restart."""
    seed = random.randrange(1 << 30)
    print(f"seed {seed}")
    keyed, keyless = "s3a_db_items", "s3a_db_log"
    for topic, ddl in ((keyed, ITEMS_V1), (keyless, ITEMS_V1.replace(" PRIMARY KEY", ""))):
        create_topic(kafka, topic)
        register(service, ddl, topic)
    changes, state = history(seed, 600)
    send(kafka, service, keyed, changes)
    log_changes = [c for c in history(seed + 1, 200)[0] if c["op"] != "delete"]
    send(kafka, service, keyless, log_changes)
    checkpoint = f"{lake}/checkpoints/s3a_db"
    env = store.env()
    for name, value in env.items():  # kill_at_random's child inherits this process's
        monkeypatch.setenv(name, value)

    def command(*extra: str) -> list[str]:
        return [sys.executable, "-m", "spark_jobs.stream", "--topic-pattern", "s3a_db_.*",
                "--bootstrap-servers", kafka.bootstrap, "--service-url", str(service.base_url),
                "--table-path-template", f"{lake}/tables/{{topic}}", "--checkpoint", checkpoint,
                "--master", "local[2]", *extra]

    killed = command("--trigger", "processing-time=1 seconds", "--max-offsets-per-trigger",
                     "100")
    assert kill_at_random(killed, random.Random(seed), tmp_path / "killed.log") == -9
    done = subprocess.run(command("--trigger", "available-now"), cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    for log in ((tmp_path / "killed.log").read_text(), done.stderr):
        assert store.secret_key not in log
    expected = sorted(state.values())
    read = spark_read(f"{lake}/tables/{keyed}", env=env, checkpoint=checkpoint)
    assert read["columns"] == ["id", "name", "price"]
    assert read["rows"] == expected
    assert read["commits"], "no batch committed to the checkpoint on s3a"
    assert by_delta_rs(store, f"{lake}/tables/{keyed}") == expected
    appended = read_delta(f"{lake}/tables/{keyless}",
                          storage_options=store.storage_options()).to_pylist()
    assert sorted((r["id"], r["name"]) for r in appended) == sorted(
        (c["row"]["id"], c["row"]["name"]) for c in log_changes)  # each change once
    assert len({(r["_partition"], r["_offset"]) for r in appended}) == len(log_changes)


FIX = "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE (~/.aws/credentials)"


@pytest.mark.parametrize(("case", "message"), [
    ("no credentials", "no AWS credentials for s3a://lake at http://127.0.0.1:{port}: " + FIX),
    ("wrong secret", "s3a://lake at http://127.0.0.1:{port} refused the credentials "
                     "(HTTP 403 SignatureDoesNotMatch): " + FIX),
    ("missing bucket", "the bucket nolake does not exist at http://127.0.0.1:{port}: create "
                       "it, or fix the path"),
    ("endpoint down", "the object store http://127.0.0.1:{down} does not answer (Connection "
                      "refused): start it, or fix AWS_ENDPOINT_URL"),
])
def test_each_failure_is_one_line(kafka: Broker, service: httpx.Client,  # noqa: F811
                                  store: ObjectStore, lake: str, refused_topic: str,
                                  tmp_path: Path, case: str, message: str) -> None:
    down = free_port()
    env = {"no credentials": store.env(AWS_ACCESS_KEY_ID="", AWS_SECRET_ACCESS_KEY="",
                                       AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"),
                                       AWS_CONFIG_FILE=str(tmp_path / "none"),
                                       AWS_EC2_METADATA_DISABLED="true"),
           "wrong secret": store.env(AWS_SECRET_ACCESS_KEY="not-the-secret"),
           "missing bucket": store.env(),
           "endpoint down": store.env(AWS_ENDPOINT_URL=f"http://127.0.0.1:{down}")}[case]
    register(service, ITEMS_V1, refused_topic)
    bucket = "nolake" if case == "missing bucket" else "lake"
    done = bulk_read(kafka, service, refused_topic, output=f"s3a://{bucket}/t", env=env)
    assert done.returncode == 2, done.stderr[-3000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last == "bulk_read: error: " + message.format(port=store.port, down=down), \
        done.stderr[-3000:]


def test_submit_sh_on_a_cluster_gives_executors_s3a_and_the_credentials(
        kafka: Broker, service: httpx.Client, store: ObjectStore,  # noqa: F811
        lake: str, spark_cluster: SparkCluster, tmp_path: Path) -> None:
    """The executors run in the workers' JVMs, whose environment has no AWS variables: they
    get hadoop-aws from the driver and the credentials as their environment."""
    topic = "s3a_cluster"
    create_topic(kafka, topic)
    register(service, ITEMS_V1, topic)
    send(kafka, service, topic, [change("insert", 1, "a", "1.00"), change("insert", 2, "b", "2.00"),
                                 change("update", 1, "a2", "1.10"), change("delete", 2)])
    before = spark_cluster.applications("flatavro-bulk-read")
    env = {**spark_cluster.env, **store.env(),
           "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
           "PYTHON": sys.executable, "PYSPARK_PYTHON": sys.executable,
           "SPARK_MASTER": spark_cluster.url, "FLATAVRO_ZIP": str(tmp_path / "flatavro.zip")}
    output = f"{lake}/tables/{topic}"
    done = subprocess.run([str(SUBMIT_SH), "--local-jars",
                           *bulk_read_args(kafka, service, topic, output)], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert store.secret_key not in done.stderr
    assert [row[:3] for row in by_delta_rs(store, output)] == [(1, "a2", "1.10")]
    [app] = new_applications(spark_cluster, "flatavro-bulk-read", before)
    assert_ran_on_executors(spark_cluster, app, "flatavro.zip")
    for log in spark_cluster.executor_logs(app).values():
        if "Running task" in log:
            assert re.search(r"/jars/hadoop-aws-[\d.]+\.jar", log)


def test_a_session_without_hadoop_aws_says_so(spark: SparkSession) -> None:
    """The tests' shared session has no s3a:// path, so no hadoop-aws: what a spark-submit
    without the jars meets."""
    with pytest.raises(JobError, match="^hadoop-aws is not on Spark's classpath: run the job "
                                       "with the jars of deploy/jvm/fetch.sh hadoop-aws"):
        object_store.check_paths(spark, ["s3a://lake/t"])


def iceberg_catalog(store: ObjectStore, sqlite: Path) -> SqlCatalog:
    """PyIceberg's view of a SQLite catalog whose warehouse is on the store."""
    from pyiceberg.catalog.sql import SqlCatalog

    return SqlCatalog("flatavro", uri=f"sqlite:///{sqlite}", **{
        "s3.endpoint": store.endpoint, "s3.access-key-id": store.access_key,
        "s3.secret-access-key": store.secret_key, "s3.region": "us-east-1"})


def iceberg_rows(table: Table, *columns: str) -> list[tuple[object, ...]]:
    """`columns` of the table's rows, sorted, decimals as strings."""
    return sorted(tuple(str(r[c]) if isinstance(r[c], Decimal) else r[c] for c in columns)
                  for r in table.scan().to_arrow().to_pylist())


def test_an_iceberg_database_on_s3a_sigkilled_restarted_and_evolved_loses_and_doubles_nothing(
        kafka: Broker, service: httpx.Client, store: ObjectStore,  # noqa: F811
        lake: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--format iceberg`` in whole-database mode with the warehouse on the store (the SQLite
    catalog on local disk) and the checkpoint on s3a too: a keyed and a keyless topic by
    pattern into the tables ``{database}.{table}``; SIGKILL at a random moment, a restart; then
    a version with a new column: the table gains it, old rows read its default. PyIceberg reads
    the tables from the store."""
    seed = random.randrange(1 << 30)
    print(f"seed {seed}")
    keyed, keyless = "s3a_ice_items", "s3a_ice_log"
    create_topic(kafka, keyed)
    register(service, ITEMS_V1, keyed)
    create_topic(kafka, keyless)
    register(service, ITEMS_V1.replace(" PRIMARY KEY", "").replace("shop.items", "shop.log"),
             keyless)
    changes, state = history(seed, 600)
    send(kafka, service, keyed, changes)
    log_changes = [c for c in history(seed + 1, 200)[0] if c["op"] != "delete"]
    send(kafka, service, keyless, log_changes)
    env = store.env()
    for name, value in env.items():  # kill_at_random's child inherits this process's
        monkeypatch.setenv(name, value)
    sqlite = tmp_path / "catalog.sqlite"

    def command(*extra: str) -> list[str]:
        return [sys.executable, "-m", "spark_jobs.stream", "--topic-pattern", "s3a_ice_.*",
                "--bootstrap-servers", kafka.bootstrap, "--service-url", str(service.base_url),
                "--format", "iceberg", "--iceberg-warehouse", f"{lake}/iceberg",
                "--iceberg-catalog-uri", f"jdbc:sqlite:{sqlite}",
                "--table-template", "{database}.{table}",
                "--checkpoint", f"{lake}/checkpoints/s3a_iceberg", "--master", "local[2]",
                "--max-offsets-per-trigger", "100", *extra]

    def finish() -> str:
        done = subprocess.run(command("--trigger", "available-now"), cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=600, check=False)
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stderr

    assert kill_at_random(command("--trigger", "processing-time=1 seconds"),
                          random.Random(seed), tmp_path / "killed.log") == -9
    logs = (tmp_path / "killed.log").read_text() + finish()
    catalog = iceberg_catalog(store, sqlite)
    items = catalog.load_table("shop.items")
    assert items.location().startswith(f"{lake}/iceberg/")
    assert iceberg_rows(items, "id", "name", "price") == sorted(state.values())
    appended = catalog.load_table("shop.log").scan().to_arrow().to_pylist()
    assert sorted((r["id"], r["name"]) for r in appended) == sorted(
        (c["row"]["id"], c["row"]["name"]) for c in log_changes)  # each change once
    # A version with a new column (DEFAULT 7): the rows already there read 7, as in TiDB.
    register(service, ITEMS_V2, keyed)
    send(kafka, service, keyed, [change("insert", 10_000, "new", "1.00", qty=70)])
    logs += finish()
    assert store.secret_key not in logs
    items = catalog.load_table("shop.items")
    assert iceberg_rows(items, "id", "qty") == sorted(
        [(k, 7) for k in state] + [(10_000, 70)])


def test_bulk_read_writes_an_iceberg_table_on_s3a(
        kafka: Broker, service: httpx.Client, store: ObjectStore,  # noqa: F811
        lake: str, tmp_path: Path) -> None:
    topic = "s3a_ice_bulk"
    create_topic(kafka, topic)
    register(service, ITEMS_V1, topic)
    send(kafka, service, topic, [change("insert", 1, "a", "1.00"), change("insert", 2, "b", "2.50"),
                                 change("update", 1, "a2", "1.25"), change("delete", 2)])
    sqlite = tmp_path / "catalog.sqlite"
    done = bulk_read(kafka, service, topic, output="shop.bulk", env=store.env(), fmt=(
        "--format", "iceberg", "--iceberg-warehouse", f"{lake}/bulk-iceberg",
        "--iceberg-catalog-uri", f"jdbc:sqlite:{sqlite}"))
    assert done.returncode == 0, done.stderr[-3000:]
    assert store.secret_key not in done.stderr
    table = iceberg_catalog(store, sqlite).load_table("shop.bulk")
    assert table.location().startswith(f"{lake}/bulk-iceberg/")
    assert iceberg_rows(table, "id", "name", "price") == [(1, "a2", "1.25")]
