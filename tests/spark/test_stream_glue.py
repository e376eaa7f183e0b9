"""The stream on topics framed for AWS Glue's Schema Registry (``glue://``, moto's server): a
Glue version registered while the stream runs is found by its UUID and the table evolves; a
whole database landed in the changelog (the frames as they came) is applied behind and read
fresh with the Glue registry."""

from __future__ import annotations

from pathlib import Path

import httpx
from deltalake import DeltaTable
from pyspark.sql import SparkSession
from pyspark.testing import assertDataFrameEqual

from spark_jobs.jobs import stream as stream_job
from spark_jobs.jobs.fresh import FreshSource, fresh_read
from spark_jobs.settings.config import Trigger
from spark_jobs.settings.tables import Topics
from tests.spark.test_bulk_read import register
from tests.spark.test_bulk_read_glue import glue_service, moto  # noqa: F401  (fixtures)
from tests.spark.test_stream import (
    ITEMS_V2,
    SCHEMA_V2,
    change,
    rows,
    running,
    send,
    stream,
    table,
)
from tests.spark.test_stream_database import many, registered
from tests.support.delta import read_delta
from tests.support.parts import Broker


def test_a_glue_version_registered_while_the_stream_runs(
        spark: SparkSession, kafka: Broker,
        glue_service: tuple[httpx.Client, str],  # noqa: F811
        tmp_path: Path) -> None:
    http, url = glue_service
    topic = "glue_live"
    registered(kafka, http, topic)
    send(kafka, http, topic, [change("insert", 1, "a", "1.00"), change("insert", 2, "b", "2.00"),
                              change("delete", 2), change("insert", 4, "d", "4.00")])
    config = stream(tmp_path, kafka, http, topic, service_url=None, registry_url=url,
                    trigger=Trigger(seconds=1))
    with running(spark, config) as wait_for:
        wait_for(lambda: table(spark, config).count() == 2)
        register(http, ITEMS_V2, topic)  # a second Glue version of glue_live-value
        send(kafka, http, topic, [change("insert", 3, "c", "3.00", qty=30),
                                  change("update", 1, "a2", "1.10", qty=10)])
        wait_for(lambda: "qty" in table(spark, config).columns
                 and table(spark, config).count() == 3)
    expected = [(1, "a2", "1.10", 10), (3, "c", "3.00", 30), (4, "d", "4.00", 7)]
    assertDataFrameEqual(table(spark, config), rows(spark, expected, SCHEMA_V2))


def test_glue_frames_land_in_the_changelog_and_are_applied_behind(
        spark: SparkSession, kafka: Broker,
        glue_service: tuple[httpx.Client, str],  # noqa: F811
        tmp_path: Path) -> None:
    http, url = glue_service
    registered(kafka, http, "glue_cl_a", "glue_cl_b")
    send(kafka, http, "glue_cl_a", [change("insert", 1, "a", "1.00"),
                                    change("update", 1, "a2", "1.10")])
    send(kafka, http, "glue_cl_b", [change("insert", 7, "z", "7.00"), change("delete", 7),
                                    change("insert", 8, "y", "8.00")])
    config = many(tmp_path, kafka, http, topics=Topics(names=("glue_cl_a", "glue_cl_b")),
                  changelog=str(tmp_path / "changelog"), service_url=None, registry_url=url)
    stream_job.run(spark, config)
    lake = tmp_path / "lake"
    assert {r["id"]: r["name"] for r in read_delta(lake / "glue_cl_a").to_pylist()} == {1: "a2"}
    assert read_delta(lake / "glue_cl_b").column("id").to_pylist() == [8]
    landed = DeltaTable(str(tmp_path / "changelog")).to_pyarrow_table().to_pylist()
    assert len(landed) == 5 and all(r["value"] is None or r["value"][:1] == b"\x03"
                                    for r in landed)
    # A Glue frame has no Confluent schema id: the UUID stays in the frame.
    assert {r["_value_schema_id"] for r in landed} == {None}

    # A new version of one table, landed; the fresh read decodes it before the apply does.
    register(http, ITEMS_V2, "glue_cl_a")
    send(kafka, http, "glue_cl_a", [change("insert", 2, "b", "2.00", qty=2)])
    stream_job.run(spark, config)
    fresh = fresh_read(spark, changelog_path=str(config.changelog), table=str(lake / "glue_cl_a"),
                       source=FreshSource(registry_url=url)).collect()
    assert sorted((r["id"], r["name"], r["qty"]) for r in fresh) == [(1, "a2", 7), (2, "b", 2)]
    assert sorted((r["id"], r["qty"]) for r in read_delta(lake / "glue_cl_a").to_pylist()) == [
        (1, 7), (2, 2)]
