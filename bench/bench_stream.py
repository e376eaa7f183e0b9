"""Streaming into Delta: the stream's apply rate against a plain Delta append of the same rows
and against bulk_read's decode, and the latency from produce to visible. One run, local[2].

Method. A real broker (deploy/kafka/kafka.sh) and a `flatavro serve` with the embedded registry
start on free loopback ports; the 20-column benchmark table (bench_row_codec) is registered
for a 3-partition topic. N changes (default 1,000,000) are encoded in this process (RecordCodec
+ frame, the registered ids) and produced by key (partition id % 3): 80% inserts of new keys,
15% updates and 5% deletes (tombstones) of live keys drawn uniformly from all earlier ones (so
every micro-batch touches rows all over the table). A smaller topic goes through every step
first, untimed, to warm the JVM. Then, timed: (a) `spark_jobs.jobs.stream.run`, available-now,
250,000 offsets per micro-batch, from an empty table and checkpoint (wall clock, start-up
included), the table with deletion vectors (the stream's default; `--deletion-vectors off`
for copy-on-write MERGE, to compare); (b) bulk_read of the same topic into Parquet (decode
only); (c) a plain ``write.format("delta").mode("append")`` of those decoded rows, cached in
memory first, into a fresh table; (d) Delta's MERGEs alone: the decoded rows of (b) split into
the stream's micro-batches (by offset, the share of each partition), each reduced to the last
change per key and cached untimed, then MERGEd with the stream's clauses into a fresh table
(the stream's ceiling: it decodes and MERGEs the same batches). Where the stream's time goes
comes from Spark's query progress (``durationMs``) and the MERGE commits' metrics in the Delta
log. The table must then hold exactly the live keys (inserts - deletes) and the updated rows,
else exit 1.
Latency: the same stream restarted at processing-time=1 second in a thread; 200 new keys are
produced one at a time, 20 per second (the time taken after each flush); the main thread polls
the table with delta-rs every 50 ms and notes when each key first shows; p50/p99 are printed.
Then Delta's MERGE alone of 40 new rows (a latency micro-batch's size, cached) into (d)'s table
(as big as the stream's), 20 times: the floor of one micro-batch.
Scale-out: the same topic streamed by `python -m spark_jobs.stream --master spark://...` into a
fresh table on a standalone cluster (deploy/spark/local_cluster.py) of 1 worker, then 2 (1 core and
a 2 GB executor each); the ratio of wall clock and of the summed micro-batch times.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import deltalake
import httpx
import pyarrow as pa
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from delta.tables import DeltaTable
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQueryListener

from bench.bench_row_codec import DDL, rows
from bench.figures import timed
from bench.kafka_broker import broker, free_port
from deploy.spark.local_cluster import SparkCluster
from service.core.framing import frame
from service.core.record_codec import RecordCodec
from spark_jobs.decoding.transforms import last_change_per_key
from spark_jobs.jobs import bulk_read
from spark_jobs.jobs.stream import run
from spark_jobs.session import build_session
from spark_jobs.settings.config import Deletes, JobConfig, StreamConfig, Trigger

T = TypeVar("T")

ROOT = Path(__file__).resolve().parents[1]
PARTITIONS, WARM_UP, INSERTS, UPDATES = 3, 20_000, 0.80, 0.15  # the rest: deletes
LATENCY_CHANGES, LATENCY_RATE, POLL_SECONDS, LATENCY_MERGES = 200, 20.0, 0.05, 20
BASE_ROWS, UPDATED = rows(), {"note": "updated", "qty": 12}
MERGE_METRICS = ("executionTimeMs", "materializeSourceTimeMs", "scanTimeMs", "rewriteTimeMs")


@contextmanager
def service(data: Path) -> Iterator[str]:
    port = free_port()
    env = dict(os.environ, FLATAVRO_PORT=str(port), FLATAVRO_LOG_LEVEL="WARNING",
               FLATAVRO_REGISTRY_DB_PATH=str(data / "registry.sqlite"))
    process = subprocess.Popen([str(Path(sys.executable).parent / "flatavro"), "serve"], env=env)
    url, deadline = f"http://127.0.0.1:{port}", time.monotonic() + 30
    try:
        while True:
            try:
                httpx.get(url + "/healthz", timeout=1).raise_for_status()
                break
            except httpx.TransportError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(30)


class Topic:
    """A 3-partition topic of the benchmark table, registered with the service; its changes
    are encoded here with the registered ids."""

    def __init__(self, name: str, bootstrap: str, url: str, *, extension: bool = False) -> None:
        """`extension`: registered with TiCDC's enable-tidb-extension (values carry the
        commit ts, increasing with every change sent)."""
        self.name, self.bootstrap, self.url, self.failed = name, bootstrap, url, 0
        self.commit_ts = 449_522_326_498_394_113
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for future in admin.create_topics([NewTopic(name, PARTITIONS, 1)]).values():
            future.result(30)
        httpx.post(f"{url}/v1/tables/register", json={
            "ddl": DDL, "topic": name, "options": {"enable_tidb_extension": extension}},
            timeout=30).raise_for_status()
        latest = [httpx.get(f"{url}/v1/subjects/{name}-{part}/versions/latest",
                            timeout=30).json() for part in ("key", "value")]
        self.key_id, self.value_id = (v["id"] for v in latest)
        key, value = (json.loads(v["schema_text"]) for v in latest)
        self.key_codec, self.value_codec = RecordCodec(key, allow_extra=True), RecordCodec(value)
        self.columns = [f["name"] for f in value["fields"]]

    def producer(self, **config: Any) -> Producer:
        def delivered(error: object, _message: object) -> None:
            self.failed += error is not None
        return Producer({"bootstrap.servers": self.bootstrap, "on_delivery": delivered,
                         **config})

    def send(self, producer: Producer, op: str, row_id: int) -> None:
        row = BASE_ROWS[row_id % len(BASE_ROWS)] | {"id": row_id}
        row |= UPDATED if op == "update" else {}
        key = frame(self.key_id, self.key_codec.encode(row))
        self.commit_ts += 1 << 18
        value = None if op == "delete" else frame(self.value_id, self.value_codec.encode(
            row, update=op == "update", commit_ts=self.commit_ts))
        while True:
            try:
                producer.produce(self.name, key=key, value=value, partition=row_id % PARTITIONS)
                return
            except BufferError:  # the local queue is full: let librdkafka send
                producer.poll(0.05)

    def send_all(self, changes: list[tuple[str, int]]) -> None:
        producer = self.producer(**{"linger.ms": 50, "batch.size": 1_000_000,
                                    "batch.num.messages": 100_000,
                                    "queue.buffering.max.messages": 1_000_000})
        for op, row_id in changes:
            self.send(producer, op, row_id)
        if producer.flush(120) or self.failed:
            sys.exit(f"{self.failed} change(s) of {self.name} were not delivered")


def plan(count: int, seed: int = 12) -> tuple[list[tuple[str, int]], set[int], set[int]]:
    """`count` changes: inserts of new keys, updates and deletes of live keys. Returns them, the
    keys live at the end and those among them whose last change is an update."""
    rng, changes, live, updated = random.Random(seed), [], [], set()
    for _ in range(count):
        draw = rng.random()
        if draw < INSERTS or not live:
            live.append(len(changes))
            changes.append(("insert", live[-1]))
        elif draw < INSERTS + UPDATES:
            changes.append(("update", rng.choice(live)))
            updated.add(changes[-1][1])
        else:
            at = rng.randrange(len(live))
            live[at], live[-1] = live[-1], live[at]
            changes.append(("delete", live.pop()))
            updated.discard(changes[-1][1])
    return changes, set(live), updated


class Progress(StreamingQueryListener):
    """Spark's ``durationMs`` of each micro-batch that had input."""

    def __init__(self) -> None:
        self.batches: list[dict[str, int]] = []

    def onQueryStarted(self, event: Any) -> None: ...
    def onQueryIdle(self, event: Any) -> None: ...
    def onQueryTerminated(self, event: Any) -> None: ...

    def onQueryProgress(self, event: Any) -> None:
        if event.progress.numInputRows:
            self.batches.append(dict(event.progress.durationMs))

    def seconds(self, name: str) -> float:
        return sum(b.get(name, 0) for b in self.batches) / 1000


