"""The typed tables merged behind the changelog (``--changelog``; docs/streaming.md, "Land
first, merge behind"): a thread of the stream's own application that MERGEs each table from the
changelog when its pending changes pass ``--apply-rows`` or its oldest pending change has waited
``--apply-lag``, several tables at a time (``--parallel-tables``, each in its own FAIR pool).

A table's apply reads the changelog rows of its topic after the newest batch the table applied
and up to the newest batch the changelog has landed, and writes them with the table's own writer
(`table_writer.TableWriter`: schema evolution, dead letters, commit order and its guard, soft
deletes, ``--history``, Change Data Feed) as one batch whose id is that newest landed batch.
The table records it as its ``txnVersion``, so the apply is exactly once per table: after a crash
anywhere, the next apply starts after what the table has, and Delta skips a commit it already
has. The guard's read of the table (commit order with hard deletes) is paid once per apply.

Why a thread of the stream and not a job of its own: it shares the stream's JVM, its schemas and
its open tables (a second driver is another ~1 GB JVM on the same cores), and it knows when a
batch landed without polling the changelog; an apply that fails stops the stream, with one line,
as a table that failed in a micro-batch did. Its work stays off the visible path: the stream's
micro-batch commits the changelog and returns.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from pyspark.sql import SparkSession

from spark_jobs.decoding.registry import framing_of
from spark_jobs.decoding.transforms import header_id, with_frames
from spark_jobs.errors import JobError, one_line
from spark_jobs.jobs.table_writer import TableWriter, log
from spark_jobs.settings.config import StreamConfig
from spark_jobs.sinks import changelog

__all__ = ["Applier", "Pending"]

_POLL_SECONDS = 0.25
"""How often the apply thread looks for tables that are due."""


@dataclass
class Pending:
    """What the driver knows a table has waiting in the changelog since its last apply."""

    rows: int = 0
    since: float = field(default_factory=time.monotonic)  # when the oldest landed


class Applier:
    """Applies the changelog to the typed tables, behind the stream (a thread of the driver)."""

    def __init__(self, spark: SparkSession, config: StreamConfig, *, app_id: str,
                 log_table: changelog.Changelog,
                 writers: Callable[[list[str]], dict[str, TableWriter]],
                 each: Callable[[list[str], Callable[[str], str]], dict[str, str]]) -> None:
        """Apply `log_table` (`config.changelog`) to the tables of the stream `app_id`;
        `writers(topics)` opens (once) and returns the topics' table writers (`writers([])`:
        every one opened so far), `each(topics, work)` runs `work(topic)` for several topics
        at a time."""
        self.spark, self.config, self.log_table = spark, config, log_table
        self.app_id = app_id
        self.framing = framing_of(config)  # the changelog holds the frames as they came
        self.writers, self.each = writers, each
        self.landed = log_table.landed(app_id=app_id)
        self.waiting: dict[str, Pending] = {}
        self.failure: JobError | None = None
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._expired_at = time.monotonic()

    def recover(self) -> None:
        """Mark each topic with rows in the changelog as due at once: after a restart, each
        table applies what it has not (its apply starts after the batch it last applied, and
        does nothing when that is the newest)."""
        rows = self.log_table.read().groupBy("topic").count().collect()
        with self._lock:
            for row in rows:
                self.waiting.setdefault(row["topic"], Pending(0, 0.0)).rows += int(row[1])

    def landed_batch(self, batch_id: int, counts: dict[str, int]) -> None:
        """Micro-batch `batch_id` is in the changelog with `counts` rows per topic."""
        now = time.monotonic()
        with self._lock:
            self.landed = max(self.landed, batch_id)
            for topic, count in counts.items():
                self.waiting.setdefault(topic, Pending(0, now)).rows += count
        self._wake.set()

    def due(self, now: float) -> list[str]:
        """The topics whose tables are due for an apply at `now`."""
        lag, rows = self.config.apply_lag_ms / 1000, self.config.apply_rows
        with self._lock:
            return sorted(t for t, p in self.waiting.items()
                          if p.rows >= rows or now - p.since >= lag)

    def open_new(self) -> None:
        """Make the tables of topics that landed for the first time now, empty (a fresh read
        needs its table), and leave their first apply to the lag."""
        opened = self.writers([])
        with self._lock:
            new = sorted(t for t in self.waiting if t not in opened)
        if new:
            self.writers(new)

    def start(self) -> None:
        """Run the apply thread until `stop`."""
        self._thread = threading.Thread(target=self._run, name="flatavro-apply", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread after the apply in progress (the tables keep what it committed)."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(_POLL_SECONDS)
            self._wake.clear()
            if self._stop.is_set():
                return
            try:
                self.open_new()
                self.apply(self.due(time.monotonic()))
            except Exception as exc:
                self.failure = exc if isinstance(exc, JobError) else JobError(
                    f"the apply behind --changelog failed: {one_line(exc)}")
                log(str(self.failure))
                return
            self.upkeep()

    def drain(self) -> None:
        """Apply every waiting table now (an available-now run's end)."""
        with self._lock:
            topics = sorted(self.waiting)
        self.apply(topics)

    def apply(self, topics: list[str]) -> None:
        """Bring the tables of `topics` up to the newest landed batch.

        Raises:
            JobError: a table that cannot be applied (naming it).
        """
        if not topics:
            return
        writers = self.writers(topics)
        with self._lock:  # what lands from now on waits for the next apply
            upto = self.landed
            for topic in topics:
                self.waiting.pop(topic, None)
        started = time.monotonic()
        try:
            done = self.each(topics, lambda topic: self._apply(writers[topic], upto))
        except BaseException:
            with self._lock:  # still waiting: applied at the next try (or the next start)
                for topic in topics:
                    self.waiting.setdefault(topic, Pending(0, 0.0))
            raise
        for topic, text in done.items():
            if text:
                log(f"apply up to batch {upto} table {writers[topic].name}: {text}")
        log(f"apply up to batch {upto}: {len(topics)} table(s) in "
            f"{time.monotonic() - started:.1f} s")

    def _apply(self, writer: TableWriter, upto: int) -> str:
        """Apply `writer`'s pending changes up to batch `upto`; what was done ('' when nothing
        was pending)."""
        after = writer.applied()
        if after >= upto:
            return ""
        rows = self.log_table.pending(topic=writer.topic, after=after, upto=upto).select(
            *changelog.KAFKA_COLUMNS)
        framed = with_frames(rows, self.framing)
        headers = framed.groupBy("_key_header", "_value_header").count().collect()
        if not headers:
            return ""
        ids = {part: {header_id(h[f"_{part}_header"], self.framing) for h in headers
                      if h[f"_{part}_header"] is not None} for part in ("key", "value")}
        deletes = any(h["_value_header"] is None and h["_key_header"] is not None
                      for h in headers)
        count = sum(int(h["count"]) for h in headers)
        done = writer.apply(framed, upto, ids=ids, deletes=deletes)
        writer.upkeep(upto)
        return f"{count} change(s) from batches {after + 1}-{upto}, {done}"

    def upkeep(self) -> None:
        """Every 10 minutes (`DEFAULT_CHANGELOG_UPKEEP_MS`): remove from the changelog what
        every table has applied and ``--changelog-retention`` has passed, then compact it
        (Delta: OPTIMIZE, and VACUUM with Delta's own retention; Iceberg:
        rewrite_data_files). Never a row a table has not applied."""
        now = time.monotonic()
        if now - self._expired_at < self.config.changelog_upkeep_ms / 1000:
            return
        self._expired_at = now
        try:
            self.expire()
        except Exception as exc:  # a commit conflict, a store that hiccuped: the next round
            log(f"changelog {self.log_table.where}: upkeep failed, tried again in "
                f"{self.config.changelog_upkeep_ms // 60_000} min: {one_line(exc)}")

    def expire(self) -> int:
        """`upkeep`'s work, now; the rows removed."""
        started = time.monotonic()
        applied = {topic: w.applied() for topic, w in self.writers([]).items()}
        removed = self.log_table.expire(applied_by_topic=applied,
                                        retention_ms=self.config.changelog_retention_ms,
                                        now_ms=int(time.time() * 1000))
        compaction = self.log_table.compact()
        log(f"changelog {self.log_table.where}: removed {removed} applied row(s) older than "
            f"the retention, {compaction} in {time.monotonic() - started:.1f} s")
        return removed
