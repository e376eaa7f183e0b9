"""A whole database in one stream: N tables in one application against one table, the same
total number of changes; produce-to-visible latency per table at a 1 s trigger; the driver's
memory; and the same tables as separate single-topic applications; with ``--changelog``, the
same N tables landed in a changelog first and merged behind it. One run, local[2].

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
With ``--changelog`` (land first, merge behind: `spark_jobs.jobs.apply`), for each N, in the
same run and on the same topics (before any latency key is produced to them): the N-table stream
with ``--changelog``, available-now, from an empty changelog, tables and checkpoint of its own
(warmed up like the direct path, untimed), with an apply lag and apply rows no table reaches, so
that the background thread applies nothing and the run's final drain applies every table.
`Applier`'s methods are wrapped for the run (`watched`): landing = from the call of `run` to the
return of the changelog's append of the last micro-batch (start-up included; the changelog then
holds every message, which is checked); the drain (the apply of all N tables) is timed apart.
Printed: landing rec/s, N tables against one (target >= 0.7 at 100 tables), and landing and the
whole run (landing + drain) against the direct run of the same N (N = 1: the cost of landing
first). Every typed table must then hold exactly its live keys and the changelog every message,
else exit 1. Latency with ``--changelog`` (every N, after the direct latency phase and the
separate applications): the same stream restarted at processing-time=1 second with
``--apply-lag-seconds`` (30); once its first micro-batch and its first apply (the restart's
recovery) are done, one new key per table per second for ``--latency-seconds``, each message's
partition and offset taken from its delivery report. Produce -> visible in a fresh read = the
commit time (the changelog's Delta history) of the changelog version that appended the
micro-batch (``_batch``, the version's ``txnVersion``) holding that partition and offset; the
typed-table lag = the commit time of the first version of its typed table that holds the key.
p50/p99 of both (target p99 <= 5 s at 100 tables for the first) and the typed-table lag's max;
per key, landed -> in the typed table (the typed-table lag less the fresh one), whose max should
stay within the apply lag plus the longest apply of the phase. One fresh read (`fresh_read`) of
the first table, right after its last key landed, must hold every key; every typed table, once
the apply has caught up, exactly its live keys and the latency keys; else exit 1.
``--direct-rate-only`` leaves out the direct path's Delta floor, latency and separate
applications (its N-table run stays, for the ratios).
``--format iceberg`` (with ``--changelog --direct-rate-only``): the same runs with ``--format
iceberg`` in the stream's default catalog (JDBC on SQLite, warehouse ``<work>/lake``,
`IcebergCatalog.sqlite`): the direct run's tables ``db<N>.<topic>``, the changelog stream's
``changelog<N>.<topic>`` (``--table-template``), its changelog the catalog table
``bench.changelog_<N>``; everything read outside Spark with PyIceberg (every delete file
applied). Landing and drain: the same wrapped `Applier` methods. Produce -> visible in a fresh
read: the commit time (``committed_at``, the snapshot's timestamp) of the changelog snapshot whose
summary names the changelog's app id and the micro-batch (`sinks.iceberg.APP_ID` / ``BATCH_ID``)
of the row's ``_batch``; the typed-table lag: the commit time of the typed table's first snapshot
holding the key (its snapshots oldest first, read at each snapshot id; those that add no row, a
compaction's or a delete's, skipped). The checks are the same (row counts with PyIceberg; the
fresh read with the catalog, `fresh_read(..., catalog=...)`). Delta's floor and the separate
applications are Delta's own (bench_table_floor has Iceberg's floor): hence
``--direct-rate-only``. Every printed line names the format.
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
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from unittest import mock

import deltalake
import pyarrow as pa
import pyarrow.compute as pc
from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from bench.bench_stream import ROOT, Topic, new_table, plan, service
from bench.figures import timed
from bench.kafka_broker import broker
from service.core.framing import HEADER_SIZE
from spark_jobs.jobs.apply import Applier
from spark_jobs.jobs.fresh import FreshSource, fresh_read
from spark_jobs.jobs.stream import run
from spark_jobs.session import build_session
from spark_jobs.settings.config import DEFAULT_PARALLEL_TABLES, StreamConfig, TableFormat, Trigger
from spark_jobs.settings.iceberg import IcebergCatalog
from spark_jobs.settings.tables import PathTemplate, Topics
from spark_jobs.sinks.changelog import APP_ID_PROPERTY, BATCH, changelog_app_id
from spark_jobs.sinks.iceberg import APP_ID, BATCH_ID
from spark_jobs.sinks.merge import clauses, key_on, values

if TYPE_CHECKING:  # PyIceberg takes 1.5 s to import: only with --format iceberg
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.table import DataScan, Table
    from pyiceberg.table.snapshots import Snapshot

LATENCY_KEY = 10_000_000
"""Keys of the latency phase start here (above any key of the timed changes)."""

CHANGELOG_KEY = LATENCY_KEY + 1_000_000
SETTLING_SECONDS = 5
"""The first seconds of the --changelog latency phase, also left out in a second figure."""
"""Keys of the changelog's latency phase start here (above the direct latency phase's)."""

NEVER_MS = 24 * 3600 * 1000
"""An apply lag no timed run reaches: the landing run's tables wait for its final drain."""


