"""What ``python -m spark_jobs.stream`` runs (`spark_jobs.stream` is the command line): keep
Delta tables equal to the TiDB tables behind flat-avro topics, with Spark Structured Streaming
(one Kafka source for every topic, offsets in the checkpoint) and one ``foreachBatch`` per
micro-batch. One topic goes to one table; in whole-database mode (``--topics``,
``--topic-pattern``) each topic goes to the table its template names. See docs/streaming.md.

Per micro-batch, on the driver: the distinct (topic, frame headers) with their first offsets
(one aggregate); a topic seen for the first time gets its table (`table_writer.open_table`);
then each topic's part is written to its table by a `TableWriter` (schema ids not seen yet are
looked up then, and the table evolves; bad frames stop the stream or go to the table's
dead-letter table; the last change per key is MERGEd, keyless topics appended), at most
``--parallel-tables`` tables at the same time, each in its own pool of Spark's FAIR scheduler.
Every write carries the batch id, so Delta skips a write a table already has when Spark re-runs
a batch after a crash. A table whose part fails stops the stream with one line naming the
table, the topic, the first offsets and the reason; its batch is not committed, and a restart
re-runs it. Every N-th batch a table is written in is followed by its OPTIMIZE.

With ``--changelog`` (whole-database mode, Delta) a micro-batch writes no table: it appends
every topic's messages to the changelog in one commit (`spark_jobs.sinks.changelog`; a topic seen
for the first time has its schemas looked up, for its table's name, and nothing else), and the
typed tables are merged behind it by a thread of the same application
(`spark_jobs.jobs.apply`). An available-now run applies everything before it exits.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import threading
import time
from typing import Any

from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from spark_jobs.decoding.registry import framing_of
from spark_jobs.decoding.transforms import header_id, with_frames
from spark_jobs.errors import JobError, one_line
from spark_jobs.jobs.apply import Applier
from spark_jobs.jobs.checkpoint_marker import claim_checkpoint
from spark_jobs.jobs.iceberg_writer import open_iceberg_table
from spark_jobs.jobs.preflight import check_catalog_file
from spark_jobs.jobs.stream_metrics import StreamMetrics
from spark_jobs.jobs.table_writer import Located, TableWriter, locate, log, open_table
from spark_jobs.settings.config import StreamConfig, TableFormat
from spark_jobs.sinks import changelog, iceberg
from spark_jobs.sources import kafka_check
from spark_jobs.sources.kafka import READ_OPTIONS

__all__ = ["BatchApplier", "changelog_options", "prepare", "run"]

_POLL_SECONDS = 0.5
"""How often `run` looks at its stop event while the query runs."""

_INHERITED = ("spark.jobGroup.id", "spark.job.description", "spark.job.interruptOnCancel",
              "spark.job.tags", "sql.streaming.queryId", "streaming.sql.batchId")
"""Local properties of the micro-batch's thread that its tables' threads take over: the
query's job group above all, so that stopping the query cancels their Spark jobs too."""


