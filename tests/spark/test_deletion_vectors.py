"""Deletion vectors in the stream's table: on for a table the stream creates for a keyed topic
(MERGE then marks rows deleted instead of rewriting files; the table's history says so), kept
through a schema change, off for a keyless topic's append-only table; `--deletion-vectors off`
for readers that cannot read them; an existing table keeps its setting unless asked, and a
table with them is refused under `off`. Every table is read back with Spark and with delta-rs
(`QueryBuilder`, which reads deletion vectors); tables without them also with delta-rs's
pyarrow path, which cannot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from deltalake import DeltaTable
from deltalake.exceptions import DeltaProtocolError
from pyarrow import fs
from pyspark.sql import SparkSession
from pyspark.testing import assertDataFrameEqual

from spark_jobs.errors import JobError
from spark_jobs.jobs import stream as stream_job
from spark_jobs.jobs.stream import run
from spark_jobs.settings.config import StreamConfig
from spark_jobs.sinks.upkeep import DELETION_VECTORS_FEATURE, DELETION_VECTORS_PROPERTY
from tests.spark.test_bulk_read import encode, register, service  # noqa: F401  (fixture)
from tests.spark.test_stream import (
    ITEMS_V1,
    ITEMS_V2,
    SCHEMA_V1,
    SCHEMA_V2,
    by_delta_rs,
    change,
    create_topic,
    produce_by_key,
    rows,
    send,
    stream,
    table,
)
from tests.support.parts import Broker

FIRST = [change("insert", i, f"n{i}", f"{i}.00") for i in range(1, 9)]
SECOND = [change("update", 2, "b2", "2.50"), change("delete", 3), change("update", 5, "e2", "5.50"),
          change("delete", 8), change("insert", 9, "i", "9.00")]
AFTER_SECOND = [(1, "n1", "1.00"), (2, "b2", "2.50"), (4, "n4", "4.00"), (5, "e2", "5.50"),
                (6, "n6", "6.00"), (7, "n7", "7.00"), (9, "i", "9.00")]


def merge_metrics(spark: SparkSession, path: str) -> list[dict[str, str]]:
    """The operation metrics of the table's MERGE commits, oldest first."""
    history = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").orderBy("version").collect()
    return [h.operationMetrics for h in history if h.operation == "MERGE"]


def vectors_added(spark: SparkSession, path: str) -> list[int]:
    return [int(m["numTargetDeletionVectorsAdded"]) for m in merge_metrics(spark, path)]


def protocol(path: str) -> tuple[list[str], dict[str, str]]:
    """The table's reader features and properties, as delta-rs sees them."""
    table = DeltaTable(path)
    return table.protocol().reader_features or [], table.metadata().configuration


def two_runs(spark: SparkSession, config: StreamConfig, kafka: Broker,
             http: httpx.Client) -> None:
    """Inserts, then updates and deletes of rows already in the table (two MERGEs)."""
    send(kafka, http, config.topic, FIRST)
    run(spark, config)
    send(kafka, http, config.topic, SECOND)
    run(spark, config)


def by_pyarrow_path(path: str) -> list[tuple[Any, ...]]:
    """The table read with delta-rs's pyarrow path, which refuses deletion vectors; through a
    pyarrow filesystem, not deltalake's Python one, so the interpreter exits cleanly
    (docs/streaming.md, Reading the table with delta-rs)."""
    local = fs.SubTreeFileSystem(path, fs.LocalFileSystem())
    return sorted(tuple(r.values()) for r in DeltaTable(path).to_pyarrow_table(
        filesystem=local).to_pylist())


def with_fields(config: StreamConfig, **changes: Any) -> StreamConfig:
    return StreamConfig(**{**{n: getattr(config, n) for n in StreamConfig.__slots__},
                           **changes})


