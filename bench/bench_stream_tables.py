"""A whole database in one stream: N tables in one application against one table, the same
total number of changes; produce-to-visible latency per table at a 1 s trigger; the driver's
memory; and the same tables as separate single-topic applications. One run, local[2].

Method. A real broker and a `flatavro serve` start on free loopback ports (as bench_stream).
For each N of ``--tables`` (default 1, 20, 100), N 3-partition topics ``db<N>_t<i>`` of the
20-column benchmark table are registered and get ``--changes / N`` changes each (bench_stream's
mix: 80% inserts of new keys, 15% updates, 5% deletes), produced before the stream starts.
Timed: `spark_jobs.jobs.stream.run` with ``--topic-pattern 'db<N>_.*'``, ``--table-path-template``
``<work>/db<N>/{topic}``, available-now, every message in one micro-batch (`--parallel-tables`,
default 4), from empty tables and checkpoint, wall clock with start-up. Each N is compared with
the one-table run (N = 1, same code path: a pattern matching one topic). Every table must then
hold exactly its live keys, else exit 1.
Latency: the N-table stream at processing-time=1 second in a thread; for ``--latency-seconds``
(20) one new key per table is produced every second; each table's Delta log gives, for every
key, the commit time of the first version that holds it; p50/p99 over all tables' keys.
Driver memory: the JVM's and Python's resident set (VmRSS) after the N-table run.
Separate applications: the same N tables (first N = 20 only) as N ``python -m spark_jobs.stream
--topic`` processes, ``--apps-at-once`` (5) running at a time: their wall clock against the
one application's.
Delta's floor (`delta_floor`): Delta's own MERGEs with no stream around them, in the same warm
session, ``--parallel-tables`` tables at a time: each of the N tables' rows (read back from the
stream's tables and cached: the live keys, fewer rows than the stream's MERGEs had) into an empty
table of its own with the stream's clauses, then one new row into each of them. An N-table
stream does at least those MERGEs, so the first bounds its ratio against the one-table stream
from above, and the second bounds from below the time of a micro-batch that touches every table.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import deltalake
from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from bench.bench_stream import ROOT, Topic, new_table, plan, service
from bench.figures import timed
from bench.kafka_broker import broker
from spark_jobs.jobs.stream import run
from spark_jobs.session import build_session
from spark_jobs.settings.config import DEFAULT_PARALLEL_TABLES, StreamConfig, Trigger
from spark_jobs.settings.tables import PathTemplate, Topics
from spark_jobs.sinks.merge import clauses, key_on, values

LATENCY_KEY = 10_000_000
"""Keys of the latency phase start here (above any key of the timed changes)."""


def topics_for(tables: int, bootstrap: str, url: str, changes: int) -> list[Topic]:
    """`tables` topics, registered, with `changes` / `tables` changes each, produced."""
    topics = [Topic(f"db{tables}_t{i:03d}", bootstrap, url) for i in range(tables)]
    share = changes // tables
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda t: t.send_all(plan(share)[0]), topics))
    return topics


def config(tables: int, work: Path, topic: Topic, **more: object) -> StreamConfig:
    fields: dict[str, object] = {
        "topic": "", "table_path": "", "bootstrap_servers": topic.bootstrap,
        "service_url": topic.url, "trigger": Trigger(available_now=True),
        "checkpoint": str(work / f"db{tables}-checkpoint"),
        "topics": Topics(pattern=f"db{tables}_.*"),
        "table_template": PathTemplate(str(work / f"db{tables}" / "{topic}")), **more}
    return StreamConfig(**fields)  # type: ignore[arg-type]


def check(work: Path, tables: int, share: int) -> bool:
    """Every table holds its live keys."""
    live = len(plan(share)[1])
    wrong = [p.name for p in sorted((work / f"db{tables}").iterdir())
             if deltalake.QueryBuilder().register("t", deltalake.DeltaTable(str(p))).execute(
                 "SELECT count(*) AS n FROM t").read_all().column(0)[0].as_py() != live]
    print(f"  {tables} table(s) of {live:,} live keys each: "
          f"{'ok' if not wrong else 'WRONG: ' + ', '.join(wrong)}")
    return not wrong


def rss_mb(spark: SparkSession) -> str:
    """The resident memory of the driver JVM and of this Python process."""
    def vm_rss(pid: int) -> float:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0
    gateway = spark.sparkContext._gateway
    jvm = getattr(getattr(gateway, "proc", None), "pid", None)
    jvm_mb = f"{vm_rss(jvm):,.0f} MB" if jvm else "?"
    return f"driver JVM {jvm_mb}, Python {vm_rss(os.getpid()):,.0f} MB"


def latency(spark: SparkSession, tables: int, work: Path, topics: list[Topic],
            seconds: int) -> list[float]:
    """Produce-to-visible seconds of one new key per table per second, at a 1 s trigger."""
    stop, errors = threading.Event(), list[BaseException]()

    def stream() -> None:
        try:
            run(spark, config(tables, work, topics[0], trigger=Trigger(seconds=1)), stop=stop)
        except BaseException as exc:  # reported below
            errors.append(exc)

    thread = threading.Thread(target=stream)
    thread.start()
    sent: dict[int, float] = {}
    producers = [t.producer(**{"linger.ms": 0}) for t in topics]
    start = time.time()
    for second in range(seconds):
        time.sleep(max(0.0, start + second - time.time()))
        key = LATENCY_KEY + second
        sent[key] = time.time()
        for topic, producer in zip(topics, producers, strict=True):
            topic.send(producer, "insert", key)
            producer.poll(0)
    for producer in producers:
        producer.flush(30)
    deadline = time.monotonic() + 600
    last = LATENCY_KEY + seconds - 1
    while time.monotonic() < deadline and not errors and not all(
            _holds(work / f"db{tables}" / t.name, last) for t in topics):
        time.sleep(1)
    stop.set()
    thread.join(600)
    if errors:
        raise errors[0]
    return [seen - sent[key] for t in topics
            for key, seen in _first_seen(work / f"db{tables}" / t.name).items() if key in sent]


def _holds(path: Path, key: int) -> bool:
    try:
        table = deltalake.DeltaTable(str(path))
    except Exception:  # not created yet
        return False
    found = deltalake.QueryBuilder().register("t", table).execute(
        f"SELECT count(*) FROM t WHERE id = {key}").read_all().column(0)[0].as_py()
    return bool(found)


def _first_seen(path: Path) -> dict[int, float]:
    """For each latency key of the table, the commit time of the first version holding it."""
    table = deltalake.DeltaTable(str(path))
    seen: dict[int, float] = {}
    for commit in sorted(table.history(), key=lambda c: c["version"]):
        if commit.get("operation") != "MERGE":
            continue
        at = deltalake.DeltaTable(str(path), version=commit["version"])
        ids = deltalake.QueryBuilder().register("t", at).execute(
            f"SELECT id FROM t WHERE id >= {LATENCY_KEY}").read_all().column(0).to_pylist()
        for key in ids:
            seen.setdefault(key, commit["timestamp"] / 1000)
    return seen


def delta_floor(spark: SparkSession, work: Path, tables: int, threads: int
                ) -> tuple[int, float, float]:
    """Delta's own MERGEs of the N tables, no stream: (rows, seconds to MERGE each table's rows
    into an empty table, seconds to MERGE one new row into each), `threads` tables at a time,
    with the stream's clauses in Kafka order (docs/speed.md)."""
    sources: list[DataFrame] = []
    for table in sorted((work / f"db{tables}").iterdir()):
        sources.append(spark.read.format("delta").load(str(table)).withColumn(
            "_op", F.lit("upsert")).cache())
    rows = sum(source.count() for source in sources)
    paths = [str(work / f"floor{tables}" / str(n)) for n in range(len(sources))]
    for path, source in zip(paths, sources, strict=True):
        new_table(spark, path, source.drop("_op"), deletion_vectors=True)
    assigned = values([c for c in sources[0].columns if c != "_op"], soft=False)

    def merge_all(pick: Callable[[DataFrame], DataFrame]) -> None:
        def merge(path: str, source: DataFrame) -> None:
            clauses(DeltaTable.forPath(spark, path).alias("t").merge(
                pick(source).alias("s"), key_on(["id"])), assigned, ordered=False,
                soft=False).execute()
        with concurrent.futures.ThreadPoolExecutor(threads) as pool:
            list(pool.map(merge, paths, sources))
    try:
        all_rows = timed(lambda: merge_all(lambda source: source))
        one_row = timed(lambda: merge_all(
            lambda source: source.limit(1).withColumn("id", F.lit(2 * LATENCY_KEY))))
    finally:
        for source in sources:
            source.unpersist()
    return rows, all_rows, one_row


