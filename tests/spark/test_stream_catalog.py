"""Delta tables named in the session's catalog (``--table-name`` / ``--table-name-template``):
a stream into a Hive metastore (Spark's own, on Derby, as a Spark user configures one) makes
each table there, at the catalog's location, and finds it again by name after a restart;
``bulk_read --in-catalog`` writes named tables there too; the in-memory catalog, whose names
end with the job, is refused in one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from pyspark.sql import SparkSession

from spark_jobs.errors import JobError
from spark_jobs.sinks import delta
from tests.spark.test_bulk_read import service  # noqa: F401  (fixture)
from tests.spark.test_stream import change, send
from tests.spark.test_stream_database import registered
from tests.support.delta import read_delta
from tests.support.parts import ROOT, Broker


def metastore(tmp_path: Path) -> dict[str, str]:
    """The environment of a job whose session catalog is a Hive metastore on Derby in
    `tmp_path` (the settings a user puts in spark-defaults.conf, given here as the -D system
    properties Spark reads the same way: the tests' drivers share one conf folder)."""
    settings = {"spark.sql.catalogImplementation": "hive",
                "spark.sql.warehouse.dir": str(tmp_path / "warehouse"),
                "spark.hadoop.javax.jdo.option.ConnectionURL":
                    f"jdbc:derby:;databaseName={tmp_path / 'metastore_db'};create=true"}
    options = " ".join(f'"-D{name}={value}"' for name, value in settings.items())
    return {**os.environ, "SPARK_SUBMIT_OPTS": f"{os.environ.get('SPARK_SUBMIT_OPTS', '')} "
                                               f"{options}"}


def job(tmp_path: Path, broker: Broker, http: httpx.Client, module: str, *options: str
        ) -> subprocess.CompletedProcess[str]:
    """A run of `module` (``spark_jobs.stream`` or ``bulk_read``) on topics cat_a and cat_b
    with the metastore in `tmp_path`."""
    command = [sys.executable, "-m", module, "--topics", "cat_a,cat_b", "--bootstrap-servers",
               broker.bootstrap, "--service-url", str(http.base_url), "--master", "local[2]",
               *options]
    # Derby writes derby.log where the job runs
    return subprocess.run(command, cwd=tmp_path, env=metastore(tmp_path), capture_output=True,
                          text=True, timeout=600, check=False)


def stream(tmp_path: Path, broker: Broker, http: httpx.Client) -> subprocess.CompletedProcess[str]:
    """One available-now run of ``--table-name-template '{database}.{topic}'``."""
    return job(tmp_path, broker, http, "spark_jobs.stream", "--table-name-template",
               "{database}.{topic}", "--checkpoint", str(tmp_path / "checkpoint"),
               "--trigger", "available-now")


def test_tables_named_in_a_hive_metastore_are_made_there_and_found_again_after_a_restart(
        kafka: Broker, service: httpx.Client, tmp_path: Path) -> None:  # noqa: F811
    registered(kafka, service, "cat_a", "cat_b")  # both shop.items: {topic} tells them apart
    send(kafka, service, "cat_a", [change("insert", 1, "a", "1.00"),
                                   change("insert", 2, "b", "2.00")])
    send(kafka, service, "cat_b", [change("insert", 7, "z", "7.00")])

    first = stream(tmp_path, kafka, service)
    assert first.returncode == 0, first.stderr[-3000:]
    where = {t: tmp_path / "warehouse" / "shop.db" / t for t in ("cat_a", "cat_b")}
    for topic, path in where.items():  # the catalog's location for a managed table
        assert f"table shop.{topic}: created in the session's catalog, at file:{path}" in (
            first.stderr), first.stderr[-3000:]

    send(kafka, service, "cat_a", [change("update", 2, "b2", "2.50"), change("delete", 1)])
    send(kafka, service, "cat_b", [change("insert", 8, "y", "8.00")])
    second = stream(tmp_path, kafka, service)
    assert second.returncode == 0, second.stderr[-3000:]
    assert "created in the session's catalog" not in second.stderr  # found by name

    def rows(topic: str) -> list[tuple[object, ...]]:
        return sorted((r["id"], r["name"], str(r["price"]))
                      for r in read_delta(where[topic]).to_pylist())

    assert rows("cat_a") == [(2, "b2", "2.50")]
    assert rows("cat_b") == [(7, "z", "7.00"), (8, "y", "8.00")]

    # bulk_read into the same catalog: each topic's latest state as the table copy.<topic>
    copied = job(tmp_path, kafka, service, "spark_jobs.bulk_read", "--format", "delta",
                 "--in-catalog", "--output", "copy.{topic}", "--materialize")
    assert copied.returncode == 0, copied.stderr[-3000:]
    for topic in ("cat_a", "cat_b"):
        where[topic] = tmp_path / "warehouse" / "copy.db" / topic
    assert [r[:2] for r in rows("cat_a")] == [(2, "b2")]
    assert [r[:2] for r in rows("cat_b")] == [(7, "z"), (8, "y")]


def test_the_in_memory_catalog_is_refused_in_one_line(spark: SparkSession) -> None:
    assert spark.conf.get("spark.sql.catalogImplementation") == "in-memory"
    for name in ("shop.items", "spark_catalog.shop.items"):
        with pytest.raises(JobError, match=rf"the table {name}: the session's catalog is "
                                           r"Spark's in-memory one, whose names end with the "
                                           r"job"):
            delta.catalog_location(spark, name)


REFUSALS = """
from spark_jobs.errors import JobError
from spark_jobs.session import build_session
from spark_jobs.sinks import delta

spark = build_session("catalog-refusals", "local[1]")
spark.sql("CREATE DATABASE shop")
spark.sql("CREATE TABLE shop.plain (id INT) USING parquet")
spark.sql("CREATE VIEW shop.recent AS SELECT 1 AS id")
for name in ("shop.plain", "shop.recent", "shop.absent"):
    try:
        print(name, "->", delta.catalog_location(spark, name))
    except JobError as exc:
        print(name, "->", " ".join(str(exc).split()))
"""


def test_a_view_or_a_table_of_another_format_in_the_metastore_is_refused_by_name(
        tmp_path: Path) -> None:
    """`delta.catalog_location`, which the stream (each named table) and ``bulk_read
    --in-catalog`` ask first, on a real Hive metastore: a Parquet table or a view of that name is
    refused, naming the table and what it is; a name the catalog lacks is None (made there).
    A JobError's one line and exit 2: test_stream_recovery.py, test_main_exits_2_with_one_line."""
    done = subprocess.run([sys.executable, "-c", REFUSALS], cwd=tmp_path,
                          env={**metastore(tmp_path), "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    said = dict(line.split(" -> ", 1) for line in done.stdout.splitlines() if " -> " in line)
    assert said["shop.plain"] == ("the table shop.plain in the session's catalog is a parquet "
                                  "table, not a Delta table: give the stream another name")
    assert said["shop.recent"].startswith(
        "the table shop.recent in the session's catalog is not a Delta table: "), said
    assert said["shop.absent"] == "None"
