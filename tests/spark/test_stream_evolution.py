"""Schema changes applied to the Delta table: a real topic whose table gains, drops and widens
columns, then meets a change Delta cannot hold (the widening rules themselves, pure, are in
test_evolution_plan.py)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from pyspark.sql import SparkSession
from pyspark.testing import assertDataFrameEqual

from spark_jobs.errors import JobError
from spark_jobs.jobs.stream import run
from tests.spark.test_bulk_read import register, service  # noqa: F401  (fixture)
from tests.spark.test_stream import create_topic, send, stream, table
from tests.support.parts import Broker


def test_the_table_follows_added_dropped_and_widened_columns(
        spark: SparkSession, kafka: Broker, service: httpx.Client,  # noqa: F811
        tmp_path: Path) -> None:
    topic = "stream_evolve"
    create_topic(kafka, topic)
    register(service, "CREATE TABLE s.t (id INT PRIMARY KEY, name VARCHAR(20), qty INT)", topic)
    send(kafka, service, topic, [{"op": "insert", "row": {"id": 1, "name": "a", "qty": 1}},
                                 {"op": "insert", "row": {"id": 2, "name": "b", "qty": None}}])
    config = stream(tmp_path, kafka, service, topic)
    run(spark, config)
    # TiDB: DROP COLUMN name; MODIFY qty BIGINT; ADD COLUMN note ... DEFAULT 'n/a'.
    register(service, "CREATE TABLE s.t (id INT PRIMARY KEY, qty BIGINT, "
                      "note VARCHAR(10) NOT NULL DEFAULT 'n/a')", topic)
    send(kafka, service, topic, [{"op": "insert",
                                  "row": {"id": 3, "qty": 1 << 40, "note": "big"}}])
    run(spark, config)
    expected = spark.createDataFrame([(1, 1, "n/a"), (2, None, "n/a"), (3, 1 << 40, "big")],
                                     "id int, qty bigint, note string")
    assertDataFrameEqual(table(spark, config), expected)

    # With the subject's compatibility at NONE the registry takes what Delta cannot hold.
    done = service.put(f"/registry/config/{topic}-value", json={"compatibility": "NONE"})
    assert done.status_code == 200, done.text
    register(service, "CREATE TABLE s.t (id INT PRIMARY KEY, qty VARCHAR(5), "
                      "note VARCHAR(10) NOT NULL DEFAULT 'n/a')", topic)
    with pytest.raises(JobError, match="column qty changed from bigint to string"):
        run(spark, config)
    register(service, "CREATE TABLE s.t (id INT PRIMARY KEY, qty BIGINT, "
                      "note VARCHAR(10) NOT NULL DEFAULT 'n/a', extra INT NOT NULL)", topic)
    with pytest.raises(JobError, match=r"column\(s\) extra added to stream_evolve-value "
                                       r"without a default"):
        run(spark, config)
    assertDataFrameEqual(table(spark, config), expected)  # left as it was
