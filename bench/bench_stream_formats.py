"""Delta and Iceberg side by side: the stream into each format (Delta with deletion vectors,
Iceberg merge-on-read in format v2 and v3) on the same topic and the same micro-batches,
against bulk_read's decode-only and against each format's MERGEs alone; produce -> visible
latency at a 1 s trigger; and Iceberg's merge-on-read price, a full read of a table after 100
uncompacted micro-batches against the same read after compaction. One run, local[2].

Method. A real broker and a `flatavro serve` on free loopback ports (as bench_stream); the
20-column benchmark table on a 3-partition topic; N changes (default 300,000: 80% inserts, 15%
updates, 5% deletes, bench_stream's plan). A small topic goes through each format first,
untimed. Then, timed, each from an empty table and checkpoint: (a) bulk_read into Parquet
(decode only); (b) per format, `spark_jobs.jobs.stream.run` available-now with 50,000 offsets
per micro-batch (wall clock, start-up included); (c) per format, its MERGEs alone: (a)'s rows
split into the stream's micro-batches, each reduced to the last change per key and cached
untimed, MERGEd with the stream's clauses (Delta's merge builder; Iceberg's MERGE INTO SQL)
into a fresh table. Each table must then hold exactly the live keys and the updated rows, else
exit 1. Latency: per format, a processing-time=1 second stream into a fresh table while 200 new
keys are produced at 20/s; the table is polled every 50 ms (delta-rs; PyIceberg) and p50/p99
of produce -> visible printed. Merge-on-read price: the topic streamed into a fresh Iceberg
table in 100 micro-batches (--optimize-every 0), a full read (every column, into Spark's
noop sink) timed
three times, then rewrite_data_files and rewrite_position_delete_files, and the read again;
for v2 and v3.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import deltalake
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from bench.bench_stream import (
    LATENCY_CHANGES,
    LATENCY_RATE,
    PARTITIONS,
    POLL_SECONDS,
    Topic,
    bare_merge,
    new_table,
    plan,
    send_slowly,
    service,
    stream_config,
    while_streaming,
)
from bench.figures import timed
from bench.kafka_broker import broker
from spark_jobs.decoding.transforms import last_change_per_key
from spark_jobs.jobs import bulk_read
from spark_jobs.jobs.stream import run
from spark_jobs.session import build_session
from spark_jobs.settings.config import JobConfig, StreamConfig, TableFormat, Trigger
from spark_jobs.settings.iceberg import IcebergCatalog
from spark_jobs.sinks import iceberg, merge

FORMATS = ("delta", "iceberg-v2", "iceberg-v3")


def config_for(fmt: str, topic: Topic, work: Path, per_trigger: int, tag: str,
               **more: object) -> StreamConfig:
    """The stream of `topic` into a fresh table of `fmt` (named by `tag`)."""
    if fmt == "delta":
        return stream_config(topic, work, per_trigger, table_path=str(work / f"{tag}-delta"),
                             checkpoint=str(work / f"{tag}-delta-cp"), **more)
    version = int(fmt[-1])
    return stream_config(topic, work, per_trigger, table_format=TableFormat.ICEBERG,
                         iceberg=IcebergCatalog.sqlite(warehouse=str(work / "lake")),
                         iceberg_format_version=version, table_path=f"bench.{tag}_v{version}",
                         checkpoint=str(work / f"{tag}-v{version}-cp"), **more)


def session(spark: SparkSession, work: Path) -> SparkSession:
    """A session with the benchmark's Iceberg catalog."""
    return iceberg.use_catalog(spark.newSession(),
                               IcebergCatalog.sqlite(warehouse=str(work / "lake")))


def table(spark: SparkSession, work: Path, config: StreamConfig) -> DataFrame:
    if config.table_format is TableFormat.DELTA:
        return spark.read.format("delta").load(config.table_path)
    return session(spark, work).table(iceberg.identifier(config.table_path))


def right(spark: SparkSession, work: Path, config: StreamConfig, live: set[int],
          updated: set[int]) -> bool:
    rows = table(spark, work, config)
    count, changed = rows.count(), rows.where("note = 'updated'").count()
    ok = count == len(live) and changed == len(updated)
    print(f"  {config.table_path}: {count:,} rows (expected {len(live):,}), {changed:,} updated "
          f"(expected {len(updated):,}): {'ok' if ok else 'WRONG'}")
    return ok