class BatchApplier:
    """The ``foreachBatch`` function: applies one micro-batch to the tables (driver side)."""

    def __init__(self, spark: SparkSession, config: StreamConfig, *, app_id: str,
                 metrics: StreamMetrics | None = None) -> None:
        """Apply micro-batches of `config`'s topics to their tables, as the stream `app_id`
        (each table's Delta app id derives from it)."""
        self.spark, self.config, self.app_id = spark, config, app_id
        self.framing = framing_of(config)  # Confluent's or AWS Glue's: the registry's kind
        self.tables: dict[str, TableWriter] = {}
        self.located: dict[str, Located] = {}  # --changelog: each topic's schemas and table
        self.behind: Applier | None = None  # --changelog: the apply behind it (`prepare`)
        self.failure: JobError | None = None
        self.stopping = False  # set before query.stop(): a batch cut short then is no error
        self.interrupted: int | None = None
        self.metrics = metrics or StreamMetrics()  # served by `run` with --metrics-port
        self._offsets: dict[str, str] = {}  # the batch's first offsets, by topic
        self._pools = itertools.count()
        self._pool = concurrent.futures.ThreadPoolExecutor(
            config.parallel_tables, thread_name_prefix="flatavro-table",
            initializer=self._name_pool)

    def _name_pool(self) -> None:
        """Each table thread submits its Spark jobs to a FAIR pool of its own."""
        self.spark.sparkContext.setLocalProperty("spark.scheduler.pool",
                                                 f"flatavro-{next(self._pools)}")

    def close(self) -> None:
        """Let the table threads go (the query has ended)."""
        self._pool.shutdown(wait=True)

    def open(self, topics: list[str], *, check_topics: bool = False
             ) -> dict[str, TableWriter]:
        """Give each of `topics` its table writer (tables checked or created), in parallel;
        with `check_topics`, each topic must exist (a topic a micro-batch names does). Every
        table writer opened so far.

        Raises:
            JobError: the first table that cannot be opened (naming its topic).
        """
        new = [t for t in topics if t not in self.tables]
        located = self._locate(new, check_topics=check_topics)
        claimed = {w.path.rstrip("/"): w.topic for w in self.tables.values()}
        names = {w.name: w.topic for w in self.tables.values()}
        labels: dict[str, str | None] = {}
        for topic in new:
            path = located[topic].path
            other = claimed.setdefault(path.rstrip("/"), topic)
            if other != topic:
                raise JobError(f"topics {other} and {topic} both go to the table {path} "
                               f"({self.config.template_option} "
                               f"{self.config.table_template}): name {{topic}} in the "
                               f"template, or read them in two streams")
            name = located[topic].place.name
            labels[topic] = None if names.setdefault(name, topic) == topic else (
                f"{name} ({topic})")
        opener = (open_iceberg_table if self.config.table_format is TableFormat.ICEBERG
                  else open_table)
        opened = self._each(new, lambda topic: opener(
            self.spark, self.config, located=located[topic], app_id=self.app_id,
            metrics=self.metrics, label=labels[topic]))
        self.tables.update(opened)
        return self.tables

    def _locate(self, topics: list[str], *, check_topics: bool = False
                ) -> dict[str, Located]:
        """Each topic's schemas and table (looked up once: the registry, not the tables)."""
        new = [t for t in topics if t not in self.located]
        self.located.update(self._each(new, lambda topic: locate(
            self.config, topic=topic, check_topic=check_topics)))
        return {t: self.located[t] for t in topics}

    def _each(self, topics: list[str], work: Any) -> dict[str, Any]:
        """`work(topic)` for each topic on the table threads (the calling thread's job group
        and streaming properties taken over); the results by topic.

        Raises:
            JobError: the first failure in `topics`' order (the others are waited for).
        """
        if not topics:
            return {}
        context = self.spark.sparkContext
        inherited = {k: context.getLocalProperty(k) for k in _INHERITED}

        def run(topic: str) -> Any:
            for key, value in inherited.items():
                context.setLocalProperty(key, value)  # type: ignore[arg-type]
            return work(topic)

        if len(topics) == 1:  # no thread hop for one table
            try:
                return {topics[0]: work(topics[0])}
            except Exception as exc:
                failed = self._failed(topics[0], exc)
                if failed is exc:
                    raise
                raise failed from exc
        futures = {t: self._pool.submit(run, t) for t in topics}
        concurrent.futures.wait(futures.values())
        for topic, future in futures.items():
            error = future.exception()
            if error is not None:
                raise self._failed(topic, error)
        return {t: f.result() for t, f in futures.items()}

    def _failed(self, topic: str, error: BaseException) -> BaseException:
        """`error` of `topic`'s table, named in whole-database mode (one topic: as it is)."""
        if not self.config.many or not isinstance(error, Exception):
            return error
        writer = self.tables.get(topic)
        where = f"table {writer.name} ({writer.path}), topic {topic}" if writer else (
            f"topic {topic}")
        offsets = self._offsets.get(topic)
        if offsets:
            where += f" from offset {offsets}"
        reason = str(error) if isinstance(error, JobError) else one_line(error)
        failed = JobError(f"{where}: {reason}")
        failed.__cause__ = error
        return failed

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        """Apply micro-batch `batch_id` (``foreachBatch``); a failure is kept in `failure`
        for `run` to report, then re-raised to stop the query."""
        started = time.monotonic()
        # Cached (memory, spilling to disk): the header aggregate and the decode read the
        # batch, and Delta materializes the MERGE source from it; read from Kafka each time,
        # the batch cost more (bench_stream, 500k changes: 35.2 s -> 30.4 s, MERGE's source
        # materialization 6.7 s -> 3.6 s; Delta's materialization kept in memory instead of
        # on disk was no faster, none at all slower: docs/speed.md).
        if self.behind is not None:
            # Landing reads every topic's partitions once and appends them: a task per Kafka
            # partition (100 topics of 3: 300 tasks, each ~0.05 s here, and 300 files in the
            # commit) costs more than the rows; a task per core reads them all.
            batch = batch.coalesce(self.spark.sparkContext.defaultParallelism)
        batch = batch.persist()
        self._offsets = {}
        try:
            summary = self._apply(batch, batch_id)
            if summary:
                log(f"batch {batch_id}: {summary} in {time.monotonic() - started:.1f} s")
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

    def _apply(self, batch: DataFrame, batch_id: int) -> str:
        framed = with_frames(batch, self.framing)
        headers = framed.groupBy("topic", "partition", "_key_header", "_value_header").agg(
            F.count(F.lit(1)).alias("count"), F.min("offset").alias("first")).collect()
        if not headers:
            return ""
        by_topic: dict[str, list[Row]] = {}
        for h in headers:
            by_topic.setdefault(h["topic"], []).append(h)
        for topic, rows in by_topic.items():
            first: dict[int, int] = {}
            for h in rows:
                first[h["partition"]] = min(first.get(h["partition"], h["first"]), h["first"])
            self._offsets[topic] = ", ".join(f"{p}:{o}" for p, o in sorted(first.items()))
        messages = sum(int(h["count"]) for h in headers)
        self.metrics.read(batch_id, messages=messages)
        topics = sorted(by_topic)
        if self.behind is not None:
            return self._land(batch, batch_id, by_topic=by_topic)
        self.open(topics)
        # Each table reads its topic out of the cached batch. The batch has a partition per
        # Kafka partition (3 topics of 3: 9), so a filter on it would run a task per Kafka
        # partition of every topic, for every table and each of its jobs (most skip the
        # cached partition by its statistics, but a task costs some 0.1 s here): coalesced to
        # the cores, each of its scans is a task per core (the filter still reaches the cache).
        scanned = framed.coalesce(self.spark.sparkContext.defaultParallelism) if (
            len(topics) > 1) else None

        def write(topic: str) -> str:
            rows = by_topic[topic]
            ids = {part: {header_id(h[f"_{part}_header"], self.framing) for h in rows
                          if h[f"_{part}_header"] is not None} for part in ("key", "value")}
            part = framed if scanned is None else scanned.where(F.col("topic") == topic)
            writer = self.tables[topic]
            deletes = any(h["_value_header"] is None and h["_key_header"] is not None
                          for h in rows)
            done = writer.apply(part, batch_id, ids=ids, deletes=deletes)
            writer.upkeep(batch_id)
            return done

        done = self._each(topics, write)
        if not self.config.many:
            return f"{messages} message(s), {done[topics[0]]}"
        for topic in topics:
            count = sum(int(h["count"]) for h in by_topic[topic])
            log(f"batch {batch_id} table {self.tables[topic].name}: {count} message(s), "
                f"{done[topic]}")
        return f"{messages} message(s) into {len(topics)} table(s)"

    def _land(self, batch: DataFrame, batch_id: int, *, by_topic: dict[str, list[Row]]
              ) -> str:
        """``--changelog``: the batch appended to the changelog in one commit; the apply
        behind is told what landed."""
        assert self.behind is not None and self.config.changelog is not None
        located = self._locate(sorted(by_topic))
        counts = {t: sum(int(h["count"]) for h in rows) for t, rows in by_topic.items()}
        self.behind.log_table.append(batch, tables={t: located[t].place.name for t in by_topic},
                                     app_id=self.app_id, batch_id=batch_id)
        self.behind.landed_batch(batch_id, counts)
        return (f"{sum(counts.values())} message(s) of {len(counts)} table(s) landed in the "
                f"changelog")