def topics_for(tables: int, bootstrap: str, url: str, changes: int) -> list[Topic]:
    """`tables` topics, registered, with `changes` / `tables` changes each, produced."""
    topics = [Topic(f"db{tables}_t{i:03d}", bootstrap, url) for i in range(tables)]
    share = changes // tables
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda t: t.send_all(plan(share)[0]), topics))
    return topics


Where = tuple[tuple[str, str, int | str], ...]
"""A row filter: (column, operator, value) conditions, all to hold; operators ``=``, ``>=``,
``>``."""


class Lake:
    """Where a run's tables are (its ``--format``) and how the benchmark reads them outside Spark:
    `DeltaLake` (paths, delta-rs) or `IcebergLake` (names in the catalog, PyIceberg)."""

    name = ""

    def __init__(self, work: Path) -> None:
        self.work = work

    def table(self, folder: str, topic: str) -> str:
        """The typed table of `topic` in `folder` (a run's tables: ``db<N>``, ...)."""
        raise NotImplementedError

    def template(self, folder: str) -> PathTemplate:
        """The ``--table-template`` of `folder`'s tables."""
        raise NotImplementedError

    def changelog(self, tables: int) -> str:
        """The ``--changelog`` of the N-table stream."""
        raise NotImplementedError

    def settings(self) -> dict[str, object]:
        """The stream's settings of the format (`StreamConfig` fields)."""
        raise NotImplementedError

    def rows(self, table: str, columns: list[str], *, where: Where = (),
             version: int | None = None) -> pa.Table:
        """`columns` of the rows of `table` (as of `version`, default the newest) that match
        `where`."""
        raise NotImplementedError

    def count(self, table: str, *, where: Where = ()) -> int:
        """The number of rows of `table` that match `where`."""
        raise NotImplementedError

    def additions(self, table: str) -> list[tuple[int, float]]:
        """(version, commit time in s) of each of `table`'s commits that may add keys, oldest
        first."""
        raise NotImplementedError

    def batch_commits(self, changelog: str) -> dict[int, float]:
        """For each micro-batch the changelog landed, the commit time (s) of its version that
        appended it."""
        raise NotImplementedError

    def holds(self, table: str, key: int) -> bool:
        """Whether `table` exists and holds `key`."""
        try:
            return bool(self.count(table, where=(("id", "=", key),)))
        except Exception:  # not created yet
            return False

    def first_seen(self, table: str, first: int) -> dict[int, float]:
        """For each key >= `first` of the table, the commit time of the first version holding
        it."""
        seen: dict[int, float] = {}
        for version, at in self.additions(table):
            for key in self.rows(table, ["id"], where=(("id", ">=", first),),
                                 version=version).column("id").to_pylist():
                seen.setdefault(key, at)
        return seen


class DeltaLake(Lake):
    """Delta tables at paths: ``<work>/<folder>/<topic>``, the changelog
    ``<work>/changelog<N>-log``; read with delta-rs (`version`: the table version)."""

    name = "delta"

    def table(self, folder: str, topic: str) -> str:
        """The table's path."""
        return str(self.work / folder / topic)

    def template(self, folder: str) -> PathTemplate:
        """``<work>/<folder>/{topic}``."""
        return PathTemplate(str(self.work / folder / "{topic}"))

    def changelog(self, tables: int) -> str:
        """Its path."""
        return str(self.work / f"changelog{tables}-log")

    def settings(self) -> dict[str, object]:
        """None: Delta is the default."""
        return {}

    def _query(self, table: str, select: str, *, where: Where, version: int | None = None
               ) -> pa.Table:
        """`select` over the table (as ``t``) where `where` holds, with delta-rs."""
        conditions = " AND ".join(f'"{c}" {op} {v!r}' for c, op, v in where)
        found = f" WHERE {conditions}" if conditions else ""
        return pa.table(deltalake.QueryBuilder().register("t", deltalake.DeltaTable(
            table, version=version)).execute(f"SELECT {select} FROM t{found}").read_all())

    def rows(self, table: str, columns: list[str], *, where: Where = (),
             version: int | None = None) -> pa.Table:
        """The rows, with delta-rs."""
        return self._query(table, ", ".join(f'"{c}"' for c in columns), where=where,
                           version=version)

    def count(self, table: str, *, where: Where = ()) -> int:
        """The count, with delta-rs."""
        return int(self._query(table, "count(*) AS n", where=where).column(0)[0].as_py())

    def additions(self, table: str) -> list[tuple[int, float]]:
        """The MERGE commits (the stream's)."""
        return [(c["version"], c["timestamp"] / 1000) for c in sorted(
            deltalake.DeltaTable(table).history(), key=lambda c: c["version"])
            if c.get("operation") == "MERGE"]

    def batch_commits(self, changelog: str) -> dict[int, float]:
        """From the Delta history: each append's ``txnVersion``."""
        table = deltalake.DeltaTable(changelog)
        app_id = changelog_app_id(table.metadata().configuration[APP_ID_PROPERTY])
        commits: dict[int, float] = {}
        for commit in sorted(table.history(), key=lambda c: c["version"]):
            if commit.get("operation") != "WRITE":
                continue
            batch = deltalake.DeltaTable(changelog, version=commit["version"]
                                         ).transaction_version(app_id)
            if batch is not None:
                commits.setdefault(int(batch), commit["timestamp"] / 1000)
        return commits


