"""Schema changes applied to the Delta table: the widening rules (pure), and a real topic whose
table gains, drops and widens columns, then meets a change Delta cannot hold."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import types as T
from pyspark.testing import assertDataFrameEqual

from spark_jobs.delta_table import plan_evolution
from spark_jobs.errors import JobError
from spark_jobs.stream import run
from tests.spark.conftest import Broker
from tests.spark.test_bulk_read import register, service  # noqa: F401  (fixture)
from tests.spark.test_stream import create_topic, send, stream, table


def schema(**columns: T.DataType) -> T.StructType:
    return T.StructType([T.StructField(n, t, True) for n, t in columns.items()])


@pytest.mark.parametrize(("old", "new"), [
    (T.ByteType(), T.ShortType()), (T.IntegerType(), T.LongType()),
    (T.FloatType(), T.DoubleType()), (T.DecimalType(8, 2), T.DecimalType(10, 3)),
    (T.IntegerType(), T.DecimalType(12, 2)), (T.DateType(), T.TimestampType())])
def test_widenings_are_planned(old: T.DataType, new: T.DataType) -> None:
    plan = plan_evolution(schema(id=T.IntegerType(), c=old),
                          schema(id=T.IntegerType(), c=new, d=T.StringType()), "s-value")
    assert (plan.added, plan.removed, plan.widened) == (("d",), (), ("c",))


@pytest.mark.parametrize(("old", "new"), [
    (T.LongType(), T.IntegerType()), (T.DoubleType(), T.FloatType()),
    (T.IntegerType(), T.StringType()), (T.StringType(), T.LongType()),
    (T.DecimalType(10, 2), T.DecimalType(10, 3)), (T.DecimalType(10, 2), T.DecimalType(9, 2)),
    (T.LongType(), T.DecimalType(12, 2)), (T.TimestampType(), T.DateType())])
def test_other_type_changes_stop_with_what_to_do(old: T.DataType, new: T.DataType) -> None:
    change = re.escape(f"column c changed from {old.simpleString()} to {new.simpleString()} "
                       f"in the latest version of s-value;")
    with pytest.raises(JobError, match=f"{change} .* rebuild it"):
        plan_evolution(schema(c=old), schema(c=new), "s-value")


def test_no_change_plans_nothing() -> None:
    same = schema(id=T.IntegerType(), name=T.StringType())
    assert not plan_evolution(same, same, "s-value")


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