def test_the_stream_creates_tables_with_deletion_vectors(
        spark: SparkSession, kafka: Broker, service: httpx.Client,  # noqa: F811
        tmp_path: Path) -> None:
    topic = "dv_default"
    create_topic(kafka, topic)
    register(service, ITEMS_V1, topic)
    config = stream(tmp_path, kafka, service, topic)
    two_runs(spark, config, kafka, service)

    features, properties = protocol(config.table_path)
    assert DELETION_VECTORS_FEATURE in features
    assert properties[DELETION_VECTORS_PROPERTY] == "true"
    # Updates and deletes of rows in the table mark them in deletion vectors: no file rewritten.
    second = merge_metrics(spark, config.table_path)[-1]
    assert int(second["numTargetDeletionVectorsAdded"]) > 0
    assert int(second["numTargetFilesRemoved"]) == 0
    assertDataFrameEqual(table(spark, config), rows(spark, AFTER_SECOND, SCHEMA_V1))
    assert by_delta_rs(config) == sorted(tuple(r) for r in rows(spark, AFTER_SECOND,
                                                                 SCHEMA_V1).collect())
    # delta-rs's pyarrow path refuses such a table, naming the feature (docs/streaming.md).
    with pytest.raises(DeltaProtocolError, match=DELETION_VECTORS_FEATURE):
        DeltaTable(config.table_path).to_pyarrow_table()

    # A schema change rewrites the table in one commit: it keeps its deletion vectors.
    register(service, ITEMS_V2, topic)
    send(kafka, service, topic, [change("update", 1, "a3", "1.75", qty=10), change("delete", 4)])
    run(spark, config)
    assert protocol(config.table_path)[1][DELETION_VECTORS_PROPERTY] == "true"
    assert vectors_added(spark, config.table_path)[-1] > 0
    expected = [(1, "a3", "1.75", 10)] + [r + (7,) for r in AFTER_SECOND if r[0] not in (1, 4)]
    assertDataFrameEqual(table(spark, config), rows(spark, expected, SCHEMA_V2))
    assert by_delta_rs(config) == sorted(tuple(r) for r in rows(spark, expected,
                                                                 SCHEMA_V2).collect())


def test_deletion_vectors_off_and_existing_tables(
        spark: SparkSession, kafka: Broker, service: httpx.Client,  # noqa: F811
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    topic = "dv_off"
    create_topic(kafka, topic)
    register(service, ITEMS_V1, topic)
    off = stream(tmp_path, kafka, service, topic, deletion_vectors=False)
    two_runs(spark, off, kafka, service)
    features, properties = protocol(off.table_path)
    assert DELETION_VECTORS_FEATURE not in features
    assert properties[DELETION_VECTORS_PROPERTY] == "false"
    assert vectors_added(spark, off.table_path) == [0, 0]  # copy-on-write: files rewritten
    expected = sorted(tuple(r) for r in rows(spark, AFTER_SECOND, SCHEMA_V1).collect())
    # Readers without deletion vectors read it: delta-rs's pyarrow path too.
    assert by_pyarrow_path(off.table_path) == expected

    # The default on an existing table without them: it keeps its setting, and says so.
    capsys.readouterr()
    default = with_fields(off, deletion_vectors=None)
    stream_job.prepare(spark, default)
    assert f"the table {off.table_path} keeps its setting: no deletion vectors" in \
        capsys.readouterr().err
    assert DELETION_VECTORS_FEATURE not in protocol(off.table_path)[0]

    # Asked for: enabled (a protocol upgrade), said so; the next MERGE writes them.
    stream_job.prepare(spark, with_fields(off, deletion_vectors=True))
    assert f"deletion vectors enabled on the table {off.table_path}" in capsys.readouterr().err
    features, properties = protocol(off.table_path)
    assert DELETION_VECTORS_FEATURE in features
    assert properties[DELETION_VECTORS_PROPERTY] == "true"
    send(kafka, service, topic, [change("update", 6, "f2", "6.60")])
    run(spark, default)
    assert vectors_added(spark, off.table_path)[-1] > 0
    expected_after = [r if r[0] != 6 else (6, "f2", "6.60") for r in AFTER_SECOND]
    assertDataFrameEqual(table(spark, default), rows(spark, expected_after, SCHEMA_V1))

    # Now `off` is refused before anything is written (no checkpoint claimed), naming the
    # table feature and the option.
    fresh = with_fields(off, checkpoint=str(tmp_path / "fresh-checkpoint"))
    with pytest.raises(JobError, match=f"has the table feature {DELETION_VECTORS_FEATURE} .*"
                                       f"--deletion-vectors off"):
        stream_job.prepare(spark, fresh)
    assert not (tmp_path / "fresh-checkpoint").exists()


def test_a_keyless_topics_append_only_table_has_none(
        spark: SparkSession, kafka: Broker, service: httpx.Client,  # noqa: F811
        tmp_path: Path) -> None:
    topic = "dv_keyless"
    create_topic(kafka, topic)
    register(service, "CREATE TABLE shop.log (id INT, note VARCHAR(20))", topic)
    produce_by_key(kafka, topic, encode(service, topic, [
        {"op": "insert", "row": {"id": 1, "note": "x"}},
        {"op": "update", "row": {"id": 1, "note": "y"}}]), [0, 0])
    config = stream(tmp_path, kafka, service, topic)
    run(spark, config)
    features, properties = protocol(config.table_path)
    assert DELETION_VECTORS_FEATURE not in features
    assert properties[DELETION_VECTORS_PROPERTY] == "false"
    # Every Delta reader reads it, delta-rs's pyarrow path too.
    assert [row[:2] for row in by_pyarrow_path(config.table_path)] == [(1, "x"), (1, "y")]