class IcebergLake(Lake):
    """Iceberg tables in the stream's default catalog (JDBC on SQLite, ``<work>/lake``): typed
    tables ``<folder>.<topic>``, the changelog ``bench.changelog_<N>``; read with PyIceberg
    (`version`: the snapshot id)."""

    name = "iceberg"

    def __init__(self, work: Path) -> None:
        super().__init__(work)
        (work / "lake").mkdir(parents=True, exist_ok=True)
        self.catalog = IcebergCatalog.sqlite(warehouse=str(work / "lake"))
        self._tables: SqlCatalog | None = None

    def table(self, folder: str, topic: str) -> str:
        """``<folder>.<topic>``."""
        return f"{folder}.{topic}"

    def template(self, folder: str) -> PathTemplate:
        """``<folder>.{topic}``."""
        return PathTemplate(f"{folder}.{{topic}}")

    def changelog(self, tables: int) -> str:
        """``bench.changelog_<N>``."""
        return f"bench.changelog_{tables}"

    def settings(self) -> dict[str, object]:
        """``--format iceberg`` and the catalog."""
        return {"table_format": TableFormat.ICEBERG, "iceberg": self.catalog}

    def load(self, table: str) -> Table:
        """The table as PyIceberg sees it now, through the catalog's SQLite file."""
        if self._tables is None:
            from pyiceberg.catalog.sql import SqlCatalog

            sqlite = self.catalog.sqlite_file()
            self._tables = SqlCatalog("flatavro", uri=f"sqlite:///{sqlite}",
                                      warehouse=f"file://{self.catalog.warehouse}")
        return self._tables.load_table(table)

    def _scan(self, table: str, *, where: Where, columns: tuple[str, ...] = ("*",),
              version: int | None = None) -> DataScan:
        """The scan of `table` (at snapshot `version`) reading `columns` where `where`
        holds."""
        from pyiceberg import expressions as E

        ops: dict[str, Any] = {  # the predicates' classes (typed by their pydantic fields)
            "=": E.EqualTo, ">=": E.GreaterThanOrEqual, ">": E.GreaterThan}
        row_filter: E.BooleanExpression = E.AlwaysTrue()
        for column, op, value in where:
            row_filter = E.And(row_filter, ops[op](column, value))
        return self.load(table).scan(row_filter=row_filter, selected_fields=columns,
                                     snapshot_id=version)

    def rows(self, table: str, columns: list[str], *, where: Where = (),
             version: int | None = None) -> pa.Table:
        """The rows, with PyIceberg (every delete file applied)."""
        return self._scan(table, where=where, columns=tuple(columns), version=version).to_arrow()

    def count(self, table: str, *, where: Where = ()) -> int:
        """The count, with PyIceberg."""
        return int(self._scan(table, where=where, columns=tuple(
            dict.fromkeys(c for c, _, _ in where)) or ("*",)).count())

    def snapshots(self, table: Table) -> list[Snapshot]:
        """The table's snapshots, oldest first."""
        return sorted(table.snapshots(), key=lambda s: (s.sequence_number or 0, s.timestamp_ms))

    def additions(self, table: str) -> list[tuple[int, float]]:
        """The snapshots that added rows (a compaction's or a delete's add none)."""
        return [(s.snapshot_id, s.timestamp_ms / 1000) for s in self.snapshots(self.load(table))
                if s.summary is not None and s.summary.operation.value != "replace"
                and int(s.summary.get("added-records") or 0) > 0]

    def batch_commits(self, changelog: str) -> dict[int, float]:
        """From the changelog's snapshots: each append's summary names the changelog's app id
        (`APP_ID`) and the batch (`BATCH_ID`)."""
        table = self.load(changelog)
        app_id = changelog_app_id(table.properties[APP_ID_PROPERTY])
        commits: dict[int, float] = {}
        for snapshot in self.snapshots(table):
            summary = snapshot.summary
            batch = None if summary is None or summary.get(APP_ID) != app_id else summary.get(
                BATCH_ID)
            if batch is not None:
                commits.setdefault(int(batch), snapshot.timestamp_ms / 1000)
        return commits


