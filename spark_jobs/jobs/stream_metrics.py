"""`StreamMetrics`: the streaming job's progress as Prometheus metrics (``--metrics-port``).

What a micro-batch did comes from two places: Spark's query progress (batch id, duration,
each partition's processed and latest offset), delivered to a `StreamingQueryListener` once
per completed batch, and the ``foreachBatch`` function (the messages of the batch, and the
rows its Delta commit inserted, updated, deleted: the MERGE's operation metrics). The
progress's own ``numInputRows`` is not used: it counts every read of the batch's source, and
the function reads it twice. What the function reports waits until Spark reports the batch
complete, then counts with it: every scrape (one lock, on other threads than the HTTP
server's) is a consistent snapshot, the lag and the message count of the same batch.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQueryListener
from pyspark.sql.streaming.listener import (
    QueryIdleEvent,
    QueryProgressEvent,
    QueryStartedEvent,
    QueryTerminatedEvent,
)

from spark_jobs.errors import JobError

__all__ = ["CHANGES", "StreamMetrics", "partition_lag"]

CHANGES = ("inserted", "updated", "deleted")
"""The ``change`` label of ``flatavro_stream_rows_total`` (an append counts as inserted)."""

# Delta's operation metrics of a MERGE (keyed topic) and of an append (keyless topic).
_MERGE_METRICS = {"inserted": "numTargetRowsInserted", "updated": "numTargetRowsUpdated",
                  "deleted": "numTargetRowsDeleted"}
_APPEND_METRICS = {"inserted": "numOutputRows"}


def _offsets(text: str | None) -> dict[tuple[str, int], int]:
    """``{"topic": {"0": 12, ...}}`` (the Kafka source's offset JSON) by (topic, partition);
    empty for ``null`` or a source without per-partition offsets."""
    try:
        parsed = json.loads(text) if text else None
    except ValueError:
        return {}
    if not isinstance(parsed, dict):
        return {}
    return {(topic, int(partition)): int(offset)
            for topic, partitions in parsed.items() if isinstance(partitions, dict)
            for partition, offset in partitions.items()}


def partition_lag(*, end_offset: str | None, latest_offset: str | None
                  ) -> dict[tuple[str, int], int]:
    """Messages each partition is behind: the latest offset Spark saw when it planned the
    batch minus the batch's end offset (both JSON from the query progress)."""
    end, latest = _offsets(end_offset), _offsets(latest_offset)
    return {part: max(latest[part] - offset, 0) for part, offset in end.items()
            if part in latest}


@dataclass
class _Counts:
    """Messages read, and rows changed by (table, change)."""

    messages: int = 0
    rows: dict[tuple[str, str], int] = field(default_factory=dict)

    def add(self, other: _Counts) -> None:
        """Add `other`'s numbers to these."""
        self.messages += other.messages
        for key, value in other.rows.items():
            self.rows[key] = self.rows.get(key, 0) + value


@dataclass
class _State:
    """The numbers a scrape shows, and what the running batch reported so far (guarded by
    `StreamMetrics.lock`)."""

    batches: int = 0
    done: _Counts = field(default_factory=_Counts)
    # By batch id: counted when Spark reports the batch complete (the next batch may have
    # begun by then: the listener hears of it a little later).
    running: dict[int, _Counts] = field(default_factory=dict)
    current: int = -1  # the batch the function works on
    last_batch_id: int = -1
    last_batch_seconds: float = 0.0
    lag: dict[tuple[str, int], int] = field(default_factory=dict)
    tables: dict[str, str] = field(default_factory=dict)  # topic -> its table's name
    # By table: seconds its last write took, and the value schema id it was written with.
    table_seconds: dict[str, float] = field(default_factory=dict)
    schema_ids: dict[str, int] = field(default_factory=dict)


class _Listener(StreamingQueryListener):
    """Spark's query events, for one query: the first started after the listener was added
    (``onQueryStarted`` runs inside ``writeStream.start()``, before it returns)."""

    def __init__(self, metrics: StreamMetrics) -> None:
        self.metrics = metrics
        self.query_id: str | None = None

    def onQueryStarted(self, event: QueryStartedEvent) -> None:
        """Adopt the job's query."""
        if self.query_id is None:
            self.query_id = str(event.id)

    def onQueryProgress(self, event: QueryProgressEvent) -> None:
        """A micro-batch completed (or the query reported while idle)."""
        progress = event.progress
        if str(progress.id) == self.query_id:
            self.metrics.progressed(progress)

    def onQueryIdle(self, event: QueryIdleEvent) -> None:
        """No new data: every partition is caught up."""
        if str(event.id) == self.query_id:
            self.metrics.caught_up()

    def onQueryTerminated(self, event: QueryTerminatedEvent) -> None:
        """Nothing to do: the numbers stay as the last batch left them."""


class _Collector(Collector):
    """The metric families of one snapshot of `StreamMetrics`."""

    def __init__(self, metrics: StreamMetrics) -> None:
        self.metrics = metrics

    def collect(self) -> Iterator[Metric]:
        """The families, all from one consistent snapshot."""
        with self.metrics.lock:
            state = self.metrics.state
            rows = dict(state.done.rows)
            lag = dict(state.lag)
            tables = dict(state.tables)
            seconds, schema_ids = dict(state.table_seconds), dict(state.schema_ids)
            numbers = (state.batches, state.done.messages, state.last_batch_id,
                       state.last_batch_seconds)
        batches, messages, last_id, last_seconds = numbers
        yield CounterMetricFamily("flatavro_stream_batches",
                                  "Micro-batches completed (committed to the checkpoint)",
                                  value=batches)
        yield CounterMetricFamily("flatavro_stream_messages",
                                  "Kafka messages read by the completed micro-batches",
                                  value=messages)
        changed = CounterMetricFamily(
            "flatavro_stream_rows", "Table rows the stream's Delta commits changed (Delta's "
            "operation metrics; an append of a keyless topic counts as inserted)",
            labels=["table", "change"])
        for table in sorted(set(tables.values())):
            for change in CHANGES:
                changed.add_metric([table, change], rows.get((table, change), 0))
        yield changed
        behind = GaugeMetricFamily(
            "flatavro_stream_lag", "Messages between the partition's latest offset (when the "
            "last micro-batch was planned) and the last processed offset",
            labels=["topic", "partition", "table"])
        for (topic, partition), value in sorted(lag.items()):
            behind.add_metric([topic, str(partition), tables.get(topic, "")], value)
        yield behind
        took = GaugeMetricFamily("flatavro_stream_table_last_batch_seconds",
                                 "How long the table's part of its last micro-batch took",
                                 labels=["table"])
        for table, took_seconds in sorted(seconds.items()):
            took.add_metric([table], took_seconds)
        yield took
        schema = GaugeMetricFamily("flatavro_stream_table_schema_id",
                                   "The registry id of the value schema the table has the "
                                   "columns of", labels=["table"])
        for table, schema_id in sorted(schema_ids.items()):
            schema.add_metric([table], schema_id)
        yield schema
        yield GaugeMetricFamily("flatavro_stream_last_batch_id",
                                "Id of the last completed micro-batch (-1: none yet)",
                                value=last_id)
        yield GaugeMetricFamily("flatavro_stream_last_batch_seconds",
                                "Duration of the last completed micro-batch", value=last_seconds)


class StreamMetrics:
    """The stream's counters and gauges, fed by Spark's query listener and the batch
    function; served over HTTP while the query runs when `serve` was called."""

    def __init__(self) -> None:
        """Start from zero; nothing is listened to or served yet."""
        self.lock = threading.Lock()
        self.state = _State()
        self.registry = CollectorRegistry(auto_describe=True)
        self.registry.register(_Collector(self))
        self.listener = _Listener(self)
        self.spark: SparkSession | None = None
        self.server: WSGIServer | None = None

    def progressed(self, progress: Any) -> None:
        """Take one query progress (a `StreamingQueryProgress`): a micro-batch that ran
        (its durations name ``addBatch``) counts, with what the batch function reported; an
        idle report only refreshes the lag."""
        lag: dict[tuple[str, int], int] = {}
        for source in progress.sources:
            lag.update(partition_lag(end_offset=source.endOffset,
                                     latest_offset=source.latestOffset))
        ran = "addBatch" in progress.durationMs
        with self.lock:
            self.state.lag.update(lag)
            if ran and progress.batchId > self.state.last_batch_id:
                self.state.batches += 1
                for batch_id in [b for b in self.state.running if b <= progress.batchId]:
                    self.state.done.add(self.state.running.pop(batch_id))
                self.state.last_batch_id = int(progress.batchId)
                self.state.last_batch_seconds = int(progress.batchDuration) / 1000

    def caught_up(self) -> None:
        """The query is idle: no partition has anything left to read."""
        with self.lock:
            self.state.lag = dict.fromkeys(self.state.lag, 0)

    def read(self, batch_id: int, *, messages: int) -> None:
        """Micro-batch `batch_id` began and holds `messages` Kafka messages."""
        with self.lock:
            self.state.current = batch_id
            self.state.running[batch_id] = _Counts(messages=messages)

    def table(self, topic: str, table: str, *, schema_id: int) -> None:
        """`topic`'s table is named `table` (its label) and has the columns of value schema
        `schema_id` (again after an evolution)."""
        with self.lock:
            self.state.tables[topic] = table
            self.state.schema_ids[table] = schema_id

    def applied(self, operation_metrics: Mapping[str, Any], *, keyed: bool, table: str
                ) -> None:
        """The micro-batch of the last `read` committed to `table` (Delta's
        ``operationMetrics``: a MERGE for a keyed topic, an append for a keyless one)."""
        names = _MERGE_METRICS if keyed else _APPEND_METRICS
        counted = {change: int(operation_metrics.get(name) or 0)
                   for change, name in names.items()}
        with self.lock:
            running = self.state.running.setdefault(self.state.current, _Counts())
            for change, value in counted.items():
                running.rows[table, change] = running.rows.get((table, change), 0) + value

    def took(self, table: str, seconds: float) -> None:
        """`table`'s part of the current micro-batch took `seconds`."""
        with self.lock:
            self.state.table_seconds[table] = seconds

    def export(self, spark: SparkSession, *, host: str, port: int | None) -> None:
        """With a `port`: follow the next query started in `spark` (call just before starting
        it) and serve ``/metrics`` on `host`:`port` in a daemon thread (logged); without one,
        nothing.

        Raises:
            JobError: the port cannot be bound (in use, or a bad host).
        """
        if port is None:
            return
        try:
            self.server, _ = start_http_server(port, addr=host, registry=self.registry)
        except OSError as exc:
            raise JobError(f"--metrics-port {port}: cannot listen on {host}:{port} "
                           f"({exc.strerror or exc}); choose a free port") from exc
        spark.streams.addListener(self.listener)
        self.spark = spark
        print(f"stream: Prometheus metrics on http://{host}:{self.server.server_port}/metrics",
              file=sys.stderr, flush=True)

    def close(self) -> None:
        """Stop listening and serving (the query has ended)."""
        if self.spark is not None:
            self.spark.streams.removeListener(self.listener)
            self.spark = None
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None
