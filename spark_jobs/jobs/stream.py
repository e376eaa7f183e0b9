"""What ``python -m spark_jobs.stream`` runs (`spark_jobs.stream` is the command line): keep a
Delta table equal to the TiDB table behind a flat-avro topic, with Spark Structured Streaming
(Kafka source, offsets in the checkpoint) and one ``foreachBatch`` per micro-batch. See
docs/streaming.md.

Per micro-batch, on the driver: the distinct frame headers (one aggregate); schema ids not seen
yet are looked up in the service/registry then, and the table evolves to the new latest
version; bad frames stop the stream (failfast) or go to the dead-letter table (permissive);
`decode` (the same transforms as `bulk_read`) turns frames into rows; the last change per key is
MERGEd (keyless topics: appended). Every write carries the batch id, so Delta skips a write it
already has when Spark re-runs a batch after a crash. Every N-th batch is followed by Delta's
OPTIMIZE (`table_upkeep`).
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any

from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import StreamingQuery

from spark_jobs.decoding.bad_messages import triaged
from spark_jobs.decoding.registry import resolve_schemas
from spark_jobs.decoding.schemas import TopicVersions
from spark_jobs.decoding.transforms import header_id, last_change_per_key, with_frames
from spark_jobs.errors import JobError, one_line
from spark_jobs.jobs.checkpoint_marker import claim_checkpoint
from spark_jobs.jobs.stream_metrics import StreamMetrics
from spark_jobs.settings.config import Mode, StreamConfig
from spark_jobs.sinks import delta, upkeep
from spark_jobs.sources import kafka_check

__all__ = ["BatchApplier", "prepare", "run"]

_POLL_SECONDS = 0.5
"""How often `run` looks at its stop event while the query runs."""


def _log(text: str) -> None:
    print(f"stream: {text}", file=sys.stderr, flush=True)


class BatchApplier:
    """The ``foreachBatch`` function: applies one micro-batch to the table (driver side)."""

    def __init__(self, spark: SparkSession, config: StreamConfig, *, schemas: TopicVersions,
                 app_id: str) -> None:
        """Apply micro-batches of `config`'s topic, decoded with `schemas`, to its table, as
        the stream `app_id` (Delta's app id for idempotent writes)."""
        self.spark, self.config, self.app_id = spark, config, app_id
        self.schemas = schemas
        self.failure: JobError | None = None
        self.stopping = False  # set before query.stop(): a batch cut short then is no error
        self.interrupted: int | None = None
        self.metrics = StreamMetrics()  # served by `run` with --metrics-port
        self.columns = DeltaTable.forPath(spark, config.table_path).toDF().schema
        self.version = self._latest_version()

    def sync_table(self) -> None:
        """Evolve the table to the latest value version's columns, if they differ."""
        want = delta.table_schema(self.spark, self.schemas)
        evolution = delta.plan_evolution(self.columns, want, subject=self.schemas.value.subject)
        if evolution:
            delta.evolve(self.spark, self.config.table_path, evolution=evolution,
                         subject=self.schemas.value)
            self.version = self._latest_version()
            _log(f"table {self.config.table_path} now has the columns of "
                 f"{self.schemas.value.subject} schema id {self.schemas.value.latest_id} "
                 f"({evolution})")
        self.columns = want

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        """Apply micro-batch `batch_id` (``foreachBatch``); a failure is kept in `failure`
        for `run` to report, then re-raised to stop the query."""
        started = time.monotonic()
        # Cached (memory, spilling to disk): the header aggregate and the decode read the
        # batch, and Delta materializes the MERGE source from it; read from Kafka each time,
        # the batch cost more (bench_stream, 500k changes: 35.2 s -> 30.4 s, MERGE's source
        # materialization 6.7 s -> 3.6 s; Delta's materialization kept in memory instead of
        # on disk was no faster, none at all slower: docs/speed.md).
        batch = batch.persist()
        try:
            summary = self._apply(batch, batch_id)
            if summary:
                _log(f"batch {batch_id}: {summary} in {time.monotonic() - started:.1f} s")
            self._upkeep(batch_id)
        except Exception as exc:
            if self.stopping:  # cancelled by the stop; the checkpoint re-runs it
                self.interrupted = batch_id
            elif isinstance(exc, JobError):
                self.failure = exc
            else:
                self.failure = JobError(f"micro-batch {batch_id} failed: {one_line(exc)}")
            raise
        finally:
            batch.unpersist()

    def _upkeep(self, batch_id: int) -> None:
        """OPTIMIZE the table after every N-th batch (``--optimize-every``), logged. A crash
        before the batch commits re-runs it, OPTIMIZE included, which is harmless: a compacted
        table has little or nothing left to compact."""
        if not upkeep.optimize_due(batch_id, every=self.config.optimize_every):
            return
        started = time.monotonic()
        compaction = upkeep.optimize(self.spark, self.config.table_path)
        self.version = self._latest_version()  # a re-run batch must not report OPTIMIZE's commit
        _log(f"table {self.config.table_path} after batch {batch_id}: OPTIMIZE {compaction} in "
             f"{time.monotonic() - started:.1f} s")

    def _known(self, part: str) -> set[int]:
        subject = getattr(self.schemas, part)
        return set(subject.by_id) if subject is not None else set()

    def _apply(self, batch: DataFrame, batch_id: int) -> str:
        framed = with_frames(batch)
        headers = framed.groupBy("_key_header", "_value_header").count().collect()
        if not headers:
            return ""
        messages = sum(int(h["count"]) for h in headers)
        self.metrics.read(batch_id, messages=messages)
        ids = {part: {header_id(h[f"_{part}_header"]) for h in headers
                      if h[f"_{part}_header"] is not None} for part in ("key", "value")}
        if any(ids[p] - self._known(p) - {None} for p in ids):
            self.schemas = resolve_schemas(self.config)  # a version registered while running
            self.sync_table()
        # Permissive: the decoded messages are read twice (dead letters, then the table).
        with triaged(framed, self.schemas, mode=self.config.mode,
                     cache=self.config.mode is Mode.PERMISSIVE) as sorted_messages:
            dead_count = self._set_aside(sorted_messages.dead, batch_id)
            changes = self._write(sorted_messages.rows, batch_id)
        return (f"{messages} message(s), {changes}"
                + (f", {dead_count} to the dead-letter table" if dead_count else ""))

    def _set_aside(self, dead: DataFrame | None, batch_id: int) -> int:
        if dead is None or self.config.dead_letter is None:
            return 0
        dead = dead.persist()
        try:
            count = dead.count()
            if count:
                delta.append_changes(dead, self.config.dead_letter,
                                     app_id=self.app_id, batch_id=batch_id)
            return count
        finally:
            dead.unpersist()

    def _write(self, changes: DataFrame, batch_id: int) -> str:
        """Write the batch's rows; what the commit did, for the batch's log line."""
        path, columns = self.config.table_path, [f.name for f in self.columns.fields]
        if self.schemas.key is None:
            delta.append_changes(changes.select(*columns), path, app_id=self.app_id,
                                 batch_id=batch_id)
            return self._appended()
        keys = self.schemas.key.field_names()
        merged = delta.merge_changes(self.spark, path,
                                     changes=last_change_per_key(changes, keys),
                                     key_columns=keys, columns=columns, app_id=self.app_id,
                                     batch_id=batch_id)
        if merged is None:
            return _SKIPPED
        self.version = delta.committed_version(self.spark, path)
        self.metrics.applied(merged, keyed=True)
        return (f"table version {self.version}: inserted {merged['numTargetRowsInserted']}, "
                f"updated {merged['numTargetRowsUpdated']}, deleted "
                f"{merged['numTargetRowsDeleted']}")

    def _latest_version(self) -> int:
        last = DeltaTable.forPath(self.spark, self.config.table_path).history(1).select(
            "version").first()
        assert last is not None  # a table has at least its creation commit
        return int(last[0])

    def _appended(self) -> str:
        """What an append did (the table's newest commit; none when Delta skipped a write it
        already had): an append returns no counts, so they come from the history."""
        last = DeltaTable.forPath(self.spark, self.config.table_path).history(1).select(
            "version", "operationMetrics").first()
        assert last is not None
        if int(last[0]) == self.version:
            return _SKIPPED
        self.version = int(last[0])
        metrics: dict[str, Any] = last[1] or {}
        self.metrics.applied(metrics, keyed=False)
        return f"table version {last[0]}: appended {metrics.get('numOutputRows', '?')}"


_SKIPPED = "already in the table (a re-run batch: skipped)"


def prepare(spark: SparkSession, config: StreamConfig) -> BatchApplier:
    """Everything before the first micro-batch: schemas, broker and topic, checkpoint, the
    table (created, or checked, given deletion vectors when asked, and evolved), the
    dead-letter table.

    Raises:
        JobError: unknown topic/subject, unreachable registry or broker, a checkpoint of
            another stream, a path that holds something else than this topic's table, a table
            with deletion vectors under ``--deletion-vectors off``.
    """
    schemas = resolve_schemas(config)
    kafka_check.check_topic(config.bootstrap_servers, config.topic, kafka=config.kafka)
    versions = delta.version_schemas(spark, schemas)
    latest = delta.table_schema(spark, schemas)
    exists = delta.check_table(spark, config.table_path, topic=config.topic, versions=versions,
                               latest=latest)
    vectors = upkeep.deletion_vectors(spark, config.table_path) if exists else None
    if vectors is not None:
        upkeep.check_readers(vectors, config.table_path, wanted=config.deletion_vectors)
    app_id = claim_checkpoint(spark, config)
    keyed = schemas.key is not None
    if vectors is None:
        delta.create_table(spark, config.table_path, topic=config.topic, schema=latest,
                           deletion_vectors=upkeep.for_new_table(config.deletion_vectors,
                                                                 keyed=keyed))
    elif note := upkeep.settle_deletion_vectors(spark, config.table_path, state=vectors,
                                                wanted=config.deletion_vectors, keyed=keyed):
        _log(note)
    if config.dead_letter is not None:
        delta.check_dead_letter_table(spark, config.dead_letter)
    applier = BatchApplier(spark, config, schemas=schemas, app_id=app_id)
    applier.sync_table()
    return applier


def _start(spark: SparkSession, config: StreamConfig, *, applier: BatchApplier
           ) -> StreamingQuery:
    reader = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", config.bootstrap_servers)
              .option("subscribe", config.topic)
              .option("startingOffsets", config.starting_offsets)
              .option("failOnDataLoss", "true")
              .options(**config.kafka.spark_options()))
    if config.max_offsets_per_trigger is not None:
        reader = reader.option("maxOffsetsPerTrigger", str(config.max_offsets_per_trigger))
    writer = reader.load().writeStream.foreachBatch(applier).option(
        "checkpointLocation", config.checkpoint)
    if config.trigger.available_now:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=f"{int(config.trigger.seconds * 1000)} "
                                               f"milliseconds")
    return writer.start()