def separate_apps(tables: int, work: Path, topics: list[Topic], at_once: int) -> float:
    """Wall clock of one single-topic application per table, `at_once` at a time."""
    def one(topic: Topic) -> None:
        done = subprocess.run(
            [sys.executable, "-m", "spark_jobs.stream", "--topic", topic.name,
             "--bootstrap-servers", topic.bootstrap, "--service-url", topic.url,
             "--table-path", str(work / f"apps{tables}" / topic.name), "--checkpoint",
             str(work / f"apps{tables}-checkpoints" / topic.name), "--trigger",
             "available-now", "--master", "local[2]"],
            cwd=ROOT, capture_output=True, text=True, check=False)
        if done.returncode:
            sys.exit(f"the stream of {topic.name} failed:\n{done.stderr[-3000:]}")

    def all_apps() -> None:
        with concurrent.futures.ThreadPoolExecutor(at_once) as pool:
            list(pool.map(one, topics))
    return timed(all_apps)


def measure(spark: SparkSession, args: argparse.Namespace, work: Path, *, tables: int,
            topics: list[Topic], rates: dict[int, float]) -> bool:
    """Time the N-table application (then its latency and the separate applications); whether
    every table is right."""
    total = args.changes // tables * tables
    seconds = timed(lambda: run(spark, config(tables, work, topics[0],
                                              parallel_tables=args.parallel_tables)))
    rates[tables] = total / seconds
    print(f"{tables:>4} table(s), one application: {total:,} changes in {seconds:.1f} s = "
          f"{rates[tables]:,.0f} rec/s; {rss_mb(spark)}")
    if 1 in rates and tables != 1:
        print(f"  {tables} tables vs one table: ratio {rates[tables] / rates[1]:.2f} "
              f"(target >= 0.7)")
    ok = check(work, tables, args.changes // tables)
    rows, all_rows, one_row = delta_floor(spark, work, tables, args.parallel_tables)
    print(f"  Delta's own MERGEs alone, {args.parallel_tables} tables at a time: the {rows:,} "
          f"rows into {tables} empty table(s) {all_rows:.1f} s, one new row into each "
          f"{one_row:.1f} s")
    if 1 in rates and tables != 1:
        print(f"  so {tables} tables in one application reach at most {total / all_rows:,.0f} "
              f"rec/s, a ratio of {total / all_rows / rates[1]:.2f} against the one-table "
              f"stream; a micro-batch touching all {tables} tables takes at least "
              f"{one_row:.1f} s")
    if tables > 1 and args.latency_seconds:
        lags = latency(spark, tables, work, topics, args.latency_seconds)
        cuts = statistics.quantiles(lags, n=100) if len(lags) > 1 else lags * 99
        print(f"  produce -> visible, {len(lags)} keys over {tables} tables at a 1 s trigger: "
              f"p50 {cuts[49]:.1f} s, p99 {cuts[98]:.1f} s (target p99 <= 10 s)")
    if tables == 20 and args.apps_at_once:
        apart = separate_apps(tables, work, topics, args.apps_at_once)
        print(f"  the same {tables} tables as {tables} single-topic applications, "
              f"{args.apps_at_once} at a time: {total / apart:,.0f} rec/s ({apart:.1f} s); "
              f"separate applications / one application: {apart / seconds:.2f} of the time")
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--changes", type=int, default=100_000,
                        help="changes in all, spread evenly over the tables")
    parser.add_argument("--tables", default="1,20,100", help="the table counts to run")
    parser.add_argument("--parallel-tables", type=int, default=DEFAULT_PARALLEL_TABLES)
    parser.add_argument("--latency-seconds", type=int, default=20)
    parser.add_argument("--apps-at-once", type=int, default=5)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="flatavro-bench-tables-"))
    ok, rates = True, dict[int, float]()
    with broker(work / "kafka") as bootstrap, service(work) as url:
        spark = build_session("flatavro-bench-tables", "local[2]")
        spark.sparkContext.setLogLevel("ERROR")
        try:
            warm = topics_for(2, bootstrap, url, 20_000)  # untimed: warms the JVM
            run(spark, config(2, work, warm[0], parallel_tables=args.parallel_tables))
            for tables in (int(n) for n in args.tables.split(",")):
                topics = topics_for(tables, bootstrap, url, args.changes)
                ok = measure(spark, args, work, tables=tables, topics=topics,
                             rates=rates) and ok
        finally:
            spark.stop()
    shutil.rmtree(work, ignore_errors=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