LAKES: dict[str, type[Lake]] = {"delta": DeltaLake, "iceberg": IcebergLake}


def config(tables: int, work: Path, topic: Topic, *, lake: Lake, **more: object
           ) -> StreamConfig:
    fields: dict[str, object] = {
        "topic": "", "table_path": "", "bootstrap_servers": topic.bootstrap,
        "service_url": topic.url, "trigger": Trigger(available_now=True),
        "checkpoint": str(work / f"db{tables}-checkpoint"),
        "topics": Topics(pattern=f"db{tables}_.*"),
        "table_template": lake.template(f"db{tables}"), **lake.settings(), **more}
    return StreamConfig(**fields)  # type: ignore[arg-type]


def check(lake: Lake, topics: list[Topic], *, share: int, folder: str, label: str = "",
          extra: int = 0) -> bool:
    """Every table of `topics` in `folder` holds its live keys (and `extra` latency keys)."""
    live = len(plan(share)[1]) + extra
    wrong = [t.name for t in topics if lake.count(lake.table(folder, t.name)) != live]
    keys = f"{live - extra:,} live keys + {extra} latency keys" if extra else (
        f"{live:,} live keys")
    print(f"  {len(topics)} {label}table(s) of {keys} each ({lake.name}): "
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
            seconds: int, *, lake: Lake) -> list[float]:
    """Produce-to-visible seconds of one new key per table per second, at a 1 s trigger."""
    stop, errors = threading.Event(), list[BaseException]()

    def stream() -> None:
        try:
            run(spark, config(tables, work, topics[0], lake=lake, trigger=Trigger(seconds=1)),
                stop=stop)
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
            lake.holds(lake.table(f"db{tables}", t.name), last) for t in topics):
        time.sleep(1)
    stop.set()
    thread.join(600)
    if errors:
        raise errors[0]
    return [seen - sent[key] for t in topics
            for key, seen in lake.first_seen(lake.table(f"db{tables}", t.name),
                                             LATENCY_KEY).items() if key in sent]


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


def changelog_config(tables: int, work: Path, topic: Topic, *, lake: Lake, **more: object
                     ) -> StreamConfig:
    """The N-table stream with ``--changelog``: changelog, tables and checkpoint of its own."""
    return config(tables, work, topic, lake=lake,
                  checkpoint=str(work / f"changelog{tables}-checkpoint"),
                  table_template=lake.template(f"changelog{tables}"),
                  changelog=lake.changelog(tables), **more)


@dataclass
class ApplyClock:
    """What a ``--changelog`` stream's `Applier` did (`watched`), in `time.perf_counter`
    seconds: when each micro-batch had landed, each apply of some tables, each drain."""

    landed: list[float] = field(default_factory=list)
    applies: list[tuple[float, float, int]] = field(default_factory=list)  # start, end, tables
    drains: list[tuple[float, float]] = field(default_factory=list)
    recovered: bool = False  # tables were waiting after the restart's recovery


@contextmanager
def watched() -> Iterator[ApplyClock]:
    """`Applier`'s methods wrapped (for the streams run inside) to time landing and applies."""
    clock = ApplyClock()
    original = {name: getattr(Applier, name)
                for name in ("recover", "landed_batch", "apply", "drain")}

    def recover(self: Applier) -> None:
        original["recover"](self)
        clock.recovered = bool(self.waiting)

    def landed_batch(self: Applier, batch_id: int, counts: dict[str, int]) -> None:
        original["landed_batch"](self, batch_id, counts)  # after the changelog's commit
        clock.landed.append(time.perf_counter())

    def apply(self: Applier, topics: list[str]) -> None:
        started = time.perf_counter()
        original["apply"](self, topics)
        if topics:
            clock.applies.append((started, time.perf_counter(), len(topics)))

    def drain(self: Applier) -> None:
        started = time.perf_counter()
        original["drain"](self)
        clock.drains.append((started, time.perf_counter()))

    with ExitStack() as stack:
        for name, wrapper in (("recover", recover), ("landed_batch", landed_batch),
                              ("apply", apply), ("drain", drain)):
            stack.enter_context(mock.patch.object(Applier, name, wrapper))
        yield clock


