"""A long-running stream keeps its table healthy: 24 micro-batches of 2,000 changes each go
through the job's own batch function (`BatchApplier`, what ``foreachBatch`` calls), with
``OPTIMIZE`` every 6 batches (4 compactions); the table's file count stays bounded at every
batch, Delta writes its own log checkpoints, and the table read with delta-rs equals the state
computed by hand. Fewer, larger batches than a real stream's reach the same bound through the
same OPTIMIZE path: a MERGE adds at most one file per shuffle partition whatever its size, so
the number of batches between compactions, not their size, is what the bound is about.

The batches are DataFrames of the Kafka source's columns built in-process from messages the
service encoded, not read from a broker: Kafka's part of a micro-batch is covered by the
end-to-end tests (tests/spark/test_stream.py), and this keeps the file to a minute or two."""

from __future__ import annotations

import datetime
import json
import random
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
from deltalake import DeltaTable
from pyspark.sql import DataFrame, SparkSession

from spark_jobs.jobs import stream as stream_job
from spark_jobs.sinks.columns import KAFKA_SCHEMA
from tests.spark.test_bulk_read import encode, register, service  # noqa: F401  (fixture)
from tests.spark.test_stream import ITEMS_V1, PARTITIONS, change, create_topic, stream
from tests.support.delta import read_delta
from tests.support.parts import Broker

BATCHES, CHANGES, OPTIMIZE_EVERY = 24, 2_000, 6
MAX_FILES_PER_MERGE = 4
"""The test session's spark.sql.shuffle.partitions: a MERGE writes at most one file per
shuffle partition."""

Row = tuple[int, str, Decimal]


class Changes:
    """Random changes (80% inserts of new keys, 15% updates and 5% deletes of live keys, as
    bench_stream makes them) and the table they leave, computed by hand."""

    def __init__(self, seed: int) -> None:
        self.rng, self.live, self.next_id = random.Random(seed), [], 0
        self.state: dict[int, Row] = {}

    def batch(self, n: int) -> list[dict[str, Any]]:
        changes = []
        for _ in range(n):
            draw = self.rng.random()
            if draw < 0.80 or not self.live:
                row_id, self.next_id = self.next_id, self.next_id + 1
                self.live.append(row_id)
                changes.append(self._upsert("insert", row_id))
            elif draw < 0.95:
                changes.append(self._upsert("update", self.rng.choice(self.live)))
            else:
                at = self.rng.randrange(len(self.live))
                self.live[at], self.live[-1] = self.live[-1], self.live[at]
                row_id = self.live.pop()
                del self.state[row_id]
                changes.append(change("delete", row_id))
        return changes

    def _upsert(self, op: str, row_id: int) -> dict[str, Any]:
        price = f"{self.rng.randrange(100_000) / 100:.2f}"
        self.state[row_id] = (row_id, f"{op[0]}{row_id}", Decimal(price))
        return change(op, row_id, f"{op[0]}{row_id}", price)


class Partitions:
    """Kafka source rows for encoded messages: partition id % 3, offsets counting per
    partition across batches (what the Kafka source would give the batch function)."""

    def __init__(self, topic: str) -> None:
        self.topic, self.offsets = topic, [0] * PARTITIONS

    def rows(self, messages: list[tuple[bytes | None, bytes | None]],
             ids: list[int]) -> list[tuple[Any, ...]]:
        now, rows = datetime.datetime.now(datetime.UTC).replace(tzinfo=None), []
        for (key, value), row_id in zip(messages, ids, strict=True):
            partition = row_id % PARTITIONS
            rows.append((key, value, self.topic, partition, self.offsets[partition], now))
            self.offsets[partition] += 1
        return rows


def file_count(path: str) -> int:
    """The table's active data files (delta-rs reads the log only)."""
    return len(DeltaTable(path).file_uris())


def test_micro_batches_between_optimizes_keep_the_file_count_bounded(
        spark: SparkSession, kafka: Broker, service: httpx.Client,  # noqa: F811
        tmp_path: Path) -> None:
    topic = "stream_health"
    create_topic(kafka, topic)
    register(service, ITEMS_V1, topic)
    config = stream(tmp_path, kafka, service, topic, optimize_every=OPTIMIZE_EVERY)
    applier = stream_job.prepare(spark, config)
    changes, partitions, files = Changes(seed=24), Partitions(topic), []
    for batch_id in range(BATCHES):
        batch = changes.batch(CHANGES)
        messages = encode(service, topic, batch)
        frame: DataFrame = spark.createDataFrame(
            partitions.rows(messages, [c["row"]["id"] for c in batch]), KAFKA_SCHEMA)
        applier(frame, batch_id)
        files.append(file_count(config.table_path))

    got = read_delta(config.table_path, order_by="id")
    assert [tuple(r.values()) for r in got.to_pylist()] == sorted(changes.state.values())

    history = spark.sql(f"DESCRIBE HISTORY delta.`{config.table_path}`").select(
        "operation", "operationMetrics").collect()
    merges = [h.operationMetrics for h in history if h.operation == "MERGE"]
    assert len(merges) == BATCHES
    assert sum(int(m["numTargetDeletionVectorsAdded"]) for m in merges) > 0
    assert sum(1 for h in history if h.operation == "OPTIMIZE") == BATCHES // OPTIMIZE_EVERY

    # The bound: what one OPTIMIZE leaves, plus what the MERGEs since the last one added.
    after_optimize = min(files[OPTIMIZE_EVERY - 1::OPTIMIZE_EVERY])
    bound = after_optimize + OPTIMIZE_EVERY * MAX_FILES_PER_MERGE
    print(f"files: at most {max(files)} (bound {bound}), after each OPTIMIZE "
          f"{files[OPTIMIZE_EVERY - 1::OPTIMIZE_EVERY]}, per MERGE "
          f"{sum(int(m['numTargetFilesAdded']) for m in merges) / BATCHES:.1f} added")
    assert max(files) <= bound, files
    assert files[-1] <= 2 * after_optimize  # the last batch was followed by an OPTIMIZE

    # Log checkpoints are Delta's own, every delta.checkpointInterval (10) commits.
    log = Path(config.table_path) / "_delta_log"
    last = json.loads((log / "_last_checkpoint").read_text())["version"]
    assert last >= DeltaTable(config.table_path).version() - 10
    assert len(list(log.glob("*.checkpoint.parquet"))) >= BATCHES // 10


def test_a_batch_re_run_after_its_optimize_is_still_recognised(
        spark: SparkSession, kafka: Broker, service: httpx.Client,  # noqa: F811
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    topic = "stream_health_rerun"
    create_topic(kafka, topic)
    register(service, ITEMS_V1, topic)
    applier = stream_job.prepare(spark, stream(tmp_path, kafka, service, topic,
                                               optimize_every=2))
    changes, partitions = Changes(seed=7), Partitions(topic)
    frames = []
    for batch_id in range(2):
        batch = changes.batch(10)
        frames.append(spark.createDataFrame(partitions.rows(
            encode(service, topic, batch), [c["row"]["id"] for c in batch]), KAFKA_SCHEMA))
        applier(frames[-1], batch_id)
    log = capsys.readouterr().err
    assert re.search(r"after batch 1: OPTIMIZE \d+ file\(s\) compacted into 1 in ", log), log
    applier(frames[-1], 1)  # Spark re-runs batch 1 after a crash before its commit
    log = capsys.readouterr().err
    assert "batch 1: 10 message(s), already in the table (a re-run batch: skipped)" in log, log
    got = read_delta(tmp_path / "table", order_by="id")
    assert [tuple(r.values()) for r in got.to_pylist()] == sorted(changes.state.values())
