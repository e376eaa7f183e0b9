"""Iceberg's floor beside Delta's: one new row MERGEd into each of N tables (a micro-batch that
touches every table of a database), one row appended to each, and one commit of N rows into one
table (the ``--changelog`` landing), per format, with no stream around them. One run, local[2].

Method. No broker and no service: the 20-column benchmark table (bench_row_codec's DDL and rows)
is encoded in this process with the key and value schemas the service generates for it
(RecordCodec + frame) and decoded by the stream's own `decode`, so the tables have the stream's
columns and types. For each N of ``--tables`` (default 20, 100) and each format, N tables are
made as the stream makes them, each with a session of its own (as the stream's table writers):
Delta at paths with deletion vectors (`sinks.delta.create_table`); Iceberg in the JDBC catalog
on SQLite, merge-on-read (`sinks.iceberg.create_table`), format version 2 and 3
(``--iceberg-format-versions``; the stream's default is 3); each gets ``--rows`` (1,000) rows.
Then, ``--parallel-tables`` tables at a time (the stream's default, 4), each thread in a FAIR
pool of its own (as the stream): (a) the MERGE of one new key (a row of a cached DataFrame) into
each table with the stream's clauses in Kafka order (Delta: its merge builder, as
bench_stream_tables' `delta_floor`; Iceberg: the stream's MERGE INTO SQL, `merge.SqlMerge`, from
a temporary view, as `sinks.iceberg.merge_changes`, without its read of the new snapshot); (b)
an append of one row to each (Delta ``write.mode("append")``, Iceberg ``writeTo().append()``);
then (c) one commit of N Kafka messages (one per topic, cached) into one changelog table, by the
stream's own `DeltaChangelog` / `IcebergChangelog` ``append``. Each is done once untimed (the
warm-up), then timed ``--rounds`` (3) times, new keys each time; the best round is printed, per
table (round / N) and against Delta's (Iceberg/Delta, of the time), and (a) against (c): a
commit per table against one commit for the whole database. Every table must then hold exactly
its rows (ids 0 to rows + merges + appends - 1, each once) and every changelog one row per topic
per landing, else exit 1.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import functools
import itertools
import json
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from bench.bench_row_codec import DDL, rows
from bench.figures import timed
from service.core.ddl import table_from_ddl
from service.core.framing import frame
from service.core.record_codec import RecordCodec
from service.core.schema import generate_schemas
from spark_jobs.decoding.schemas import SubjectVersions, TopicVersions
from spark_jobs.decoding.transforms import BOOKKEEPING, decode, with_frames
from spark_jobs.jobs.preflight import check_catalog_file
from spark_jobs.session import build_session
from spark_jobs.settings.config import (
    DEFAULT_PARALLEL_TABLES,
    Mode,
    StreamConfig,
    TableFormat,
)
from spark_jobs.settings.iceberg import IcebergCatalog
from spark_jobs.sinks import delta, iceberg, merge
from spark_jobs.sinks.changelog import Changelog, DeltaChangelog, IcebergChangelog
from spark_jobs.sinks.columns import KAFKA_SCHEMA, table_schema

TOPIC, KEY, PARTITIONS = "floor", ["id"], 3
KEY_ID, VALUE_ID = 1, 2  # the schema ids the frames carry (no registry: any two ids)
BASE_ROWS = rows()
APP_ID = "bench-table-floor"


@dataclass(frozen=True, slots=True)
class Shape:
    """The benchmark table as the stream sees it: its topic's schemas and their codecs."""

    versions: TopicVersions
    key: RecordCodec
    value: RecordCodec

    @classmethod
    def benchmark(cls) -> Shape:
        """bench_row_codec's 20-column table, with the schemas the service generates for it."""
        pair = generate_schemas(table_from_ddl(DDL))
        assert pair.key_schema is not None
        texts = [json.dumps(s) for s in (pair.key_schema, pair.value_schema)]
        return cls(TopicVersions(TOPIC, *(
            SubjectVersions(f"{TOPIC}-{part}", text, number, {number: text})
            for part, text, number in zip(("key", "value"), texts, (KEY_ID, VALUE_ID),
                                          strict=True))),
            RecordCodec(pair.key_schema, allow_extra=True), RecordCodec(pair.value_schema))

    def messages(self, spark: SparkSession, keys: Iterable[tuple[str, int]]) -> DataFrame:
        """The Kafka source's rows of an insert of each (topic, key)."""
        now = datetime.now(UTC)
        found = []
        for offset, (topic, key) in enumerate(keys):
            row = BASE_ROWS[key % len(BASE_ROWS)] | {"id": key}
            found.append((frame(KEY_ID, self.key.encode(row)),
                          frame(VALUE_ID, self.value.encode(row)), topic, key % PARTITIONS,
                          offset, now))
        return spark.createDataFrame(found, KAFKA_SCHEMA)

    def rows(self, spark: SparkSession, keys: range) -> DataFrame:
        """The stream's decoded rows of inserts of `keys`: the table's columns, then
        ``_op`` and the other bookkeeping columns (the MERGE's source)."""
        decoded = decode(with_frames(self.messages(spark, ((TOPIC, k) for k in keys))),
                         self.versions, mode=Mode.FAILFAST).select(
            *self.columns(spark).fieldNames(), *BOOKKEEPING)
        # Held as local rows: the table threads would otherwise canonicalize one `from_avro`
        # at once, whose options map Spark evaluates with a builder the threads share
        # (DUPLICATED_MAP_KEY "mode", now and then).
        return spark.createDataFrame(decoded.collect(), decoded.schema)

    def columns(self, spark: SparkSession) -> T.StructType:
        """The stream's table columns for the topic."""
        return table_schema(spark, self.versions)