def measure_landing(spark: SparkSession, args: argparse.Namespace, work: Path, *, tables: int,
                    topics: list[Topic], rates: dict[int, float], landing: dict[int, float],
                    lake: Lake) -> bool:
    """Time the N-table stream with ``--changelog`` (landing, then the drain); whether the
    changelog holds every message and every typed table is right."""
    total = args.changes // tables * tables
    settings = changelog_config(tables, work, topics[0], lake=lake,
                                parallel_tables=args.parallel_tables, apply_lag_ms=NEVER_MS,
                                apply_rows=args.changes + 1)
    assert settings.changelog is not None
    with watched() as clock:
        started = time.perf_counter()
        run(spark, settings)
        seconds = time.perf_counter() - started
    if not clock.landed:
        print(f"{tables:>4} table(s) with --changelog ({lake.name}): nothing landed")
        return False
    landed = clock.landed[-1] - started
    drain = sum(end - start for start, end in clock.drains)
    landing[tables] = total / landed
    print(f"{tables:>4} table(s), one application with --changelog ({lake.name}): {total:,} "
          f"changes landed "
          f"in {landed:.1f} s = {landing[tables]:,.0f} rec/s (start-up included), then the "
          f"drain applied {tables} table(s) in {drain:.1f} s; {seconds:.1f} s in all = "
          f"{total / seconds:,.0f} rec/s; {rss_mb(spark)}")
    held = lake.count(settings.changelog)
    ok = held == total
    print(f"  the changelog holds {held:,} rows (every message: {total:,}): "
          f"{'ok' if ok else 'WRONG'}")
    ok = check(lake, topics, share=args.changes // tables, folder=f"changelog{tables}",
               label="typed ") and ok
    if tables in rates:
        print(f"  with --changelog vs direct ({lake.name}), {tables} table(s): landing "
              f"{landing[tables]:,.0f} rec/s vs {rates[tables]:,.0f} rec/s, ratio "
              f"{landing[tables] / rates[tables]:.2f}; "
              f"landing + drain {total / seconds:,.0f} rec/s vs {rates[tables]:,.0f} rec/s, "
              f"ratio {total / seconds / rates[tables]:.2f}")
    if 1 in landing and tables != 1:
        print(f"  {tables} tables vs one table, landing in the {lake.name} changelog: "
              f"{landing[tables]:,.0f} rec/s vs {landing[1]:,.0f} rec/s, ratio "
              f"{landing[tables] / landing[1]:.2f} (target >= 0.7 at 100 tables)")
    return ok


@dataclass
class Sent:
    """The changelog latency phase's messages: when each (topic, key) was produced, and the
    (topic, partition, offset) its delivery report gave, to its (topic, key)."""

    at: dict[tuple[str, int], float] = field(default_factory=dict)
    where: dict[tuple[str, int, int], tuple[str, int]] = field(default_factory=dict)
    failed: int = 0


def produce_keys(topics: list[Topic], seconds: int, first: int) -> Sent:
    """One new key per topic per second for `seconds` (keys from `first`), flushed."""
    sent = Sent()

    def producer(topic: Topic) -> Any:
        def delivered(error: object, message: Any) -> None:
            if error is not None:
                sent.failed += 1
                return
            key = topic.key_codec.decode(message.key(), HEADER_SIZE)["id"]
            sent.where[(message.topic(), message.partition(), message.offset())] = (
                topic.name, int(key))
        return topic.producer(**{"linger.ms": 0, "on_delivery": delivered})

    producers = [producer(t) for t in topics]
    start = time.time()
    for second in range(seconds):
        time.sleep(max(0.0, start + second - time.time()))
        for topic, each in zip(topics, producers, strict=True):
            sent.at[(topic.name, first + second)] = time.time()
            topic.send(each, "insert", first + second)
            each.poll(0)
    for each in producers:
        each.flush(30)
    if sent.failed:
        sys.exit(f"{sent.failed} latency message(s) were not delivered")
    return sent


def _cuts(values: list[float]) -> tuple[float, float]:
    """p50 and p99 of `values` (inclusive: p99 is never above the largest)."""
    if len(values) < 2:
        return values[0], values[0]
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    return cuts[49], cuts[98]


class ChangelogStream:
    """A ``--changelog`` stream in a thread (its `Applier` watched by `clock`), until `close`."""

    def __init__(self, spark: SparkSession, settings: StreamConfig, clock: ApplyClock) -> None:
        self.spark, self.settings, self.clock = spark, settings, clock
        self.stop, self.errors = threading.Event(), list[BaseException]()
        self.thread = threading.Thread(target=self._stream)
        self.thread.start()

    def _stream(self) -> None:
        try:
            run(self.spark, self.settings, stop=self.stop)
        except BaseException as exc:  # reported by `close`
            self.errors.append(exc)

    def wait(self, done: Callable[[], bool], seconds: float, *, poll: float = 1.0) -> bool:
        """Until `done()`, the stream fails or `seconds` pass; whether `done()`."""
        deadline = time.monotonic() + seconds
        while not self.errors and time.monotonic() < deadline:
            if done():
                return True
            time.sleep(poll)
        return False

    def steady(self) -> bool:
        """The first micro-batch has run, and the restart's first apply (of the tables left
        waiting by the recovery) is done."""
        return any(q.lastProgress for q in self.spark.streams.active) and (
            not self.clock.recovered or bool(self.clock.applies))

    def close(self) -> None:
        """Stop the stream; its failure, if any, raised."""
        self.stop.set()
        self.thread.join(1800)
        if self.thread.is_alive():
            raise RuntimeError("the --changelog stream did not stop within 30 minutes")
        if self.errors:
            raise self.errors[0]


