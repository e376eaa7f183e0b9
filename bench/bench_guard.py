"""Where the commit-order guard's time goes: the stream's own MERGE steps on the same cached
micro-batches, with and without each part of the guard. One run, local[2], no Kafka.

Method. A 150,000-row Delta table (deletion vectors on, as the stream makes them) of 20 columns:
the key ``id``, 18 values and ``_tidb_commit_ts``. Four micro-batches of 50,000 changes each, as
the stream decodes them (``_op``, ``_partition``, ``_offset``, the commit ts rising with the
offset): 80% inserts of new keys, 15% updates and 5% deletes of live keys drawn uniformly (so
every micro-batch touches rows all over the table and deletes ~2,500 keys), cached before the
rounds. Each variant MERGEs the four batches into a fresh copy of the table, timed per batch;
a first round warms the JVM up, untimed, then 3 rounds, the order of the variants turning each
round; the best total of each is kept.

- **offset order** (the raw figure): `last_change_per_key` and the unconditional MERGE
  (`merge.clauses`), what ``--order offset`` does;
- **commit order, no tombstones**: `in_commit_order` and the MERGE's commit-ts conditions, no
  guard (the guard less its tombstones);
- **the guard** (``--deletes hard``, the default): as above, and before the MERGE the tombstones
  of the batch's deletes read from the table (`ordering.removed_commits`) and appended to the
  guard's Delta table (`ordering.record`), then joined with the batch (`ordering.with_tombstones`);
- **tombstones kept, not joined**: the guard's `ordering.record` alone, the MERGE as without
  tombstones (the guard less its join: what keeping them costs);
- **the guard, tombstones as Parquet files**: the guard, but the tombstones written as one plain
  Parquet file per batch (no Delta commit) and read back as files: what the guard would cost
  without its second Delta table.
- **the read alone**: the MERGE as without tombstones, after the tombstones of the batch's
  deletes have been read from the table (`ordering.removed_commits`, collected to the driver) and
  neither kept nor joined: the least any guard must do. A flat-avro delete carries no commit ts
  (docs/streaming.md, "Commit order"); what it removed is only in the table, before the MERGE.

``--one-apply``: the four micro-batches unioned into one source of 200,000 changes, MERGEd once
per variant: what the apply behind a ``--changelog`` stream does with the changes pending for a
table (its guard's read is then paid once per apply, not per micro-batch).

Each variant's table must then hold exactly the live keys, else exit 1. Each ratio is the
variant's rate against offset order's in the same run.

Then **Delta's floor** for any such read, on the same warm session: a read of a 10-row Delta
table (the max of one column), and of the key and commit ts of the 150,000-row table after a
MERGE (its files with deletion vectors), each 5 times after a first, against the time a ratio
of 0.9 leaves a guard per micro-batch (t / 0.9 - t, t: offset order's mean micro-batch in its
best round).
"""

from __future__ import annotations

import argparse
import functools
import random
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from bench.figures import timed
from spark_jobs.decoding.transforms import (
    COMMIT_TS,
    TOMBSTONE,
    in_commit_order,
    last_change_per_key,
)
from spark_jobs.session import build_session
from spark_jobs.sinks import delta, ordering

KEYS = ["id"]
VALUES = 18
TABLE_ROWS = 150_000
BATCHES = 4
PER_BATCH = 50_000
INSERTS, UPDATES = 0.80, 0.15
COLUMNS = ["id", *[f"c{i}" for i in range(1, VALUES + 1)], COMMIT_TS]


def with_values(df: DataFrame) -> DataFrame:
    """`df` (with ``id``) and the table's value columns, computed from the key."""
    return df.withColumns({f"c{i}": (F.col("id") * i).cast("string" if i % 2 else "long")
                           for i in range(1, VALUES + 1)})