def merges_alone(spark: SparkSession, fmt: str, decoded: DataFrame, topic: Topic, work: Path,
                 per_trigger: int) -> float:
    """Seconds of the format's MERGEs alone of the stream's micro-batches, into a fresh
    table."""
    like = decoded.select(*topic.columns)
    if fmt == "delta":
        path = str(work / "alone-delta")
        new_table(spark, path, like, deletion_vectors=True)

        def merge_one(batch: DataFrame) -> float:
            return bare_merge(spark, path, batch, topic.columns)
    else:
        ice, name = session(spark, work), f"bench.alone_{fmt[-2:]}"
        iceberg.create_table(ice, name, topic=topic.name, schema=like.schema, keyed=True,
                             format_version=int(fmt[-1]))
        statement = merge.clauses(merge.SqlMerge(), merge.values(topic.columns, soft=False),
                                  ordered=False, soft=False).sql(
            target=iceberg.identifier(name), source="batch", on="t.id <=> s.id")

        def merge_one(batch: DataFrame) -> float:
            iceberg.in_session(ice, batch).createOrReplaceTempView("batch")
            return timed(lambda: ice.sql(statement))
    share, seconds = per_trigger // PARTITIONS, 0.0
    top = decoded.agg(F.max("_offset")).first()
    assert top is not None
    for number in range(int(top[0]) // share + 1):
        batch = last_change_per_key(decoded.where(F.floor(F.col("_offset") / share) == number),
                                    ["id"]).cache()
        batch.count()
        seconds += merge_one(batch)
        batch.unpersist()
    return seconds


def visible_ids(fmt: str, work: Path, config: StreamConfig) -> Callable[[int], list[int]]:
    """A function giving the ids >= first now visible in the table (outside Spark)."""
    if fmt == "delta":
        def delta_ids(first: int) -> list[int]:
            table = deltalake.DeltaTable(config.table_path)
            return list(pa.table(deltalake.QueryBuilder().register("t", table).execute(
                f"SELECT id FROM t WHERE id >= {first}").read_all()).column("id").to_pylist())
        return delta_ids
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.expressions import GreaterThanOrEqual

    catalog = SqlCatalog("flatavro", uri=f"sqlite:///{work}/lake/catalog.sqlite")

    def iceberg_ids(first: int) -> list[int]:
        scan = catalog.load_table(config.table_path).scan(
            row_filter=GreaterThanOrEqual("id", first), selected_fields=("id",))
        return list(scan.to_arrow().column("id").to_pylist())
    return iceberg_ids


def latency(spark: SparkSession, fmt: str, topic: Topic, work: Path, first_id: int) -> str:
    config = config_for(fmt, topic, work, LATENCY_CHANGES, "latency", trigger=Trigger(seconds=1),
                        starting_offsets="latest")
    sent: dict[int, float] = {}

    def measure(errors: list[BaseException]) -> dict[int, float]:
        threading.Thread(target=send_slowly, args=(topic, first_id, sent), daemon=True).start()
        ids, seen, start = visible_ids(fmt, work, config), {}, time.monotonic()
        while len(seen) < LATENCY_CHANGES and time.monotonic() < start + 120 and not errors:
            time.sleep(POLL_SECONDS)
            try:
                found = ids(first_id)
            except Exception:  # not created yet
                continue
            now = time.monotonic()
            for row_id in found:
                seen.setdefault(row_id, now)
        return seen

    seen = while_streaming(spark, config, measure)
    latencies = [seen[k] - sent[k] for k in sent if k in seen]
    if len(latencies) < LATENCY_CHANGES:
        return f"only {len(latencies)} of {LATENCY_CHANGES} changes became visible"
    cuts = statistics.quantiles(latencies, n=100, method="inclusive")
    return f"p50 {cuts[49]:.2f} s, p99 {cuts[98]:.2f} s"


def read_price(spark: SparkSession, fmt: str, topic: Topic, work: Path, count: int) -> None:
    """A full read of an Iceberg table (`fmt`) after 100 uncompacted micro-batches, then
    compacted."""
    config = config_for(fmt, topic, work, max(count // 100, 1), "uncompacted",
                        optimize_every=0)
    run(spark, config)
    ice = session(spark, work)
    def read() -> None:  # every row, every column, deletes applied; written nowhere
        ice.table(iceberg.identifier(config.table_path)).write.format("noop").mode(
            "overwrite").save()

    def best() -> float:
        return min(timed(read) for _ in range(3))

    name = iceberg.identifier(config.table_path)
    files = ice.sql(f"SELECT content, count(*) FROM {name}.files GROUP BY content").collect()
    snapshots = ice.sql(f"SELECT count(*) FROM {name}.snapshots").first()
    before = best()
    print(f"  {fmt}: after {snapshots[0] if snapshots else 0} snapshot(s), files by content "
          f"(0 data, 1 position deletes or deletion vectors): "
          f"{sorted(tuple(r) for r in files)}")
    done = iceberg.rewrite(ice, config.table_path)
    after = best()
    print(f"  full read (every column, Spark's noop sink), best of 3: {before:.2f} s uncompacted, "
          f"{after:.2f} s after compaction ({done}): merge-on-read costs "
          f"{before / after:.2f}x on this read")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--changes", type=int, default=300_000)
    parser.add_argument("--per-trigger", type=int, default=50_000)
    parser.add_argument("--read-price-only", action="store_true",
                        help="only Iceberg's merge-on-read price (v2 and v3)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="flatavro-bench-formats-"))
    ok = True
    try:
        with broker(work / "kafka") as bootstrap, service(work) as url:
            spark = build_session("flatavro-bench-formats", "local[2]")
            spark.sparkContext.setLogLevel("ERROR")
            try:
                warm = Topic("warmup", bootstrap, url)
                warm.send_all(plan(20_000)[0])
                for fmt in FORMATS:
                    run(spark, config_for(fmt, warm, work, args.per_trigger, "warm"))
                topic, (changes, live, updated) = Topic("formats", bootstrap, url), plan(
                    args.changes)
                topic.send_all(changes)
                if args.read_price_only:
                    for fmt in FORMATS[1:]:
                        read_price(spark, fmt, topic, work, args.changes)
                    return
                decoded_path = str(work / "decoded")
                read = timed(lambda: bulk_read.run(spark, JobConfig(
                    topic=topic.name, output=decoded_path, bootstrap_servers=bootstrap,
                    service_url=url)))
                decode = args.changes / read
                print(f"{args.changes:,} changes, {args.per_trigger:,} offsets per micro-batch; "
                      f"bulk_read decode-only: {decode:,.0f} rec/s ({read:.1f} s)")
                decoded = spark.read.parquet(decoded_path)
                rates = {}
                for fmt in FORMATS:
                    config = config_for(fmt, topic, work, args.per_trigger, "stream")
                    streamed = timed(lambda c=config: run(spark, c))  # type: ignore[misc]
                    alone = merges_alone(spark, fmt, decoded, topic, work, args.per_trigger)
                    rates[fmt] = args.changes / streamed
                    print(f"{fmt:<11} stream {rates[fmt]:>8,.0f} rec/s ({streamed:.1f} s), ratio "
                          f"{rates[fmt] / decode:.2f} of decode-only (target >= 0.5); its MERGEs "
                          f"alone {args.changes / alone:>8,.0f} rec/s ({alone:.1f} s), ratio "
                          f"{alone and (args.changes / alone) / decode:.2f} of decode-only")
                    ok = right(spark, work, config, live, updated) and ok
                best = max(rates, key=lambda f: rates[f])
                print(f"the faster format: {best}, {rates[best] / decode:.2f} of decode-only")
                for number, fmt in enumerate(FORMATS):
                    first = args.changes + 1_000_000 * (number + 1)
                    print(f"{fmt:<11} latency produce -> visible (processing-time=1 second, "
                          f"{LATENCY_RATE:g} changes/s): {latency(spark, fmt, topic, work, first)}")
                print("Iceberg's merge-on-read price:")
                for fmt in FORMATS[1:]:
                    read_price(spark, fmt, topic, work, args.changes)
            finally:
                spark.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