class Tables:
    """N tables of one format, each with a session of its own, and one changelog."""

    label: str
    sessions: list[SparkSession]

    def create(self, number: int, rows: DataFrame) -> None:
        """Make table `number` as the stream does and append `rows` (their table columns)."""
        raise NotImplementedError

    def merge(self, number: int, source: DataFrame) -> None:
        """MERGE `source` into table `number` with the stream's clauses in Kafka order."""
        raise NotImplementedError

    def append(self, number: int, rows: DataFrame) -> None:
        """Append `rows` (the table's columns) to table `number`."""
        raise NotImplementedError

    def read(self, number: int) -> DataFrame:
        """Table `number`'s rows."""
        raise NotImplementedError

    def changelog(self) -> Changelog:
        """The changelog of these tables' stream, made."""
        raise NotImplementedError


class DeltaTables(Tables):
    """Delta tables at paths, deletion vectors on; MERGEd by Delta's merge builder."""

    def __init__(self, spark: SparkSession, work: Path, *, count: int,
                 columns: T.StructType) -> None:
        self.label, self.spark, self.columns, self.place = "delta", spark, columns, work
        self.sessions = [spark.newSession() for _ in range(count)]
        self.paths = [str(work / f"delta{count}" / f"t{n:03d}") for n in range(count)]
        self.assigned = merge.values(columns.fieldNames(), soft=False)

    def create(self, number: int, rows: DataFrame) -> None:
        """An empty table with the topic's columns, then `rows` appended."""
        delta.create_table(self.sessions[number], self.paths[number], topic=TOPIC,
                           schema=self.columns, deletion_vectors=True)
        self.append(number, rows)

    def merge(self, number: int, source: DataFrame) -> None:
        """Delta's merge builder with `merge.clauses` (as `delta_floor`)."""
        merge.clauses(DeltaTable.forPath(self.sessions[number], self.paths[number]).alias(
            "t").merge(source.alias("s"), merge.key_on(KEY)), self.assigned, ordered=False,
            soft=False).execute()

    def append(self, number: int, rows: DataFrame) -> None:
        """A plain Delta append."""
        rows.select(*self.columns.fieldNames()).write.format("delta").mode("append").save(
            self.paths[number])

    def read(self, number: int) -> DataFrame:
        """The table's rows."""
        return self.sessions[number].read.format("delta").load(self.paths[number])

    def changelog(self) -> Changelog:
        """A Delta changelog at a path."""
        log = DeltaChangelog(self.spark, str(self.place / f"delta{len(self.paths)}-changelog"))
        log.create_or_check(app_id=APP_ID, options={})
        return log