def plan(seed: int = 7) -> tuple[list[list[tuple[int, str]]], int]:
    """The micro-batches' (key, op): inserts of new keys, updates and deletes of live ones; and
    how many keys are live after them."""
    rng, live, next_key, batches = random.Random(seed), set(range(TABLE_ROWS)), TABLE_ROWS, []
    for _ in range(BATCHES):
        drawn, changes = sorted(live), []
        for _ in range(PER_BATCH):
            draw = rng.random()
            if draw < INSERTS:
                changes.append((next_key, "upsert"))
                live.add(next_key)
                next_key += 1
                continue
            key = drawn[rng.randrange(len(drawn))]
            if draw < INSERTS + UPDATES or key not in live:
                changes.append((key, "upsert"))  # a key deleted earlier: inserted again
                live.add(key)
            else:
                changes.append((key, "delete"))
                live.discard(key)
        batches.append(changes)
    return batches, len(live)


def decoded(spark: SparkSession, batches: list[list[tuple[int, str]]]) -> list[DataFrame]:
    """The batches as the stream decodes them (commit ts rising with the offset), cached."""
    frames, offset, first_ts = [], 0, (TABLE_ROWS * 10)
    for changes in batches:
        rows = [(key, op, key % 3, offset + n, first_ts + offset + n)
                for n, (key, op) in enumerate(changes)]
        offset += len(changes)
        frame = with_values(spark.createDataFrame(
            rows, f"id long, _op string, _partition int, _offset long, {COMMIT_TS} long"))
        frame = frame.withColumn("_timestamp", F.current_timestamp()).cache()
        frame.count()
        frames.append(frame)
    return frames


def fresh_table(spark: SparkSession, path: str) -> None:
    """The 150,000-row table (commit ts below every batch's)."""
    rows = with_values(spark.range(TABLE_ROWS)).withColumn(COMMIT_TS, F.col("id") * 10)
    rows.select(*COLUMNS).write.format("delta").option(
        "delta.enableDeletionVectors", "true").save(path)


def merged(spark: SparkSession, path: str, source: DataFrame, number: int, *,
           ordered: bool) -> None:
    """The stream's MERGE (`delta.merge_changes`) of micro-batch `number`."""
    delta.merge_changes(spark, path, changes=source, key_columns=KEYS, columns=COLUMNS,
                        app_id="bench", batch_id=number, ordered=ordered)


def untombed(winners: DataFrame) -> DataFrame:
    """`in_commit_order`'s rows with no tombstone joined."""
    return winners.withColumn(TOMBSTONE, F.lit(None).cast("long"))


def offset_order(spark: SparkSession, path: str, batch: DataFrame, number: int) -> None:
    merged(spark, path, last_change_per_key(batch, KEYS), number, ordered=False)


def no_tombstones(spark: SparkSession, path: str, batch: DataFrame, number: int) -> None:
    merged(spark, path, untombed(in_commit_order(batch, KEYS)), number, ordered=True)


def guarded(spark: SparkSession, path: str, batch: DataFrame, number: int, *,
            join: bool = True) -> None:
    winners = in_commit_order(batch, KEYS).persist()
    try:
        if number == 0:
            ordering.create_guard(spark, path, columns=spark.read.format("delta").load(
                path).schema, keys=KEYS)
        ordering.record(spark, path, winners=winners, keys=KEYS, app_id="bench",
                        batch_id=number)
        merged(spark, path, ordering.with_tombstones(spark, path, winners=winners, keys=KEYS)
               if join else untombed(winners), number, ordered=True)
    finally:
        winners.unpersist()


def parquet_guarded(spark: SparkSession, path: str, batch: DataFrame, number: int) -> None:
    winners, files = in_commit_order(batch, KEYS).persist(), ordering.guard_path(path)
    try:
        tombstones = ordering.removed_commits(winners, DeltaTable.forPath(spark, path).toDF(),
                                              keys=KEYS)
        tombstones.coalesce(1).write.mode("overwrite").parquet(f"{files}/batch-{number}")
        guard = spark.read.option("recursiveFileLookup", "true").parquet(files)
        merged(spark, path, ordering.tombstones_joined(
            winners, ordering.newest(guard, keys=KEYS), keys=KEYS), number, ordered=True)
    finally:
        winners.unpersist()