def changelog_options(config: StreamConfig) -> dict[str, str]:
    """How the stream applies its tables, as the changelog keeps it (`changelog.OPTIONS`)."""
    return dict(zip(changelog.OPTIONS, ("commit" if config.commit_order else "offset",
                                        config.deletes.value, str(config.history).lower(),
                                        config.mode.value), strict=True))


def prepare(spark: SparkSession, config: StreamConfig) -> BatchApplier:
    """Everything before the first micro-batch: broker and topics, checkpoint, and for every
    listed topic its schemas and table (created, or checked, given deletion vectors when
    asked, and evolved) and dead-letter table. Topics of a ``--topic-pattern`` get theirs
    when their first messages come.

    Raises:
        JobError: unknown topic/subject, unreachable registry or broker, a checkpoint of
            another stream, a path that holds something else than this topic's table, a table
            with deletion vectors under ``--deletion-vectors off``.
    """
    subscription = config.subscription()
    if subscription.pattern is not None:
        kafka_check.check_broker(config.bootstrap_servers, kafka=config.kafka)
    if config.iceberg is not None:
        check_catalog_file(config.iceberg)
        iceberg.check_catalog(spark, config.iceberg)
    claim = claim_checkpoint(spark, config)
    applier = BatchApplier(spark, config, app_id=claim.app_id)
    try:
        applier.open(list(subscription.names), check_topics=True)
        if config.changelog is not None:
            log_table = changelog.open_changelog(spark, config)
            log_table.create_or_check(app_id=claim.app_id, options=changelog_options(config))
            applier.behind = Applier(spark, config, app_id=claim.app_id, log_table=log_table,
                                     writers=applier.open, each=applier._each)
            applier.behind.recover()
        claim.write(spark, config)  # a refused start leaves the checkpoint as it was
    except BaseException:
        applier.close()
        raise
    return applier