class IcebergTables(Tables):
    """Iceberg tables in the JDBC catalog on SQLite, merge-on-read; MERGEd by the stream's
    MERGE INTO SQL."""

    VIEW = "flatavro_changes"

    def __init__(self, spark: SparkSession, work: Path, *, count: int, columns: T.StructType,
                 version: int) -> None:
        self.label, self.spark, self.columns = f"iceberg-v{version}", spark, columns
        self.catalog, self.version = IcebergCatalog.sqlite(warehouse=str(work / "lake")), version
        check_catalog_file(self.catalog)  # as the stream, before the tables' sessions use it
        iceberg.check_catalog(spark, self.catalog)
        self.sessions = [iceberg.use_catalog(spark.newSession(), self.catalog)
                         for _ in range(count)]
        self.namespace = f"floor{count}_v{version}"
        self.names = [f"{self.namespace}.t{n:03d}" for n in range(count)]
        clauses = merge.clauses(merge.SqlMerge(), merge.values(
            columns.fieldNames(), soft=False, deleted=iceberg.DELETED), ordered=False,
            soft=False, deleted=iceberg.DELETED)
        self.statements = [clauses.sql(target=iceberg.identifier(name), source=self.VIEW,
                                       on=merge.key_on(KEY)) for name in self.names]

    def create(self, number: int, rows: DataFrame) -> None:
        """An empty keyed table (merge-on-read), then `rows` appended."""
        iceberg.create_table(self.sessions[number], self.names[number], topic=TOPIC,
                             schema=self.columns, keyed=True, format_version=self.version)
        self.append(number, rows)

    def merge(self, number: int, source: DataFrame) -> None:
        """The stream's MERGE INTO from a temporary view of `source` (`iceberg._merge`)."""
        session = self.sessions[number]
        iceberg.in_session(session, source).createOrReplaceTempView(self.VIEW)
        try:
            session.sql(self.statements[number])
        finally:
            session.catalog.dropTempView(self.VIEW)

    def append(self, number: int, rows: DataFrame) -> None:
        """Iceberg's ``writeTo().append()``."""
        iceberg.in_session(self.sessions[number], rows.select(
            *self.columns.fieldNames())).writeTo(iceberg.identifier(self.names[number])).append()

    def read(self, number: int) -> DataFrame:
        """The table's rows, deletes applied."""
        return self.sessions[number].table(iceberg.identifier(self.names[number]))

    def changelog(self) -> Changelog:
        """An Iceberg changelog in the same catalog and format version."""
        config = StreamConfig(topic="", bootstrap_servers="", table_path="", checkpoint="",
                              table_format=TableFormat.ICEBERG, iceberg=self.catalog,
                              iceberg_format_version=self.version)
        log = IcebergChangelog(self.spark, config, name=f"{self.namespace}.changelog")
        log.create_or_check(app_id=APP_ID, options={})
        return log


@dataclass(frozen=True, slots=True)
class Floor:
    """One format's best rounds, in seconds."""

    merged: float  # one new row MERGEd into each table
    appended: float  # one row appended to each table
    landed: float  # one commit of N rows into the changelog


def best(rounds: int, work: Callable[[int], object]) -> float:
    """`work(0)` untimed (the warm-up), then the fastest of `work(1)` .. `work(rounds)`."""
    work(0)
    return min(timed(functools.partial(work, number)) for number in range(1, rounds + 1))


def floor(tables: Tables, args: argparse.Namespace, *, pool: concurrent.futures.Executor,
          typed: DataFrame, landing: DataFrame) -> tuple[Floor, bool]:
    """Make `tables`, time their rounds; whether every table and the changelog are right."""
    count = len(tables.sessions)

    def each(work: Callable[[int], None]) -> None:
        list(pool.map(work, range(count)))

    def row(key: int) -> DataFrame:
        return typed.where(F.col("id") == key)

    each(lambda n: tables.create(n, typed.where(F.col("id") < args.rows)))
    log = tables.changelog()
    merged = best(args.rounds, lambda r: each(lambda n: tables.merge(n, row(args.rows + r))))
    first_append = args.rows + args.rounds + 1
    appended = best(args.rounds, lambda r: each(
        lambda n: tables.append(n, row(first_append + r))))
    names = {f"t{n:03d}": f"bench.t{n:03d}" for n in range(count)}
    landed = best(args.rounds, lambda r: log.append(landing, tables=names, app_id=APP_ID,
                                                    batch_id=r))
    expected = first_append + args.rounds + 1
    wrong = [n for n, right in enumerate(pool.map(lambda n: holds(tables.read(n), expected),
                                                  range(count))) if not right]
    logged = log.read().agg(F.count(F.lit(1)), F.count_distinct("_batch", "topic")).first()
    landings = count * (args.rounds + 1)
    landed_right = logged is not None and tuple(logged) == (landings, landings)
    print(f"  {tables.label}: {count} table(s) of {expected:,} rows each "
          f"{'ok' if not wrong else 'WRONG: ' + ', '.join(f't{n:03d}' for n in wrong)}; "
          f"changelog {logged[0] if logged else 0:,} rows (expected {landings:,}, one per "
          f"topic per landing) {'ok' if landed_right else 'WRONG'}")
    return Floor(merged, appended, landed), landed_right and not wrong


