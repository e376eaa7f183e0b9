"""`Progress`: what the bridge has done, counted once each batch is committed, in its
Prometheus metrics and in a log line every ``progress_seconds`` (rate, totals, pending,
lag per partition)."""

from __future__ import annotations

from collections.abc import Callable

from confluent_kafka import Consumer

from service.bridge.batch import Batch
from service.bridge.log import log
from service.bridge.metrics import BridgeMetrics

__all__ = ["Progress"]


class Progress:
    """Totals and metrics of committed batches, and the periodic progress line."""

    def __init__(self, *, metrics: BridgeMetrics, consumer: Callable[[], Consumer],
                 every: float) -> None:
        """`consumer` gives the bridge's consumer of the moment (a new one after a rejoin)."""
        self.metrics, self.consumer, self.every = metrics, consumer, every
        self.totals = {"converted": 0, "dead-lettered": 0, "skipped": 0}
        self.since = 0.0  # when the last progress line was written (or the run started)
        self.done = 0  # source messages settled since then

    def committed(self, batch: Batch) -> None:
        """Count a batch whose transaction committed."""
        self.totals["converted"] += len(batch.outputs)
        self.totals["dead-lettered"] += len(batch.dead)
        self.totals["skipped"] += len(batch.skipped)
        self.metrics.consumed.inc(batch.sources)
        self.metrics.converted.inc(len(batch.outputs))
        self.metrics.dead_lettered.inc(len(batch.dead))
        for skipped in batch.skipped:
            self.metrics.skipped.labels(skipped.kind.value).inc()

    def restart(self, now: float) -> None:
        """Start counting the rate at `now` (the run starts)."""
        self.since, self.done = now, 0

    def tick(self, sources: int, *, now: float, pending: int) -> None:
        """Count source messages settled; every ``every`` seconds, log the progress line
        (`pending`: the messages queued) and set the lag metrics."""
        self.done += sources
        if now - self.since >= self.every:
            self.report(self.done / (now - self.since), pending=pending)
            self.since, self.done = now, 0

    def pending(self, count: int) -> None:
        """Set the pending gauge: the messages queued (held, or not yet committed)."""
        self.metrics.pending.set(count)

    def summary(self) -> None:
        """Log the totals of the run, once, when it ends normally (idle or stopped)."""
        log(f"done: {self._totals()}")

    def report(self, rate: float, *, pending: int) -> None:
        """Log the rate, totals, pending count and lag per assigned partition."""
        lag, consumer = [], self.consumer()
        for tp in consumer.assignment():
            position = consumer.position([tp])[0].offset
            _low, high = consumer.get_watermark_offsets(tp, cached=True)
            if position >= 0 and high >= 0:
                self.metrics.lag.labels(str(tp.partition)).set(high - position)
                lag.append(f"p{tp.partition}={high - position}")
        log(f"{rate:,.0f} msg/s; {self._totals()}, pending {pending}, "
            f"lag {' '.join(lag) or '-'}")

    def _totals(self) -> str:
        return ", ".join(f"{name} {count}" for name, count in self.totals.items())