def run(spark: SparkSession, config: StreamConfig, *, stop: threading.Event | None = None
        ) -> None:
    """Run the stream in `spark` until an available-now run has caught up or `stop` is set
    (tests call this with their session).

    Raises:
        JobError: bad input, or a micro-batch that cannot be applied.
    """
    applier = prepare(spark, config)
    applier.metrics.export(spark, host=config.metrics_host, port=config.metrics_port)
    try:
        query = _start(spark, config, applier=applier)
        _log(f"{config.topic} -> {config.table_path} ({config.trigger}, checkpoint "
             f"{config.checkpoint})")
        # pyspark annotates the timeout as int, but takes any positive number of seconds
        # (its own check is isinstance(timeout, (int, float))).
        while not query.awaitTermination(_POLL_SECONDS):  # type: ignore[arg-type]
            if stop is not None and stop.is_set():
                applier.stopping = True
                query.stop()
                break
    except Exception as exc:
        if applier.failure is not None:
            raise applier.failure from None
        raise JobError(one_line(exc)) from exc
    finally:
        applier.metrics.close()
    if applier.failure is not None:
        raise applier.failure
    if applier.interrupted is not None:
        _log(f"stopped during batch {applier.interrupted}: it is applied at the next start "
             f"(the checkpoint has not committed it)")
