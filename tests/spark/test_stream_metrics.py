"""--metrics-port: the stream's Prometheus endpoint, scraped over HTTP while a real query runs
(real broker, 3 partitions, real Delta MERGEs), its numbers checked against the data produced
and against the checkpoint's own record of committed batches."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from pyspark.sql import SparkSession

from spark_jobs.errors import JobError
from spark_jobs.jobs.stream import run
from spark_jobs.settings.config import StreamConfig, Trigger
from tests.spark.test_bulk_read import register, service  # noqa: F401  (fixture)
from tests.spark.test_stream import ITEMS_V1, change, create_topic, send, stream
from tests.support.harness import free_port
from tests.support.parts import Broker

TABLE = "shop.items"
"""The table label: the value schema's database and record name (ITEMS_V1's shop.items)."""

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(port: int) -> Samples:
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples[(name, tuple(sorted(labels.items())))]


def table_rows(samples: Samples, change: str) -> dict[str, float]:
    """``flatavro_stream_rows_total`` of `change` by table."""
    return {dict(labels)["table"]: number for (name, labels), number in samples.items()
            if name == "flatavro_stream_rows_total" and dict(labels)["change"] == change}


def lag(samples: Samples, topic: str) -> dict[int, float]:
    return {int(dict(labels)["partition"]): number for (name, labels), number in samples.items()
            if name == "flatavro_stream_lag" and dict(labels)["topic"] == topic}


def committed_batches(config: StreamConfig) -> list[int]:
    """The batch ids the checkpoint's commit log holds (Spark's record, not the metrics')."""
    return sorted(int(p.name) for p in (Path(config.checkpoint) / "commits").iterdir()
                  if p.name.isdigit())


def wait_for(port: int, done: Callable[[Samples], bool], *, seen: list[Samples],
             runner: threading.Thread, seconds: float = 180) -> Samples:
    """Scrape every 0.1 s until `done` holds (each scrape kept in `seen`)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert runner.is_alive(), "the stream ended early"
        samples = scrape(port)
        seen.append(samples)
        if done(samples):
            return samples
        time.sleep(0.1)
    raise AssertionError(f"metrics never reached the expected values; last scrape: {seen[-1]}")


def test_metrics_follow_the_batches_rows_and_lag_while_the_query_runs(
        spark: SparkSession, kafka: Broker, service: httpx.Client,  # noqa: F811
        tmp_path: Path) -> None:
    topic = "stream_metrics_items"
    create_topic(kafka, topic)
    register(service, ITEMS_V1, topic)
    send(kafka, service, topic, [change("insert", i, f"n{i}", f"{i}.00") for i in range(1, 10)])
    port = free_port()
    config = stream(tmp_path, kafka, service, topic, trigger=Trigger(seconds=0.2),
                    max_offsets_per_trigger=3, metrics_port=port, metrics_host="127.0.0.1")
    stop, failures = threading.Event(), list[JobError]()

    def runner() -> None:
        try:
            run(spark, config, stop=stop)
        except JobError as exc:
            failures.append(exc)

    thread = threading.Thread(target=runner)
    thread.start()
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # the server starts once the table is ready
            try:
                scrape(port)
                break
            except httpx.TransportError:
                assert thread.is_alive(), failures
                time.sleep(0.2)
        seen: list[Samples] = []

        # 9 inserts, 3 per partition, at most 3 messages per micro-batch: lag shrinks by
        # batches; every scrape is one consistent snapshot of a batch's progress.
        first = wait_for(port, lambda s: value(s, "flatavro_stream_messages_total") == 9
                         and set(lag(s, topic).values()) == {0}, seen=seen, runner=thread)
        for samples in seen:
            if lag(samples, topic):
                assert (value(samples, "flatavro_stream_messages_total")
                        + sum(lag(samples, topic).values())) == 9
        assert [s for s in seen if sum(lag(s, topic).values()) > 0], "no scrape saw a lag"
        assert set(lag(first, topic)) == {0, 1, 2}
        assert table_rows(first, "inserted") == {TABLE: 9}

        # Changes to existing rows, one per key: 3 updates and 2 deletes whatever the batching.
        send(kafka, service, topic, [change("update", 1, "u1", "1.10"),
                                     change("update", 2, "u2", "2.20"),
                                     change("update", 3, "u3", "3.30"),
                                     change("delete", 4), change("delete", 5)])
        last = wait_for(port, lambda s: value(s, "flatavro_stream_messages_total") == 14
                        and set(lag(s, topic).values()) == {0}, seen=seen, runner=thread)
        assert {change: table_rows(last, change)[TABLE]
                for change in ("inserted", "updated", "deleted")} == {
            "inserted": 9, "updated": 3, "deleted": 2}
        assert value(last, "flatavro_stream_table_last_batch_seconds", table=TABLE) > 0
        assert value(last, "flatavro_stream_table_schema_id", table=TABLE) >= 1
        assert {dict(labels)["table"] for (name, labels) in last
                if name == "flatavro_stream_lag"} == {TABLE}
        batches = committed_batches(config)
        assert value(last, "flatavro_stream_batches_total") == len(batches) >= 5
        assert value(last, "flatavro_stream_last_batch_id") == batches[-1]
        assert value(last, "flatavro_stream_last_batch_seconds") > 0
    finally:
        stop.set()
        thread.join(60)
    assert not thread.is_alive() and not failures, failures
    with pytest.raises(httpx.ConnectError):  # the endpoint ends with the query
        scrape(port)


def test_a_busy_metrics_port_is_one_line_naming_the_option(
        spark: SparkSession, kafka: Broker, service: httpx.Client,  # noqa: F811
        tmp_path: Path) -> None:
    topic = "stream_metrics_busy"
    create_topic(kafka, topic)
    register(service, ITEMS_V1, topic)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        config = stream(tmp_path, kafka, service, topic, metrics_port=port,
                        metrics_host="127.0.0.1")
        with pytest.raises(JobError, match=rf"^--metrics-port {port}: cannot listen on "
                                           rf"127\.0\.0\.1:{port} \(.*\); choose a free port$"):
            run(spark, config)
    assert not spark.streams.active
