"""`Progress`: totals and metrics of committed batches, the progress line with the lag."""

from __future__ import annotations

import pytest

from service.bridge.batch import Batch
from service.bridge.metrics import BridgeMetrics
from service.bridge.progress import Progress
from service.cdc.events import EventKind
from service.codec.convert import Skipped
from tests.bridge.unit.fakes import FakeConsumer, output, record


def sample(metrics: BridgeMetrics, name: str, **labels: str) -> float | None:
    return metrics.registry.get_sample_value(name, labels)


def test_a_committed_batch_is_counted_in_totals_and_metrics() -> None:
    metrics = BridgeMetrics()
    progress = Progress(metrics=metrics, consumer=FakeConsumer, every=5.0)
    batch = Batch(outputs=[(output("a", 0), 0), (output("a", 1), 0)],
                  dead=[(record(0, 3), "bad")], sources=4,
                  skipped=[Skipped(2, EventKind.WATERMARK, None, None, 9, "w")])
    progress.committed(batch)
    assert progress.totals == {"converted": 2, "dead-lettered": 1, "skipped": 1}
    assert sample(metrics, "flatavro_bridge_source_messages_total") == 4
    assert sample(metrics, "flatavro_bridge_converted_total") == 2
    assert sample(metrics, "flatavro_bridge_dead_lettered_total") == 1
    assert sample(metrics, "flatavro_bridge_skipped_total", kind="watermark") == 1
    progress.pending(7)
    assert sample(metrics, "flatavro_bridge_pending") == 7


def test_the_progress_line_comes_every_period_with_rate_and_lag(
        capsys: pytest.CaptureFixture[str]) -> None:
    metrics = BridgeMetrics()
    consumer = FakeConsumer(assigned=[0, 1], positions={0: 10, 1: 4}, highs={0: 15, 1: -1})
    progress = Progress(metrics=metrics, consumer=lambda: consumer, every=5.0)
    progress.restart(100.0)
    progress.tick(30, now=102.0, pending=0)
    assert capsys.readouterr().err == ""
    progress.tick(20, now=105.0, pending=3)
    assert capsys.readouterr().err == (
        "bridge: 10 msg/s; converted 0, dead-lettered 0, skipped 0, pending 3, lag p0=5\n")
    assert sample(metrics, "flatavro_bridge_lag", partition="0") == 5
    assert sample(metrics, "flatavro_bridge_lag", partition="1") is None
    progress.tick(0, now=110.0, pending=0)
    assert capsys.readouterr().err.startswith("bridge: 0 msg/s;")


def test_no_assignment_shows_no_lag(capsys: pytest.CaptureFixture[str]) -> None:
    progress = Progress(metrics=BridgeMetrics(), consumer=FakeConsumer, every=1.0)
    progress.report(1234.4, pending=0)
    assert capsys.readouterr().err.endswith("1,234 msg/s; converted 0, dead-lettered 0, "
                                            "skipped 0, pending 0, lag -\n")


def test_the_summary_gives_the_run_s_totals(capsys: pytest.CaptureFixture[str]) -> None:
    progress = Progress(metrics=BridgeMetrics(), consumer=FakeConsumer, every=5.0)
    progress.committed(Batch(outputs=[(output("a", 0), 0)], dead=[(record(0, 1), "bad")],
                             sources=2, skipped=[]))
    progress.summary()
    assert capsys.readouterr().err == (
        "bridge: done: converted 1, dead-lettered 1, skipped 0\n")