def holds(rows: DataFrame, expected: int) -> bool:
    """`rows` are ids 0 .. `expected` - 1, each once."""
    found = rows.agg(F.count(F.lit(1)), F.count_distinct("id"), F.min("id"),
                     F.max("id")).first()
    return found is not None and tuple(found) == (expected, expected, 0, expected - 1)


def report(floors: dict[str, Floor], *, count: int) -> None:
    """Each format's rounds, per table and against Delta's; a commit per table against one."""
    base = floors["delta"]
    for title, pick, per in (
            ("MERGE of one new row into each table", lambda f: f.merged, True),
            ("append of one row to each table", lambda f: f.appended, True),
            (f"one commit of {count} rows into one table (the --changelog landing)",
             lambda f: f.landed, False)):
        print(f"  {title}:")
        for label, found in floors.items():
            seconds = pick(found)
            line = f"    {label:<11} {seconds:7.2f} s"
            if per:
                line += f", {seconds / count:.3f} s per table"
            if found is not base:
                line += f", Iceberg/Delta {seconds / pick(base):.2f}"
            print(line)
    print("  a MERGE per table against one landing commit for the database: " + ", ".join(
        f"{label} {found.merged / found.landed:.1f}x" for label, found in floors.items()))


def measure(spark: SparkSession, args: argparse.Namespace, *, work: Path, count: int,
            pool: concurrent.futures.Executor) -> bool:
    """Every format's floor at `count` tables; whether every table is right."""
    shape = Shape.benchmark()
    columns = shape.columns(spark)
    typed = shape.rows(spark, range(args.rows + 2 * (args.rounds + 1))).cache()
    landing = shape.messages(spark, ((f"t{n:03d}", args.rows) for n in range(count))).cache()
    typed.count()
    landing.count()
    print(f"{count} table(s) of the 20-column benchmark table, {args.rows:,} rows each, "
          f"{args.parallel_tables} tables at a time; best of {args.rounds} rounds:")
    formats: list[Tables] = [DeltaTables(spark, work, count=count, columns=columns)]
    formats += [IcebergTables(spark, work, count=count, columns=columns, version=int(v))
                for v in args.iceberg_format_versions.split(",")]
    floors, ok = {}, True
    try:
        for tables in formats:
            floors[tables.label], right = floor(tables, args, pool=pool, typed=typed,
                                                landing=landing)
            ok = right and ok
    finally:
        typed.unpersist()
        landing.unpersist()
    report(floors, count=count)
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tables", default="20,100", help="the table counts to run")
    parser.add_argument("--rows", type=int, default=1_000, help="rows in each table at first")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds (the best kept)")
    parser.add_argument("--parallel-tables", type=int, default=DEFAULT_PARALLEL_TABLES)
    parser.add_argument("--iceberg-format-versions", default="2,3",
                        help="the Iceberg format versions to run")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="flatavro-bench-floor-"))
    spark = build_session("flatavro-bench-table-floor", "local[2]")
    spark.sparkContext.setLogLevel("ERROR")
    pools = itertools.count()

    def own_pool() -> None:  # as the stream: each table thread in a FAIR pool of its own
        spark.sparkContext.setLocalProperty("spark.scheduler.pool", f"flatavro-{next(pools)}")

    ok = True
    try:
        with concurrent.futures.ThreadPoolExecutor(
                args.parallel_tables, thread_name_prefix="flatavro-table",
                initializer=own_pool) as pool:
            for count in (int(n) for n in args.tables.split(",")):
                ok = measure(spark, args, work=work, count=count, pool=pool) and ok
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