def fresh_check(spark: SparkSession, settings: StreamConfig, *, lake: Lake, table: str,
                topic: str, sent: Sent, expected: int) -> bool:
    """A fresh read of the typed table `table` of `topic`, once the changelog holds its last
    latency message: it must hold `expected` rows, every latency key of its topic among them."""
    assert settings.changelog is not None
    keys = sorted(k for t, k in sent.at if t == topic)
    where = {v: k for k, v in sent.where.items()}[(topic, keys[-1])]
    deadline = time.monotonic() + 120
    while not lake.count(settings.changelog, where=(
            ("topic", "=", topic), ("partition", "=", where[1]), ("offset", "=", where[2]))):
        if time.monotonic() > deadline:
            print(f"  {topic}'s last latency key did not land within 120 s")
            return False
        time.sleep(0.2)
    rows = fresh_read(spark, changelog_path=settings.changelog, table=table,
                      source=FreshSource(service_url=settings.service_url),
                      catalog=settings.iceberg)
    found = rows.agg(F.count(F.lit(1)).alias("rows"), F.count(
        F.when(F.col("id") >= CHANGELOG_KEY, 1)).alias("keys")).first()
    assert found is not None
    typed = lake.count(table, where=(("id", ">=", CHANGELOG_KEY),))
    ok = found["rows"] == expected and found["keys"] == len(keys)
    print(f"  a fresh read ({lake.name}) of {topic} once its last latency key landed: "
          f"{found['keys']} of "
          f"{len(keys)} latency keys (its typed table alone: {typed}), {found['rows']:,} rows "
          f"(expected {expected:,}): {'ok' if ok else 'WRONG'}")
    return ok


def changelog_lags(settings: StreamConfig, sent: Sent, *, lake: Lake, folder: str, before: int
                   ) -> tuple[dict[tuple[str, int], float], dict[tuple[str, int], float]]:
    """By (topic, key), in seconds: produce -> visible in a fresh read (the commit of the
    changelog version that appended the message's batch), and produce -> in the typed table
    (the commit of its table's first version holding the key)."""
    assert settings.changelog is not None
    commits = lake.batch_commits(settings.changelog)
    fresh: dict[tuple[str, int], float] = {}
    for row in lake.rows(settings.changelog, [BATCH, "topic", "partition", "offset"],
                         where=((BATCH, ">", before),)).to_pylist():
        sent_as = sent.where.get((row["topic"], row["partition"], row["offset"]))
        if sent_as is not None:
            seen = commits[row[BATCH]] - sent.at[sent_as]
            fresh[sent_as] = min(fresh.get(sent_as, seen), seen)
    typed = {(name, key): seen - sent.at[(name, key)]
             for name in sorted({t for t, _ in sent.at})
             for key, seen in lake.first_seen(lake.table(folder, name), CHANGELOG_KEY).items()
             if (name, key) in sent.at}
    return fresh, typed


def changelog_latency(spark: SparkSession, args: argparse.Namespace, work: Path, *,
                      tables: int, topics: list[Topic], extra: int, lake: Lake) -> bool:
    """Produce -> visible with ``--changelog`` at a 1 s trigger (fresh read and typed table);
    whether the fresh read and the typed tables (live keys, `extra` latency keys of the direct
    phase and the keys of this one) are right."""
    settings = changelog_config(tables, work, topics[0], lake=lake, trigger=Trigger(seconds=1),
                                parallel_tables=args.parallel_tables,
                                apply_lag_ms=args.apply_lag_seconds * 1000)
    assert settings.changelog is not None
    before = pc.max(lake.rows(settings.changelog, [BATCH]).column(BATCH)).as_py()
    folder, share = f"changelog{tables}", args.changes // tables
    live = len(plan(share)[1]) + extra + args.latency_seconds
    with watched() as clock:
        stream = ChangelogStream(spark, settings, clock)
        try:
            if not stream.wait(stream.steady, 900, poll=0.2):
                print("  the --changelog stream was not steady within 900 s (measured anyway)")
            began = time.perf_counter()
            sent = produce_keys(topics, args.latency_seconds, CHANGELOG_KEY)
            ok = fresh_check(spark, settings, lake=lake, table=lake.table(folder, topics[0].name),
                             topic=topics[0].name, sent=sent, expected=live)
            last = CHANGELOG_KEY + args.latency_seconds - 1
            applied = stream.wait(lambda: all(lake.holds(lake.table(folder, t.name), last)
                                              for t in topics), 600 + args.apply_lag_seconds)
        finally:
            stream.close()
    if not applied:
        print(f"  the typed tables did not all hold the last latency key within "
              f"{600 + args.apply_lag_seconds} s")
    fresh, typed = changelog_lags(settings, sent, lake=lake, folder=folder,
                                  before=before if before is not None else -1)
    applies = [end - start for start, end, _ in clock.applies if start >= began]
    _report_latency(args, tables=tables, fresh=fresh, typed=typed, applies=applies,
                    fmt=lake.name)
    ok = len(fresh) == len(sent.at) and ok
    return check(lake, topics, share=share, folder=folder, label="typed ",
                 extra=extra + args.latency_seconds) and applied and ok


