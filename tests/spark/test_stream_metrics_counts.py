"""The stream metrics' bookkeeping without Spark: lag from the Kafka source's offset JSON, and
what the batch function reports counted only with the batch Spark reports complete (the
listener hears of batch N after batch N+1 may have begun)."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from spark_jobs.jobs.stream_metrics import StreamMetrics, partition_lag
from spark_jobs.settings.config import parse_stream_args

ARGV = ["--topic", "t", "--bootstrap-servers", "b:9092", "--registry-url", "http://r",
        "--table-path", "p", "--checkpoint", "c"]


def offsets(**partitions: int) -> str:
    return json.dumps({"orders": {p.removeprefix("p"): o for p, o in partitions.items()}})


def progress(batch_id: int, *, end: str, latest: str, ran: bool = True) -> Any:
    durations = {"addBatch": 900, "triggerExecution": 1000} if ran else {"latestOffset": 3}
    return SimpleNamespace(batchId=batch_id, batchDuration=1250, durationMs=durations,
                           sources=[SimpleNamespace(endOffset=end, latestOffset=latest)])


def scrape(metrics: StreamMetrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = generate_latest(metrics.registry).decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_lag_is_latest_minus_end_per_partition() -> None:
    assert partition_lag(end_offset=offsets(p0=5, p1=7), latest_offset=offsets(p0=9, p1=7)) == {
        ("orders", 0): 4, ("orders", 1): 0}
    assert partition_lag(end_offset=offsets(p0=5), latest_offset="null") == {}
    assert partition_lag(end_offset=None, latest_offset=offsets(p0=1)) == {}


def test_a_batch_counts_when_spark_reports_it_complete() -> None:
    metrics = StreamMetrics()
    metrics.read(0, messages=4)
    metrics.applied({"numTargetRowsInserted": "3", "numTargetRowsUpdated": "1",
                     "numTargetRowsDeleted": "0"}, keyed=True)
    metrics.read(1, messages=2)  # batch 1 began before the listener heard of batch 0
    metrics.applied({"numTargetRowsDeleted": "2"}, keyed=True)
    before = scrape(metrics)
    assert before[("flatavro_stream_messages_total", ())] == 0
    assert before[("flatavro_stream_last_batch_id", ())] == -1

    metrics.progressed(progress(0, end=offsets(p0=4), latest=offsets(p0=6)))
    first = scrape(metrics)
    assert first[("flatavro_stream_batches_total", ())] == 1
    assert first[("flatavro_stream_messages_total", ())] == 4
    assert first[("flatavro_stream_rows_total", (("change", "inserted"),))] == 3
    assert first[("flatavro_stream_rows_total", (("change", "deleted"),))] == 0
    assert first[("flatavro_stream_lag", (("partition", "0"), ("topic", "orders")))] == 2
    assert first[("flatavro_stream_last_batch_seconds", ())] == 1.25

    metrics.progressed(progress(1, end=offsets(p0=6), latest=offsets(p0=6)))
    metrics.progressed(progress(1, end=offsets(p0=6), latest=offsets(p0=6)))  # heard twice
    second = scrape(metrics)
    assert second[("flatavro_stream_batches_total", ())] == 2
    assert second[("flatavro_stream_messages_total", ())] == 6
    assert second[("flatavro_stream_rows_total", (("change", "deleted"),))] == 2
    assert second[("flatavro_stream_lag", (("partition", "0"), ("topic", "orders")))] == 0


def test_an_idle_report_moves_only_the_lag_and_an_append_counts_as_inserted() -> None:
    metrics = StreamMetrics()
    metrics.read(0, messages=3)
    metrics.applied({"numOutputRows": "3"}, keyed=False)
    metrics.progressed(progress(0, end=offsets(p0=3, p1=0), latest=offsets(p0=5, p1=1)))
    metrics.progressed(progress(1, end=offsets(p0=5, p1=1), latest=offsets(p0=5, p1=1),
                                ran=False))
    idle = scrape(metrics)
    assert idle[("flatavro_stream_batches_total", ())] == 1
    assert idle[("flatavro_stream_rows_total", (("change", "inserted"),))] == 3
    assert {labels: v for (name, labels), v in idle.items() if name == "flatavro_stream_lag"} == {
        (("partition", "0"), ("topic", "orders")): 0, (("partition", "1"), ("topic", "orders")): 0}
    metrics.progressed(progress(1, end=offsets(p0=5), latest=offsets(p0=8)))
    metrics.caught_up()
    assert scrape(metrics)[("flatavro_stream_lag", (("partition", "0"), ("topic", "orders")))] == 0


def test_metrics_options_default_to_none_on_loopback() -> None:
    default = parse_stream_args(ARGV)
    assert (default.metrics_port, default.metrics_host) == (None, "127.0.0.1")
    given = parse_stream_args([*ARGV, "--metrics-port", "9400", "--metrics-host", "0.0.0.0"])
    assert (given.metrics_port, given.metrics_host) == (9400, "0.0.0.0")


@pytest.mark.parametrize("value", ["0", "65536", "http", "-1"])
def test_a_bad_metrics_port_exits_2_naming_it(value: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        parse_stream_args([*ARGV, "--metrics-port", value])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert f"argument --metrics-port: {value!r} is not a port number from 1 to 65535" in err
    assert len(err.strip().splitlines()) == 1