def read_alone(spark: SparkSession, path: str, batch: DataFrame, number: int) -> None:
    winners = in_commit_order(batch, KEYS).persist()
    try:
        ordering.removed_commits(winners, DeltaTable.forPath(spark, path).toDF(),
                                 keys=KEYS).toArrow()
        merged(spark, path, untombed(winners), number, ordered=True)
    finally:
        winners.unpersist()


def delta_floor(spark: SparkSession, work: Path, merged_table: str) -> dict[str, list[float]]:
    """Seconds of 5 reads (after a first) of a 10-row Delta table and of `merged_table`'s key and
    commit ts, each the max of the commit ts."""
    tiny = str(work / "tiny")
    spark.range(10).withColumn(COMMIT_TS, F.col("id")).write.format("delta").save(tiny)
    reads = {"a 10-row Delta table": tiny, "the 150,000-row table after its MERGEs": merged_table}
    seconds: dict[str, list[float]] = {}
    for name, path in reads.items():
        def read(path: str = path) -> object:
            return spark.read.format("delta").load(path).select(*KEYS, COMMIT_TS).agg(
                F.max(COMMIT_TS)).collect()
        seconds[name] = [timed(read) for _ in range(6)][1:]
    return seconds


VARIANTS: dict[str, Callable[[SparkSession, str, DataFrame, int], None]] = {
    "offset order (raw)": offset_order,
    "commit order, no tombstones": no_tombstones,
    "the guard (tombstones in a Delta table)": guarded,
    "tombstones kept, not joined": functools.partial(guarded, join=False),
    "the guard, tombstones as Parquet files": parquet_guarded,
    "the read alone (nothing kept or joined)": read_alone,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds, after a warm-up")
    parser.add_argument("--one-apply", action="store_true",
                        help="the four micro-batches as one MERGE, as the apply behind a "
                             "--changelog stream takes its pending changes")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="flatavro-bench-guard-"))
    spark = build_session("flatavro-bench-guard", "local[2]")
    spark.sparkContext.setLogLevel("ERROR")
    try:
        batches, live = plan()
        frames = decoded(spark, batches)
        if args.one_apply:
            frames = [functools.reduce(DataFrame.unionByName, frames).cache()]
            frames[0].count()
        totals: dict[str, list[float]] = {name: [] for name in VARIANTS}
        names = list(VARIANTS)
        for number in range(-1, args.rounds):  # round -1: the warm-up
            for name in names[number % len(names):] + names[:number % len(names)]:
                path = str(work / f"{number + 1}-{names.index(name)}")
                fresh_table(spark, path)
                step = functools.partial(VARIANTS[name], spark, path)
                seconds = [timed(functools.partial(step, batch, n))
                           for n, batch in enumerate(frames)]
                rows = spark.read.format("delta").load(path).count()
                if rows != live:
                    sys.exit(f"{name}: the table holds {rows:,} rows, not the {live:,} live keys")
                if number >= 0:
                    totals[name].append(sum(seconds))
                each = " / ".join(f"{s:.1f}" for s in seconds)
                print(f"round {number if number >= 0 else 'warm-up'}: {name}: {each} s",
                      flush=True)
        floor = delta_floor(spark, work, path)
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    raw = min(totals["offset order (raw)"])
    changes = BATCHES * PER_BATCH
    for name, seconds in totals.items():
        best = min(seconds)
        print(f"{name:45s} {changes / best:9,.0f} changes/s ({best:5.1f} s)  ratio "
              f"{raw / best:.2f}")
    merges = len(frames)
    budget = raw / merges / 0.9 - raw / merges
    print(f"a ratio of 0.9 leaves a guard {budget:.2f} s per MERGE ({merges} MERGE(s), offset "
          f"order {raw / merges:.2f} s each); Delta's own reads on the same session:")
    for name, seconds in floor.items():
        print(f"  {name:45s} {min(seconds):.2f}-{max(seconds):.2f} s")


if __name__ == "__main__":
    main()