def stream_config(topic: Topic, work: Path, per_trigger: int, **more: Any) -> StreamConfig:
    return StreamConfig(**{"topic": topic.name, "bootstrap_servers": topic.bootstrap,
                           "service_url": topic.url, "trigger": Trigger(available_now=True),
                           "table_path": str(work / f"{topic.name}-table"),
                           "checkpoint": str(work / f"{topic.name}-checkpoint"),
                           "max_offsets_per_trigger": per_trigger, **more})


def bare_merge(spark: SparkSession, path: str, source: DataFrame, columns: list[str]) -> float:
    """Seconds of Delta's own MERGE of `source` (last change per key, cached) into `path`,
    with the stream's clauses."""
    values: dict[str, str | Column] = {c: F.col(f"s.`{c}`") for c in columns}
    return timed(lambda: DeltaTable.forPath(spark, path).alias("t").merge(
        source.alias("s"), "t.id <=> s.id").whenMatchedDelete("s._op = 'delete'")
        .whenMatchedUpdate("s._op = 'upsert'", values)
        .whenNotMatchedInsert("s._op = 'upsert'", values).execute())


def new_table(spark: SparkSession, path: str, like: DataFrame, *, deletion_vectors: bool) -> None:
    DeltaTable.create(spark).location(path).addColumns(like.schema).property(
        "delta.enableDeletionVectors", str(deletion_vectors).lower()).execute()


