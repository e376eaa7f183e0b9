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


TABLE = (("table", "shop.orders"),)
LAG0 = (("partition", "0"), ("table", "shop.orders"), ("topic", "orders"))


def rows(change: str, table: str = "shop.orders") -> tuple[tuple[str, str], ...]:
    return (("change", change), ("table", table))


def test_a_batch_counts_when_spark_reports_it_complete() -> None:
    metrics = StreamMetrics()
    metrics.table("orders", "shop.orders", schema_id=3)
    metrics.read(0, messages=4)
    metrics.applied({"numTargetRowsInserted": "3", "numTargetRowsUpdated": "1",
                     "numTargetRowsDeleted": "0"}, keyed=True, table="shop.orders")
    metrics.took("shop.orders", 0.75)
    metrics.read(1, messages=2)  # batch 1 began before the listener heard of batch 0
    metrics.applied({"numTargetRowsDeleted": "2"}, keyed=True, table="shop.orders")
    before = scrape(metrics)
    assert before[("flatavro_stream_messages_total", ())] == 0
    assert before[("flatavro_stream_last_batch_id", ())] == -1

    metrics.progressed(progress(0, end=offsets(p0=4), latest=offsets(p0=6)))
    first = scrape(metrics)
    assert first[("flatavro_stream_batches_total", ())] == 1
    assert first[("flatavro_stream_messages_total", ())] == 4
    assert first[("flatavro_stream_rows_total", rows("inserted"))] == 3
    assert first[("flatavro_stream_rows_total", rows("deleted"))] == 0
    assert first[("flatavro_stream_lag", LAG0)] == 2
    assert first[("flatavro_stream_last_batch_seconds", ())] == 1.25
    assert first[("flatavro_stream_table_last_batch_seconds", TABLE)] == 0.75
    assert first[("flatavro_stream_table_schema_id", TABLE)] == 3

    metrics.progressed(progress(1, end=offsets(p0=6), latest=offsets(p0=6)))
    metrics.progressed(progress(1, end=offsets(p0=6), latest=offsets(p0=6)))  # heard twice
    second = scrape(metrics)
    assert second[("flatavro_stream_batches_total", ())] == 2
    assert second[("flatavro_stream_messages_total", ())] == 6
    assert second[("flatavro_stream_rows_total", rows("deleted"))] == 2
    assert second[("flatavro_stream_lag", LAG0)] == 0


def test_an_idle_report_moves_only_the_lag_and_an_append_counts_as_inserted() -> None:
    metrics = StreamMetrics()
    metrics.table("orders", "shop.orders", schema_id=1)
    metrics.read(0, messages=3)
    metrics.applied({"numOutputRows": "3"}, keyed=False, table="shop.orders")
    metrics.progressed(progress(0, end=offsets(p0=3, p1=0), latest=offsets(p0=5, p1=1)))
    metrics.progressed(progress(1, end=offsets(p0=5, p1=1), latest=offsets(p0=5, p1=1),
                                ran=False))
    idle = scrape(metrics)
    assert idle[("flatavro_stream_batches_total", ())] == 1
    assert idle[("flatavro_stream_rows_total", rows("inserted"))] == 3
    assert {labels: v for (name, labels), v in idle.items() if name == "flatavro_stream_lag"} == {
        LAG0: 0, (("partition", "1"), ("table", "shop.orders"), ("topic", "orders")): 0}
    metrics.progressed(progress(1, end=offsets(p0=5), latest=offsets(p0=8)))
    metrics.caught_up()
    assert scrape(metrics)[("flatavro_stream_lag", LAG0)] == 0


def test_each_table_has_its_own_rows_and_an_unnamed_topic_lags_without_one() -> None:
    metrics = StreamMetrics()
    metrics.table("tidb_shop_a", "shop.a", schema_id=1)
    metrics.table("tidb_shop_b", "shop.b", schema_id=2)
    metrics.read(0, messages=5)
    metrics.applied({"numTargetRowsInserted": "2"}, keyed=True, table="shop.a")
    metrics.applied({"numOutputRows": "3"}, keyed=False, table="shop.b")
    metrics.progressed(SimpleNamespace(
        batchId=0, batchDuration=10, durationMs={"addBatch": 1},
        sources=[SimpleNamespace(endOffset=json.dumps({"tidb_shop_a": {"0": 2},
                                                       "tidb_shop_c": {"0": 1}}),
                                 latestOffset=json.dumps({"tidb_shop_a": {"0": 4},
                                                          "tidb_shop_c": {"0": 1}}))]))
    samples = scrape(metrics)
    assert {labels: v for (name, labels), v in samples.items()
            if name == "flatavro_stream_rows_total" and v} == {
        rows("inserted", "shop.a"): 2, rows("inserted", "shop.b"): 3}
    assert samples[("flatavro_stream_rows_total", rows("deleted", "shop.b"))] == 0
    assert samples[("flatavro_stream_lag", (("partition", "0"), ("table", "shop.a"),
                                            ("topic", "tidb_shop_a")))] == 2
    assert samples[("flatavro_stream_lag", (("partition", "0"), ("table", ""),
                                            ("topic", "tidb_shop_c")))] == 0
    assert samples[("flatavro_stream_table_schema_id", (("table", "shop.b"),))] == 2


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
