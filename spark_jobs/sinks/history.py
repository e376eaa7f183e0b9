"""A keyed table's history, SCD type 2 (``--history``; docs/streaming.md, "History"): every
version of every key, ordered by TiDB's commit ts, with the span it was the key's row.

The table's columns are the value's and four more:

- `VALID_FROM`: the version's commit ts (its ``_tidb_commit_ts``);
- `VALID_TO`: the commit ts of the key's next version, or when a DELETE ended the version,
  the delete's time (null: the version is still the key's row);
- `CURRENT`: whether the version is the key's row now;
- `ENDED` (``_deleted``): whether a DELETE ended the version;
- `PARTITION`, `OFFSET`: where in Kafka the version's message last arrived.

TiCDC's avro delete is a key with no value, so it carries no commit ts. What is known: within
its partition a key's changes arrive in commit order, and after a restart TiCDC sends a whole
suffix of them again. So a delete ends the version that arrived last before it: the batch's
upsert before it, else the key's version in the table whose message arrived last (`OFFSET`).
Its time is the message's Kafka
timestamp (when TiCDC sent it: at or after the commit) as a TSO, no earlier than the version it
ends and no later than the key's next version. A version sent again after a delete that ended
it was not ended by that delete (the delete came before it, in a replay): it is open again
until a later delete ends it, at that delete's time. A delete sent again on its own keeps the
version's earliest end. Every version is placed by its commit ts, not by when it
arrived, so a change that arrives late splits the span it falls in.

Each batch computes the touched keys' versions again from the table's and the batch's, and
MERGEs the versions that are new or whose span changed, by key and `VALID_FROM`: idempotent,
and once per (app id, batch id) like every write of the stream.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from spark_jobs.decoding.transforms import COMMIT_TS, DELETED, PHYSICAL_SHIFT
from spark_jobs.sinks import merge

__all__ = ["CURRENT", "DELTA", "ENDED", "HISTORY_COLUMNS", "OFFSET", "PARTITION", "VALID_FROM",
           "VALID_TO", "Names", "changed_versions", "history_clauses", "merge_on", "with_history"]

VALID_FROM = "_valid_from_ts"
VALID_TO = "_valid_to_ts"
CURRENT = "_is_current"
ENDED = DELETED
PARTITION = "_partition"
OFFSET = "_offset"


@dataclass(frozen=True, slots=True)
class Names:
    """The names of the ended flag and the partition column in a table format (Iceberg
    reserves ``_deleted`` and ``_partition`` for metadata columns): a ``--history`` table's,
    and a change log's (a keyless table's: `log_columns`)."""

    ended: str = ENDED
    partition: str = PARTITION

    @property
    def columns(self) -> tuple[str, ...]:
        """The history columns, in the table's order."""
        return (VALID_FROM, VALID_TO, CURRENT, self.ended, self.partition, OFFSET)

    def log_columns(self, schema: T.StructType) -> T.StructType:
        """A change log's columns: `schema` (`decode`'s, Kafka's partition in `PARTITION`) with
        the partition column named as this format names it, in its place."""
        return T.StructType([T.StructField(self.partition if f.name == PARTITION else f.name,
                                           f.dataType, f.nullable, f.metadata)
                             for f in schema.fields])

    def log_rows(self, rows: DataFrame) -> DataFrame:
        """A change log's rows: `rows` (decoded) as `log_columns` names them."""
        return rows.withColumnRenamed(PARTITION, self.partition)


DELTA = Names()
"""A Delta table's names."""
HISTORY_COLUMNS = DELTA.columns
"""A Delta history table's history columns."""


def with_history(schema: T.StructType, *, names: Names = DELTA) -> T.StructType:
    """A ``--history`` table's columns: `schema`'s and the history columns (`names`)."""
    return T.StructType([*schema.fields,
                         T.StructField(VALID_FROM, T.LongType(), True),
                         T.StructField(VALID_TO, T.LongType(), True),
                         T.StructField(CURRENT, T.BooleanType(), True),
                         T.StructField(names.ended, T.BooleanType(), True),
                         T.StructField(names.partition, T.IntegerType(), True),
                         T.StructField(OFFSET, T.LongType(), True)])


def _on(left: DataFrame, right: DataFrame, *, keys: list[str]) -> Column:
    """`left` and `right` have the same `keys` (null-safe)."""
    condition = None
    for name in keys:
        equal = left[name].eqNullSafe(right[name])
        condition = equal if condition is None else condition & equal
    assert condition is not None
    return condition