def merge_batches(spark: SparkSession, decoded: DataFrame, topic: Topic, path: str,
                  per_trigger: int, *, deletion_vectors: bool) -> float:
    """Seconds of Delta's MERGEs alone: the stream's micro-batches (`per_trigger` offsets,
    split evenly over the partitions), already decoded, reduced to the last change per key
    and cached before each timed MERGE, into a fresh table."""
    new_table(spark, path, decoded.select(*topic.columns), deletion_vectors=deletion_vectors)
    share, seconds = per_trigger // PARTITIONS, 0.0
    top = decoded.agg(F.max("_offset")).first()
    assert top is not None
    for number in range(int(top[0]) // share + 1):
        batch = last_change_per_key(decoded.where(F.floor(F.col("_offset") / share) == number),
                                    ["id"]).cache()
        batch.count()
        seconds += bare_merge(spark, path, batch, topic.columns)
        batch.unpersist()
    return seconds


def apply_all(spark: SparkSession, topic: Topic, work: Path, per_trigger: int, *,
              deletion_vectors: bool) -> tuple[float, float, float, float]:
    """Seconds of (stream, bulk_read decode-only, plain Delta append of the decoded rows,
    Delta's MERGEs alone of the decoded micro-batches)."""
    streamed = timed(lambda: run(spark, stream_config(
        topic, work, per_trigger, deletion_vectors=deletion_vectors)))
    decoded = str(work / f"{topic.name}-decoded")
    read = timed(lambda: bulk_read.run(spark, JobConfig(
        topic=topic.name, output=decoded, bootstrap_servers=topic.bootstrap,
        service_url=topic.url)))
    cached = spark.read.parquet(decoded).select(*topic.columns).cache()
    cached.count()
    appended = timed(lambda: cached.write.format("delta").mode("append").save(
        str(work / f"{topic.name}-append")))
    cached.unpersist()
    merged = merge_batches(spark, spark.read.parquet(decoded), topic,
                           str(work / f"{topic.name}-merge"), per_trigger,
                           deletion_vectors=deletion_vectors)
    return streamed, read, appended, merged


def where_time_goes(spark: SparkSession, progress: Progress, path: str, wall: float) -> str:
    total, batch = progress.seconds("triggerExecution"), progress.seconds("addBatch")
    merges = DeltaTable.forPath(spark, path).history().where("operation = 'MERGE'").collect()
    merge = {n: sum(int(m.operationMetrics.get(n, 0)) for m in merges) / 1000
             for n in MERGE_METRICS}
    files = {n: sum(int(m.operationMetrics.get(n, 0)) for m in merges)
             for n in ("numTargetFilesRemoved", "numTargetFilesAdded",
                       "numTargetDeletionVectorsAdded")}
    return (f"where the stream's {wall:.1f} s go: start-up {wall - total:.1f} s; "
            f"{len(progress.batches)} micro-batches {total:.1f} s = Kafka offsets, planning, "
            f"checkpoint {total - batch:.1f} s + foreachBatch {batch:.1f} s = MERGE "
            f"{merge['executionTimeMs']:.1f} s (of which materialize source "
            f"{merge['materializeSourceTimeMs']:.1f} s, scan for matches "
            f"{merge['scanTimeMs']:.1f} s, rewrite {merge['rewriteTimeMs']:.1f} s) + before "
            f"MERGE {batch - merge['executionTimeMs']:.1f} s (Kafka fetch and cache of the "
            f"batch, header aggregate, table history); the MERGEs rewrote "
            f"{files['numTargetFilesRemoved']} file(s), wrote {files['numTargetFilesAdded']} and "
            f"{files['numTargetDeletionVectorsAdded']} deletion vector(s)")


def check_table(spark: SparkSession, path: str, live: set[int], updated: set[int], *,
                current: bool = False, soft: bool = False) -> bool:
    """The table holds the live keys and the updated rows (`current`: a --history table's
    current versions; `soft`: a --deletes soft table's rows not deleted)."""
    table = spark.read.format("delta").load(path)
    if current:
        table = table.where("_is_current")
    if soft:
        table = table.where("NOT _deleted")
    count, changed = table.count(), table.where("note = 'updated'").count()
    ok = count == len(live) and changed == len(updated)
    print(f"table rows {count:,} (expected live keys = inserts - deletes: {len(live):,}), "
          f"updated rows {changed:,} (expected {len(updated):,}): {'ok' if ok else 'WRONG'}")
    return ok


def rate(name: str, records: int, seconds: float) -> float:
    print(f"{name:<44} {records / seconds:>10,.0f} rec/s ({seconds:.1f} s)")
    return records / seconds


def measure_speed(spark: SparkSession, bootstrap: str, url: str, work: Path, count: int,
                  per_trigger: int, *, deletion_vectors: bool) -> tuple[Topic, int, bool]:
    """Time the three ways to Delta; (the topic, the live keys, whether the table is right)."""
    warm = Topic("warmup", bootstrap, url)
    warm.send_all(plan(WARM_UP)[0])
    apply_all(spark, warm, work, per_trigger, deletion_vectors=deletion_vectors)
    topic, (changes, live, updated) = Topic("bench", bootstrap, url), plan(count)
    kinds = {k: sum(1 for op, _ in changes if op == k) for k in ("insert", "update", "delete")}
    sent = timed(lambda: topic.send_all(changes))
    print(f"produced {count:,} changes ({kinds['insert']:,} inserts, {kinds['update']:,} "
          f"updates, {kinds['delete']:,} deletes) over {PARTITIONS} partitions in {sent:.1f} s")
    progress = Progress()
    spark.streams.addListener(progress)
    streamed, read, appended, merged = apply_all(spark, topic, work, per_trigger,
                                                 deletion_vectors=deletion_vectors)
    spark.streams.removeListener(progress)
    stream = rate(f"stream (available-now, {per_trigger:,}/micro-batch, deletion vectors "
                  f"{'on' if deletion_vectors else 'off'})", count, streamed)
    plain = rate("plain Delta append of the decoded rows", count, appended)
    decode = rate("bulk_read decode-only (Parquet)", count, read)
    merge = rate("Delta's MERGEs alone of the decoded batches", count, merged)
    print(f"stream vs plain Delta append: {stream:,.0f} rec/s vs {plain:,.0f} rec/s, ratio "
          f"{stream / plain:.2f}")
    print(f"stream vs bulk_read decode-only: {stream:,.0f} rec/s vs {decode:,.0f} rec/s, "
          f"ratio {stream / decode:.2f} (target >= 0.5)")
    print(f"stream vs Delta's MERGEs alone: {stream:,.0f} rec/s vs {merge:,.0f} rec/s, ratio "
          f"{stream / merge:.2f}; Delta's MERGEs alone vs bulk_read decode-only: "
          f"{merge / decode:.2f} (the stream cannot be faster than its MERGEs)")
    path = stream_config(topic, work, per_trigger).table_path
    print(where_time_goes(spark, progress, path, streamed))
    return topic, len(live), check_table(spark, path, live, updated)


def measure_order(spark: SparkSession, bootstrap: str, url: str, work: Path, count: int,
                  per_trigger: int, rounds: int = 4) -> bool:
    """The stream in commit order (values with _tidb_commit_ts: the guard's windows, its
    tombstones and its MERGE conditions) against the same stream with --order offset, and the
    --history stream (SCD type 2) against the plain one in commit order, and the stream in
    commit order with --deletes soft (each row its own tombstone: no guard table) against offset
    order, on the same topic and the same micro-batches, each from an empty table and
    checkpoint; `rounds` rounds, the order of the four turning each round, so that each runs
    once in each place (the best time of each is kept)."""
    topic, (changes, live, updated) = Topic("ordered", bootstrap, url, extension=True), plan(
        count)
    topic.columns += ["_tidb_op", "_tidb_commit_ts", "_tidb_commit_physical_time"]
    topic.send_all(changes)
    ok = True
    kinds = ("offset", "commit", "history", "soft")
    seconds: dict[str, list[float]] = {kind: [] for kind in kinds}
    for number in range(rounds):
        for kind in kinds[number % 4:] + kinds[:number % 4]:
            config = stream_config(topic, work, per_trigger, commit_order=kind != "offset",
                                   history=kind == "history",
                                   deletes=Deletes.SOFT if kind == "soft" else Deletes.HARD,
                                   table_path=str(work / f"ordered-{kind}-{number}"),
                                   checkpoint=str(work / f"ordered-{kind}-{number}-cp"))
            seconds[kind].append(timed(functools.partial(run, spark, config)))
            ok = check_table(spark, config.table_path, live, updated,
                             current=kind == "history", soft=kind == "soft") and ok
    best = {kind: min(times) for kind, times in seconds.items()}
    guarded = rate("stream in commit order (the guard)", count, best["commit"])
    plain = rate("the same stream with --order offset", count, best["offset"])
    kept = rate("the same stream with --history", count, best["history"])
    soft = rate("the same stream in commit order with --deletes soft", count, best["soft"])
    ratios = [o / c for c, o in zip(seconds["commit"], seconds["offset"], strict=True)]
    print(f"commit order vs offset order: {guarded:,.0f} rec/s vs {plain:,.0f} rec/s, ratio "
          f"{guarded / plain:.2f} (per round {', '.join(f'{r:.2f}' for r in ratios)}; "
          f"target >= 0.9)")
    ratios = [c / h for h, c in zip(seconds["history"], seconds["commit"], strict=True)]
    print(f"--history vs commit order: {kept:,.0f} rec/s vs {guarded:,.0f} rec/s, ratio "
          f"{kept / guarded:.2f} (per round {', '.join(f'{r:.2f}' for r in ratios)})")
    ratios = [o / c for c, o in zip(seconds["soft"], seconds["offset"], strict=True)]
    print(f"commit order with --deletes soft vs offset order: {soft:,.0f} rec/s vs "
          f"{plain:,.0f} rec/s, ratio {soft / plain:.2f} (per round "
          f"{', '.join(f'{r:.2f}' for r in ratios)})")
    return ok


def send_slowly(topic: Topic, first_id: int, sent: dict[int, float]) -> None:
    producer, start = topic.producer(**{"linger.ms": 0}), time.monotonic()
    for i in range(LATENCY_CHANGES):
        time.sleep(max(0.0, start + i / LATENCY_RATE - time.monotonic()))
        topic.send(producer, "insert", first_id + i)
        producer.flush(30)
        sent[first_id + i] = time.monotonic()


def watch(path: str, first_id: int, errors: list[BaseException]) -> tuple[dict[int, float], float]:
    """When each key >= first_id first shows in the table; the mean time between polls."""
    table, seen, polls, start = deltalake.DeltaTable(path), {}, 0, time.monotonic()
    version = table.version()
    while len(seen) < LATENCY_CHANGES and time.monotonic() < start + 120 and not errors:
        time.sleep(POLL_SECONDS)
        table.update_incremental()
        polls += 1
        if table.version() != version:
            version, now = table.version(), time.monotonic()
            # QueryBuilder: to_pyarrow_table may abort at exit (docs/streaming.md).
            ids = pa.table(deltalake.QueryBuilder().register("stream", table).execute(
                f"SELECT id FROM stream WHERE id >= {first_id}").read_all())
            for row_id in ids.column("id").to_pylist():
                seen.setdefault(row_id, now)
    return seen, (time.monotonic() - start) / max(polls, 1)


def while_streaming(spark: SparkSession, config: StreamConfig,
                    work: Callable[[list[BaseException]], T]) -> T:
    """Run `config`'s stream in a thread; once its first (empty) trigger has run, `work(errors)`
    (`errors`: the stream's failure, when it fails); then stop the stream. `work`'s result, or
    the stream's error."""
    stop, errors = threading.Event(), []

    def stream() -> None:
        try:
            run(spark, config, stop=stop)
        except BaseException as exc:  # reported below
            errors.append(exc)

    runner = threading.Thread(target=stream, daemon=True)
    runner.start()
    while not errors and not any(q.lastProgress for q in spark.streams.active):
        time.sleep(0.2)  # until the first (empty) trigger has run
    try:
        result = work(errors)
    finally:
        stop.set()
        runner.join(120)
    if errors:
        raise errors[0]
    return result


def measure_latency(spark: SparkSession, topic: Topic, work: Path, first_id: int,
                    live: int, *, deletion_vectors: bool) -> bool:
    config = stream_config(topic, work, LATENCY_CHANGES, trigger=Trigger(seconds=1),
                           deletion_vectors=deletion_vectors)
    sent: dict[int, float] = {}

    def measure(errors: list[BaseException]) -> tuple[dict[int, float], float]:
        threading.Thread(target=send_slowly, args=(topic, first_id, sent), daemon=True).start()
        return watch(config.table_path, first_id, errors)

    seen, resolution = while_streaming(spark, config, measure)
    latencies = [seen[k] - sent[k] for k in sent if k in seen]
    if len(latencies) < LATENCY_CHANGES:
        print(f"latency: only {len(latencies)} of {LATENCY_CHANGES} changes became visible")
        return False
    cuts = statistics.quantiles(latencies, n=100, method="inclusive")
    print(f"latency produce -> visible (processing-time=1 second, {LATENCY_RATE:g} changes/s, "
          f"table of {live:,} rows): p50 {cuts[49]:.2f} s, p99 {cuts[98]:.2f} s over "
          f"{len(latencies)} changes (poll every {resolution * 1000:.0f} ms)")
    return True


def merge_floor(spark: SparkSession, topic: Topic, work: Path, first_id: int) -> None:
    """Delta's MERGE alone of micro-batches the size of the latency run's (new keys, cached),
    into the table of Delta's MERGEs alone (as big as the stream's): the floor of one
    micro-batch, which a change waits for up to twice (the batch running when it arrives,
    then its own)."""
    path, size = str(work / f"{topic.name}-merge"), int(LATENCY_RATE * 2)
    like = spark.read.format("delta").load(path).limit(size).withColumn(
        "_op", F.lit("upsert")).cache()
    seconds = []
    for round_ in range(LATENCY_MERGES):
        batch = like.withColumn("id", F.lit(first_id + LATENCY_CHANGES + round_ * size)
                                + F.monotonically_increasing_id()).cache()
        batch.count()
        seconds.append(bare_merge(spark, path, batch, topic.columns))
        batch.unpersist()
    like.unpersist()
    cuts = statistics.quantiles(seconds, n=100, method="inclusive")
    print(f"Delta's MERGE alone of {size} new rows (cached) into the same-sized table, "
          f"{LATENCY_MERGES} times: p50 {cuts[49]:.2f} s, max {max(seconds):.2f} s (a change "
          f"waits for up to two micro-batches: p99 <= 3 s needs a micro-batch <= ~1.4 s)")


CLUSTER_DEFAULTS = "spark.locality.wait 0\nspark.executor.memory 2g\n"


def measure_scale_out(topic: Topic, work: Path, count: int, per_trigger: int,
                      switch: str) -> None:
    """The same stream as a driver process on a standalone cluster (deploy/spark/local_cluster.py)
    of 1 worker, then of 2 (1 core, 2 GB executor each), into fresh tables: the scale-out."""
    cluster = SparkCluster(work / "cluster", workers=1, memory="2g", defaults=CLUSTER_DEFAULTS,
                           c1_jit=False, whole_stage=True)
    seconds: list[tuple[float, float]] = []
    try:
        for workers in (1, 2):
            if workers == 2:
                cluster.start_worker(1)
            config = stream_config(topic, work / f"cluster-{workers}", per_trigger)
            command = [sys.executable, "-m", "spark_jobs.stream", "--topic", topic.name,
                       "--bootstrap-servers", topic.bootstrap, "--service-url", topic.url,
                       "--table-path", config.table_path, "--checkpoint", config.checkpoint,
                       "--trigger", "available-now", "--max-offsets-per-trigger",
                       str(per_trigger), "--deletion-vectors", switch, "--master", cluster.url]
            started = time.perf_counter()
            done = subprocess.run(command, cwd=ROOT, env=cluster.env, capture_output=True,
                                  text=True, check=False)
            if done.returncode:
                sys.exit(f"the stream on the cluster failed:\n{done.stderr[-3000:]}")
            batches = sum(map(float, re.findall(r"^stream: batch \d+: .* in ([\d.]+) s$",
                                                done.stderr, re.M)))
            seconds.append((time.perf_counter() - started, batches))
            rate(f"stream on {workers} cluster worker(s), wall clock", count, seconds[-1][0])
            rate(f"stream on {workers} cluster worker(s), micro-batches", count, seconds[-1][1])
    finally:
        cluster.stop()
    (wall_1, batches_1), (wall_2, batches_2) = seconds
    print(f"stream on 2 workers / on 1 worker: {wall_1 / wall_2:.2f} wall clock (start-up "
          f"included), {batches_1 / batches_2:.2f} micro-batches (target >= 1.6; 2 cores in "
          f"all here, shared by the executors, the driver and the broker)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--changes", type=int, default=1_000_000)
    parser.add_argument("--per-trigger", type=int, default=250_000,
                        help="the stream's max offsets per micro-batch")
    parser.add_argument("--deletion-vectors", choices=["on", "off"], default="on",
                        help="the stream's --deletion-vectors (default on, as the stream's "
                             "new tables)")
    parser.add_argument("--order-only", action="store_true",
                        help="only the commit-order comparison (after a warm-up)")
    args = parser.parse_args()
    vectors = args.deletion_vectors == "on"
    work = Path(tempfile.mkdtemp(prefix="flatavro-bench-stream-"))
    with broker(work / "kafka") as bootstrap, service(work) as url:
        spark = build_session("flatavro-bench-stream", "local[2]")
        spark.sparkContext.setLogLevel("ERROR")
        if args.order_only:
            try:
                warm = Topic("warmup", bootstrap, url, extension=True)
                warm.send_all(plan(WARM_UP)[0])
                run(spark, stream_config(warm, work, args.per_trigger))
                ok = measure_order(spark, bootstrap, url, work, args.changes, args.per_trigger)
            finally:
                spark.stop()
            shutil.rmtree(work, ignore_errors=True)
            sys.exit(0 if ok else 1)
        try:
            topic, live, ok = measure_speed(spark, bootstrap, url, work, args.changes,
                                            args.per_trigger, deletion_vectors=vectors)
            ok = measure_latency(spark, topic, work, args.changes, live,
                                 deletion_vectors=vectors) and ok
            merge_floor(spark, topic, work, args.changes)
            ok = measure_order(spark, bootstrap, url, work, args.changes,
                               args.per_trigger) and ok
        finally:
            spark.stop()
        measure_scale_out(topic, work, args.changes, args.per_trigger, args.deletion_vectors)
    shutil.rmtree(work, ignore_errors=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