def _report_latency(args: argparse.Namespace, *, tables: int,
                    fresh: dict[tuple[str, int], float], typed: dict[tuple[str, int], float],
                    applies: list[float], fmt: str) -> None:
    sent = tables * args.latency_seconds
    if not fresh:
        print(f"  with --changelog ({fmt}): none of the {sent} latency keys landed")
        return
    p50, p99 = _cuts(list(fresh.values()))
    print(f"  with --changelog ({fmt}), produce -> visible in a fresh read (the changelog commit "
          f"holding it), {len(fresh)} of {sent} keys over {tables} table(s) at a 1 s trigger: "
          f"p50 {p50:.1f} s, p99 {p99:.1f} s (target p99 <= 5 s at 100 tables)")
    later = [v for (_, key), v in fresh.items() if key >= CHANGELOG_KEY + SETTLING_SECONDS]
    if later:
        p50, p99 = _cuts(later)
        print(f"  the same without the keys of the first {SETTLING_SECONDS} s (the restarted "
              f"stream's first micro-batches over every partition, which make Spark's Kafka "
              f"consumers): {len(later)} keys, p50 {p50:.1f} s, p99 {p99:.1f} s")
    if not typed:
        print(f"  with --changelog ({fmt}): no latency key reached a typed table")
        return
    p50, p99 = _cuts(list(typed.values()))
    longest = max(applies, default=0.0)
    bound = args.apply_lag_seconds + longest
    behind = max((typed[k] - fresh[k] for k in typed if k in fresh), default=float("nan"))
    print(f"  with --changelog ({fmt}), produce -> in the typed table (apply lag "
          f"{args.apply_lag_seconds} s), {len(typed)} keys: p50 {p50:.1f} s, p99 {p99:.1f} s, "
          f"max {max(typed.values()):.1f} s; landed -> in the typed table max {behind:.1f} s "
          f"vs apply lag + the longest apply ({len(applies)} apply(ies) meanwhile, the longest "
          f"{longest:.1f} s) {bound:.1f} s, ratio {behind / bound:.2f} (should stay <= 1)")