def changed_versions(changes: DataFrame, table: DataFrame, *, keys: list[str],
                     values: list[str], names: Names = DELTA) -> DataFrame:
    """The versions of the keys `changes` touch that are new or whose span changed, with the
    table's columns (`values`, then the history columns, `names`).

    Args:
        changes: a decoded micro-batch (`values`, ``_op``, ``_partition``, ``_offset``,
            ``_timestamp``), in any order.
        table: the table's rows before the batch.
    """
    upsert = F.col("_op") == "upsert"
    at = F.struct(F.col("_partition").alias("p"), F.col("_offset").alias("o"))
    arrival = Window.partitionBy(*keys).orderBy("_partition", "_offset")
    # The version each change is about: an upsert's own; a delete's, the upsert that arrived
    # just before it in the batch (else, below, the key's version that arrived last before).
    events = changes.withColumn("_version", F.when(upsert, F.col(COMMIT_TS)).otherwise(
        F.last(F.when(upsert, F.col(COMMIT_TS)), ignorenulls=True).over(
            arrival.rowsBetween(Window.unboundedPreceding, -1))))
    touched = events.select(*keys).distinct()
    old = table.join(touched, _on(table, touched, keys=keys), "left_semi")
    old_at = F.struct(F.col(names.partition).alias("p"), F.col(OFFSET).alias("o"))
    last = old.groupBy(*keys).agg(F.max_by(VALID_FROM, old_at).alias("_arrived_last"))
    events = (events.join(last, _on(events, last, keys=keys), "left")
              .drop(*[last[k] for k in keys])
              .withColumn("_version", F.coalesce("_version", "_arrived_last"))
              .where(F.col("_version").isNotNull()))  # a delete of a key never seen: no version
    sent = F.shiftleft(F.unix_millis(F.col("_timestamp")), PHYSICAL_SHIFT)
    batch = events.groupBy(*keys, "_version").agg(
        F.max_by(F.col("_op"), at).alias("_last_op"),
        F.collect_list(F.when(~upsert, F.struct(at.alias("at"), sent.alias("sent"))))
        .alias("_deletes"),
        F.max(F.when(upsert, at)).alias("_seen"),
        F.first(F.when(upsert, F.struct(*[F.col(f"`{c}`") for c in values])),
                ignorenulls=True).alias("_row")).withColumnRenamed("_version", VALID_FROM)
    # The deletes that arrived after the version's last arrival in the batch (all of them, when
    # the batch does not send the version): the first of them is the one that ended it.
    after = F.filter("_deletes", lambda d: F.col("_seen").isNull() | (d["at"] > F.col("_seen")))
    batch = batch.withColumn("_deleted_at", F.array_min(F.transform(after, lambda d: d["sent"])))
    prior = old.select(*[F.col(f"`{c}`").alias(f"_old_{c}") for c in old.columns])
    both = batch.join(prior, [batch[k].eqNullSafe(prior[f"_old_{k}"]) for k in keys]
                      + [batch[VALID_FROM] == prior[f"_old_{VALID_FROM}"]], "full")
    seen = F.col("_last_op").isNotNull()
    ended = names.ended
    old_ended = F.coalesce(F.col(f"_old_{ended}"), F.lit(False))
    # A version ended before keeps the earliest time of a delete sent again; one the batch sends
    # again was open again (that delete came before it), so only the batch's deletes count.
    ended_at = F.when(old_ended & F.col("_seen").isNull(),
                      F.least(F.col("_deleted_at"), F.col(f"_old_{VALID_TO}"))
                      ).otherwise(F.col("_deleted_at"))
    rows = both.select(
        *[F.coalesce(F.col(f"_old_{c}"), F.col(f"_row.`{c}`")).alias(c) for c in values],
        F.coalesce(F.col(f"_old_{VALID_FROM}"), F.col(VALID_FROM)).alias(VALID_FROM),
        F.when(seen, F.col("_last_op") == "delete").otherwise(old_ended).alias(ended),
        F.when(seen, ended_at).otherwise(
            F.when(old_ended, F.col(f"_old_{VALID_TO}"))).alias("_ended_at"),
        F.coalesce(F.col("_seen.p"), F.col(f"_old_{names.partition}")).alias(names.partition),
        F.coalesce(F.col("_seen.o"), F.col(f"_old_{OFFSET}")).alias(OFFSET),
        *[F.col(f"_old_{c}") for c in (VALID_TO, CURRENT, OFFSET)],
        F.col(f"_old_{VALID_FROM}").isNull().alias("_new"))
    by_commit = Window.partitionBy(*keys).orderBy(VALID_FROM)
    following = F.lead(VALID_FROM).over(by_commit)
    rows = rows.withColumn("_next", following).withColumns({
        VALID_TO: F.when(F.col(ended), F.least(
            F.greatest(F.coalesce("_ended_at", VALID_FROM), F.col(VALID_FROM)), F.col("_next"))
        ).otherwise(F.col("_next")),
        CURRENT: F.col("_next").isNull() & ~F.col(ended)})
    changed = (F.col("_new") | ~F.col(VALID_TO).eqNullSafe(F.col(f"_old_{VALID_TO}"))
               | ~F.col(CURRENT).eqNullSafe(F.col(f"_old_{CURRENT}"))
               | ~F.col(OFFSET).eqNullSafe(F.col(f"_old_{OFFSET}")))
    return rows.where(changed).select(*values, *names.columns)


def history_clauses(builder: Any, columns: list[str], *, names: Names = DELTA) -> Any:
    """The MERGE of `changed_versions` into the table (its `columns`) on the key and
    `VALID_FROM`: a version's span, flags and last arrival change, a new version is inserted
    (`builder`: Delta's merge builder or a `merge.SqlMerge`; target ``t``, source ``s``)."""
    span = {f"`{c}`": f"s.`{c}`" for c in names.columns if c != VALID_FROM}
    return builder.whenMatchedUpdate("true", span).whenNotMatchedInsert(
        "true", {f"`{c}`": f"s.`{c}`" for c in columns})


def merge_on(keys: list[str]) -> str:
    """The MERGE's condition: the same key (null-safe) and `VALID_FROM` (target ``t``, source
    ``s``)."""
    return f"{merge.key_on(keys)} AND t.`{VALID_FROM}` = s.`{VALID_FROM}`"