def _start(spark: SparkSession, config: StreamConfig, *, applier: BatchApplier
           ) -> StreamingQuery:
    reader = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", config.bootstrap_servers)
              .option(*config.subscription().spark_option())
              .option("startingOffsets", config.starting_offsets)
              .option("failOnDataLoss", "true")
              .options(**READ_OPTIONS)
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


def _await(query: StreamingQuery, applier: BatchApplier, *, stop: threading.Event | None
           ) -> None:
    """Wait until the query ends, `stop` is set or the apply behind it fails (then stop it)."""
    behind = applier.behind
    # pyspark annotates the timeout as int, but takes any positive number of seconds
    # (its own check is isinstance(timeout, (int, float))).
    while not query.awaitTermination(_POLL_SECONDS):  # type: ignore[arg-type]
        if behind is not None and behind.failure is not None:
            applier.failure = behind.failure
        if applier.failure is not None or (stop is not None and stop.is_set()):
            applier.stopping = True
            query.stop()
            return


def run(spark: SparkSession, config: StreamConfig, *, stop: threading.Event | None = None
        ) -> None:
    """Run the stream in `spark` until an available-now run has caught up or `stop` is set
    (tests call this with their session).

    Raises:
        JobError: bad input, or a micro-batch that cannot be applied.
    """
    applier = prepare(spark, config)
    applier.metrics.export(spark, host=config.metrics_host, port=config.metrics_port)
    behind = applier.behind
    try:
        if behind is not None:
            behind.start()
        query = _start(spark, config, applier=applier)
        log(f"{config.subscription()} -> {config.tables_described()} ({config.trigger}, "
            f"checkpoint {config.checkpoint}"
            f"{f', changelog {config.changelog}' if config.changelog else ''})")
        _await(query, applier, stop=stop)
        if behind is not None and applier.failure is None and not applier.stopping:
            behind.stop()  # caught up (available-now): every table applied before the exit
            behind.drain()
        elif behind is not None and behind.failure is not None:
            applier.failure = behind.failure
    except Exception as exc:
        if isinstance(exc, JobError):
            raise
        if applier.failure is not None:
            raise applier.failure from None
        raise JobError(one_line(exc)) from exc
    finally:
        if behind is not None:
            behind.stop()
        applier.metrics.close()
        applier.close()
    if applier.failure is not None:
        raise applier.failure
    if applier.interrupted is not None:
        log(f"stopped during batch {applier.interrupted}: it is applied at the next start "
             f"(the checkpoint has not committed it)")