def measure(spark: SparkSession, args: argparse.Namespace, work: Path, *, tables: int,
            topics: list[Topic], rates: dict[int, float], landing: dict[int, float],
            lake: Lake) -> bool:
    """Time the N-table application (then Delta's floor, its latency and the separate
    applications; with ``--changelog``, the same with a changelog: landing first, after the
    floor, its latency last); whether every table is right."""
    total = args.changes // tables * tables
    seconds = timed(lambda: run(spark, config(tables, work, topics[0], lake=lake,
                                              parallel_tables=args.parallel_tables)))
    rates[tables] = total / seconds
    print(f"{tables:>4} table(s), one application ({lake.name}): {total:,} changes in "
          f"{seconds:.1f} s = "
          f"{rates[tables]:,.0f} rec/s; {rss_mb(spark)}")
    if 1 in rates and tables != 1:
        print(f"  {tables} tables vs one table: ratio {rates[tables] / rates[1]:.2f} "
              f"(target >= 0.7)")
    ok = check(lake, topics, share=args.changes // tables, folder=f"db{tables}")
    if not args.direct_rate_only:
        floor(spark, args, work, tables=tables, rates=rates)
    if args.changelog:  # before any latency key goes to the topics
        ok = measure_landing(spark, args, work, tables=tables, topics=topics, rates=rates,
                             landing=landing, lake=lake) and ok
    extra = 0  # latency keys the direct phase sent to every topic
    if not args.direct_rate_only:
        extra = direct_extras(spark, args, work, tables=tables, topics=topics, seconds=seconds,
                              lake=lake)
    if args.changelog and args.latency_seconds:
        ok = changelog_latency(spark, args, work, tables=tables, topics=topics,
                               extra=extra, lake=lake) and ok
    return ok


def floor(spark: SparkSession, args: argparse.Namespace, work: Path, *, tables: int,
          rates: dict[int, float]) -> None:
    """Delta's own MERGEs of the N tables' rows (`delta_floor`), against the stream."""
    total = args.changes // tables * tables
    rows, all_rows, one_row = delta_floor(spark, work, tables, args.parallel_tables)
    print(f"  Delta's own MERGEs alone, {args.parallel_tables} tables at a time: the {rows:,} "
          f"rows into {tables} empty table(s) {all_rows:.1f} s, one new row into each "
          f"{one_row:.1f} s")
    if 1 in rates and tables != 1:
        print(f"  so {tables} tables in one application reach at most {total / all_rows:,.0f} "
              f"rec/s, a ratio of {total / all_rows / rates[1]:.2f} against the one-table "
              f"stream; a micro-batch touching all {tables} tables takes at least "
              f"{one_row:.1f} s")


def direct_extras(spark: SparkSession, args: argparse.Namespace, work: Path, *, tables: int,
                  topics: list[Topic], seconds: float, lake: Lake) -> int:
    """The direct stream's latency and the separate applications; the latency keys sent to
    every topic."""
    total = args.changes // tables * tables
    sent = 0
    if tables > 1 and args.latency_seconds:
        lags = latency(spark, tables, work, topics, args.latency_seconds, lake=lake)
        sent = args.latency_seconds
        cuts = statistics.quantiles(lags, n=100) if len(lags) > 1 else lags * 99
        print(f"  produce -> visible, {len(lags)} keys over {tables} tables at a 1 s trigger: "
              f"p50 {cuts[49]:.1f} s, p99 {cuts[98]:.1f} s (target p99 <= 10 s)")
    if tables == 20 and args.apps_at_once:
        apart = separate_apps(tables, work, topics, args.apps_at_once)
        print(f"  the same {tables} tables as {tables} single-topic applications, "
              f"{args.apps_at_once} at a time: {total / apart:,.0f} rec/s ({apart:.1f} s); "
              f"separate applications / one application: {apart / seconds:.2f} of the time")
    return sent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--changes", type=int, default=100_000,
                        help="changes in all, spread evenly over the tables")
    parser.add_argument("--tables", default="1,20,100", help="the table counts to run")
    parser.add_argument("--parallel-tables", type=int, default=DEFAULT_PARALLEL_TABLES)
    parser.add_argument("--latency-seconds", type=int, default=20)
    parser.add_argument("--apps-at-once", type=int, default=5)
    parser.add_argument("--changelog", action="store_true",
                        help="also each N with --changelog: landing and drain, latency")
    parser.add_argument("--apply-lag-seconds", type=int, default=30,
                        help="the --changelog latency phase's --apply-lag")
    parser.add_argument("--direct-rate-only", action="store_true",
                        help="with --changelog: of the direct path only the N-table run (no "
                             "Delta floor, latency or separate applications)")
    parser.add_argument("--format", choices=sorted(LAKES), default="delta",
                        help="the tables' and the changelog's format (iceberg: with --changelog "
                             "--direct-rate-only)")
    args = parser.parse_args()
    if args.direct_rate_only and not args.changelog:
        parser.error("--direct-rate-only goes with --changelog")
    if args.format == "iceberg" and not args.direct_rate_only:
        parser.error("--format iceberg goes with --changelog --direct-rate-only (Delta's floor "
                     "and the separate applications are Delta's; bench_table_floor has "
                     "Iceberg's)")
    if args.apply_lag_seconds < 1:
        parser.error("--apply-lag-seconds: 1 or more")
    work = Path(tempfile.mkdtemp(prefix="flatavro-bench-tables-"))
    ok, rates, landing = True, dict[int, float](), dict[int, float]()
    lake = LAKES[args.format](work)
    with broker(work / "kafka") as bootstrap, service(work) as url:
        spark = build_session("flatavro-bench-tables", "local[2]")
        spark.sparkContext.setLogLevel("ERROR")
        try:
            warm = topics_for(2, bootstrap, url, 20_000)  # untimed: warms the JVM
            run(spark, config(2, work, warm[0], lake=lake, parallel_tables=args.parallel_tables))
            if args.changelog:
                run(spark, changelog_config(2, work, warm[0], lake=lake,
                                            parallel_tables=args.parallel_tables))
            for tables in (int(n) for n in args.tables.split(",")):
                topics = topics_for(tables, bootstrap, url, args.changes)
                ok = measure(spark, args, work, tables=tables, topics=topics,
                             rates=rates, landing=landing, lake=lake) and ok
        finally:
            spark.stop()
    shutil.rmtree(work, ignore_errors=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
