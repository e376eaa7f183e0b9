"""One topic's Delta table in the stream: `open_table` checks or creates it before its first
write; a `TableWriter` applies the topic's part of each micro-batch (schema evolution, dead
letters, MERGE by key or append) and runs its OPTIMIZE cadence.

Each table is exactly once on its own: every write carries (the table's app id, the batch id)
as Delta's ``txnAppId``/``txnVersion``, so when Spark re-runs a batch after a crash, a table that
committed it already skips it and one that had not applies it. A MERGE reads that pair from its
session's settings: each table writes through its own session (``SparkSession.newSession``,
sharing the SparkContext), so tables written at the same time never see each other's pair.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from spark_jobs.decoding.bad_messages import triaged
from spark_jobs.decoding.registry import resolve_schemas
from spark_jobs.decoding.schemas import SubjectVersions, TopicVersions, WriterId
from spark_jobs.decoding.transforms import (
    COMMIT_TS,
    DELETED,
    TOMBSTONE,
    in_commit_order,
    last_change_per_key,
    ordered_by_commit,
)
from spark_jobs.errors import JobError
from spark_jobs.jobs.stream_metrics import StreamMetrics
from spark_jobs.settings.config import Deletes, Mode, StreamConfig
from spark_jobs.sinks import delta, history, ordering, upkeep
from spark_jobs.sinks.columns import plan_evolution, table_schema, version_schemas
from spark_jobs.sources import kafka_check

__all__ = ["SKIPPED", "Located", "Place", "TableWriter", "check_history", "columns_for",
           "locate", "open_table", "table_app_id"]

SKIPPED = "already in the table (a re-run batch: skipped)"


def log(text: str) -> None:
    """One line of the stream's log (stderr)."""
    print(f"stream: {text}", file=sys.stderr, flush=True)


@dataclass(frozen=True, slots=True)
class Place:
    """Where one topic's rows go."""

    topic: str
    name: str  # database.table (the label of metrics and log lines)
    path: str
    dead_letter: str | None


def _place(config: StreamConfig, *, topic: str, schemas: TopicVersions) -> Place:
    database, table = schemas.value.table_name()
    if config.many and not database and config.table_template is not None and (
            config.table_template.uses("database")):
        raise JobError(f"topic {topic}: its value schema's namespace "
                       f"{_namespace(schemas)!r} names no database (TiCDC writes "
                       f"'<namespace>.<database>'), which {config.template_option} "
                       f"{config.table_template} needs")
    name = f"{database}.{table}" if database else table
    path = config.table_for(topic=topic, database=database, table=table)
    return Place(topic, name, path,
                  config.dead_letter_for(topic=topic, database=database, table=table))


def columns_for(config: StreamConfig, schemas: TopicVersions, *, columns: T.StructType,
                deleted: str = DELETED, names: history.Names = history.DELTA) -> T.StructType:
    """The table's columns for `columns` (a version's): with the flag `deleted` (Delta's
    `DELETED`) in a keyed table under ``--deletes soft``, with the history columns (`names`:
    Delta's `history.HISTORY_COLUMNS`) under ``--history``; a keyless table's change log with
    its partition column as `names` names it (Iceberg's ``__partition``)."""
    if schemas.key is None:
        return names.log_columns(columns)
    if config.history:
        return history.with_history(columns, names=names)
    if config.deletes is Deletes.SOFT:
        return delta.with_deleted(columns, name=deleted)
    return columns


def _namespace(schemas: TopicVersions) -> str:
    return str(json.loads(schemas.value.latest).get("namespace") or "")


@dataclass(frozen=True, slots=True)
class Located:
    """A topic's schemas and where its rows go, before its table is opened."""

    schemas: TopicVersions
    place: Place

    @property
    def path(self) -> str:
        """The table's location."""
        return self.place.path

    def labelled(self, label: str | None) -> Place:
        """Where the rows go, named `label` in metrics and logs when given."""
        if label is None:
            return self.place
        return Place(self.place.topic, label, self.place.path, self.place.dead_letter)


def table_app_id(config: StreamConfig, *, app_id: str, topic: str) -> str:
    """The app id of `topic`'s table writes: the stream's, and in whole-database mode the
    topic's after it (each table exactly once on its own)."""
    return f"{app_id}-{topic}" if config.many else app_id


def locate(config: StreamConfig, *, topic: str, check_topic: bool = False) -> Located:
    """`topic`'s schemas and table location.

    Raises:
        JobError: unknown subject, unreachable registry or broker, a missing topic (with
            `check_topic`), a template that needs a database the schema lacks.
    """
    schemas = resolve_schemas(config, topic)
    if check_topic:
        kafka_check.check_topic(config.bootstrap_servers, topic, kafka=config.kafka)
    return Located(schemas, _place(config, topic=topic, schemas=schemas))


def check_history(config: StreamConfig, schemas: TopicVersions, *, table: str) -> None:
    """Under ``--history`` a keyed topic's values carry the commit ts.

    Raises:
        JobError: they do not, naming the `table` and the subject.
    """
    if config.history and schemas.key is not None and not ordered_by_commit(schemas):
        raise JobError(f"table {table}: --history orders each key's versions by "
                       f"{COMMIT_TS}, which {schemas.value.subject} lacks (TiCDC's "
                       f"enable-tidb-extension=true)")


def open_table(spark: SparkSession, config: StreamConfig, *, located: Located, app_id: str,
               metrics: StreamMetrics, label: str | None = None) -> TableWriter:
    """Everything else before a topic's first write: its table (created, or checked, given
    deletion vectors when asked, and evolved), its dead-letter table. `label` names the table
    in metrics and logs when its ``database.table`` is another topic's too.

    Raises:
        JobError: a path that holds something else than this topic's table, a table with
            deletion vectors under ``--deletion-vectors off``.
    """
    schemas, place = located.schemas, located.labelled(label)
    check_history(config, schemas, table=place.path)
    topic = place.topic
    session = spark.newSession()
    versions = {i: columns_for(config, schemas, columns=v)
                for i, v in version_schemas(session, schemas).items()}
    latest = columns_for(config, schemas, columns=table_schema(session, schemas))
    keyed = schemas.key is not None

    def create(name: str | None = None) -> None:
        delta.create_table(session, place.path, topic=topic, schema=latest,
                           deletion_vectors=upkeep.for_new_table(config.deletion_vectors,
                                                                 keyed=keyed),
                           change_data_feed=config.change_data_feed, name=name)

    if config.catalog_names:
        place = _in_catalog(session, place, create=create)
    detail = delta.check_table(session, place.path, topic=topic, versions=versions,
                               latest=latest)
    if detail is not None:
        upkeep.check_readers(detail.deletion_vectors, place.path,
                             wanted=config.deletion_vectors)
    if detail is None:
        create()
    else:
        if note := upkeep.settle_deletion_vectors(session, place.path,
                                                  state=detail.deletion_vectors,
                                                  wanted=config.deletion_vectors, keyed=keyed):
            log(note)
        if config.change_data_feed and delta.enable_change_data_feed(session, place.path,
                                                                     detail=detail):
            log(f"table {place.path}: Change Data Feed turned on (--change-data-feed); the "
                f"feed starts at this version")
    if keyed and config.commit_order and not ordered_by_commit(schemas):
        log(f"table {place.path}: {schemas.value.subject} has no {COMMIT_TS}: Kafka order, so "
            f"changes TiCDC sends again after a restart can take it back in time (TiCDC's "
            f"enable-tidb-extension=true; docs/streaming.md, 'Commit order')")
    if place.dead_letter is not None:
        delta.check_dead_letter_table(session, place.dead_letter)
    writer = TableWriter(session, config, place=place, schemas=schemas,
                         app_id=table_app_id(config, app_id=app_id, topic=topic),
                         metrics=metrics)
    writer.sync_table()
    return writer


def _in_catalog(session: SparkSession, place: Place, *,
                create: Callable[[str], None]) -> Place:
    """`place` at the location of its table, which `place.path` names in the session's
    catalog; `create(name)` makes the table there when the catalog has none of that name.

    Raises:
        JobError: as `delta.catalog_location`.
    """
    name = place.path
    location = delta.catalog_location(session, name)
    if location is None:
        create(name)
        location = delta.catalog_location(session, name)
        assert location is not None  # just made
        log(f"table {name}: created in the session's catalog, at {location}")
    return dataclasses.replace(place, path=location)


class TableWriter:
    """Applies one topic's part of each micro-batch to its table (driver side)."""

    def __init__(self, session: SparkSession, config: StreamConfig, *, place: Place,
                 schemas: TopicVersions, app_id: str, metrics: StreamMetrics) -> None:
        """Write `place`'s table through `session` (its own), as `app_id` (Delta's app id for
        idempotent writes)."""
        self.spark, self.config, self.place, self.app_id = session, config, place, app_id
        self.schemas = schemas
        self.metrics = metrics
        self.version = -1
        self.columns = self._open()
        self.cadence = upkeep.Cadence.of(place.name, every=config.optimize_every,
                                         many=config.many)
        self.tombstones = False  # whether the guard may hold any (none: no join with it)
        self.guard_made = False  # whether the table has its guard (made at the first delete)
        self.holding: list[DataFrame] = []  # cached while a batch is written
        metrics.table(place.topic, place.name, schema_id=schemas.value.latest_id)

    def _open(self) -> T.StructType:
        """Read what the writer keeps of its table (its version); the table's columns."""
        columns = DeltaTable.forPath(self.spark, self.path).toDF().schema  # the newest snapshot
        self.version = delta.committed_version(self.spark, self.path)
        return columns

    @property
    def topic(self) -> str:
        """The topic."""
        return self.place.topic

    @property
    def path(self) -> str:
        """The table's location."""
        return self.place.path

    @property
    def name(self) -> str:
        """``database.table``, as the value schema names it."""
        return self.place.name

    @property
    def ordered(self) -> bool:
        """Whether changes are applied in commit order (the value has ``_tidb_commit_ts``,
        and ``--order`` is not ``offset``)."""
        return self.config.commit_order and ordered_by_commit(self.schemas)

    @property
    def guarded(self) -> bool:
        """Whether deletes leave tombstones in the guard: commit order with hard deletes (a
        soft-deleted row is its own tombstone; a ``--history`` table keeps its deleted
        versions)."""
        return (self.ordered and not self.config.history
                and self.config.deletes is Deletes.HARD)

    def sync_table(self) -> None:
        """Evolve the table to the latest value version's columns, if they differ; give it its
        commit-order guard when the value carries the commit ts."""
        want = columns_for(self.config, self.schemas,
                        columns=table_schema(self.spark, self.schemas))
        evolution = plan_evolution(self.columns, want, subject=self.schemas.value.subject)
        if evolution:
            delta.evolve(self.spark, self.path, evolution=evolution, subject=self.schemas.value)
            self.version = delta.committed_version(self.spark, self.path)
            log(f"table {self.path} now has the columns of {self.schemas.value.subject} "
                f"schema id {self.schemas.value.latest_id} ({evolution})")
            self.metrics.table(self.topic, self.name, schema_id=self.schemas.value.latest_id)
        self.columns = want
        if self.guarded:
            assert self.schemas.key is not None
            self.guard_made = self.tombstones = ordering.open_guard(
                self.spark, self.path, columns=want, keys=self.schemas.key.field_names())

    def applied(self) -> int:
        """The newest batch the table has committed as this writer's app id (-1: none): a
        changelog's apply resumes after it (`spark_jobs.jobs.apply`)."""
        from spark_jobs.sinks.changelog import txn_version

        return txn_version(self.spark, self.path, app_id=self.app_id)[1]

    def known(self, part: str) -> set[WriterId]:
        """The writer ids (schema ids, or AWS Glue version UUIDs) of the key or value subject
        the writer has."""
        subject: SubjectVersions | None = getattr(self.schemas, part)
        return subject.writer_ids() if subject is not None else set()

    def apply(self, framed: DataFrame, batch_id: int, *,
              ids: dict[str, set[WriterId | None]],
              deletes: bool = True) -> str:
        """Write this topic's frames of micro-batch `batch_id` (`ids`: the key and value writer
        ids among them, `transforms.header_id`'s; `deletes`: whether any is a tombstone); what
        was done, for the batch's log line."""
        started = time.monotonic()
        if any(ids[p] - self.known(p) - {None} for p in ids):
            self.schemas = resolve_schemas(self.config, self.topic)  # registered meanwhile
            self.sync_table()
        mode = self.config.mode
        # Permissive: the decoded messages are read twice (dead letters, then the table).
        with triaged(framed, self.schemas, mode=mode,
                     cache=mode is Mode.PERMISSIVE) as sorted_messages:
            dead_count = self._set_aside(sorted_messages.dead, batch_id)
            try:
                changes = self._write(sorted_messages.rows, batch_id, deletes=deletes)
            finally:
                for held in self.holding:
                    held.unpersist()
                self.holding.clear()
        self.metrics.took(self.name, time.monotonic() - started)
        return changes + (f", {dead_count} to the dead-letter table" if dead_count else "")

    def upkeep(self, batch_id: int) -> None:
        """OPTIMIZE the table after every N-th batch it was written in (``--optimize-every``;
        a table written in every batch: after batches N-1, 2N-1, ...), logged. A crash before
        the batch commits re-runs it, OPTIMIZE included, which is harmless: a compacted table
        has little or nothing left to compact."""
        if not self.cadence.due(batch_id):
            return
        started = time.monotonic()
        if self.guarded and self.guard_made:
            ordering.expire(self.spark, self.path,
                            retention_ms=self.config.tombstone_retention_ms,
                            now_ms=int(time.time() * 1000))
        compaction = upkeep.optimize(self.spark, self.path)
        # A re-run batch must not report OPTIMIZE's commit.
        self.version = delta.committed_version(self.spark, self.path)
        log(f"table {self.path} after batch {batch_id}: OPTIMIZE {compaction} in "
            f"{time.monotonic() - started:.1f} s")

    def _set_aside(self, dead: DataFrame | None, batch_id: int) -> int:
        if dead is None or self.place.dead_letter is None:
            return 0
        dead = dead.persist()
        try:
            count = dead.count()
            if count:
                delta.append_changes(dead, self.place.dead_letter, app_id=self.app_id,
                                     batch_id=batch_id)
            return count
        finally:
            dead.unpersist()

    def _write(self, changes: DataFrame, batch_id: int, *, deletes: bool) -> str:
        """Write the batch's rows; what the commit did, for the batch's log line."""
        columns = [f.name for f in self.columns.fields]
        if self.schemas.key is None:
            delta.append_changes(changes.select(*columns), self.path, app_id=self.app_id,
                                 batch_id=batch_id)
            return self._appended()
        keys = self.schemas.key.field_names()
        if self.config.history:
            merged = delta.merge_history(self.spark, self.path, changes=changes, key_columns=keys,
                                         columns=columns, app_id=self.app_id,
                                         batch_id=batch_id)
        elif not self.ordered:
            merged = delta.merge_changes(self.spark, self.path,
                                         changes=last_change_per_key(changes, keys),
                                         key_columns=keys, columns=columns,
                                         app_id=self.app_id, batch_id=batch_id,
                                         soft=self.config.deletes is Deletes.SOFT)
        else:
            merged = self._merge_ordered(changes, batch_id, keys=keys, columns=columns,
                                         deletes=deletes)
        if merged is None:
            return SKIPPED
        self.version = delta.committed_version(self.spark, self.path)
        self.metrics.applied(merged, keyed=True, table=self.name)
        return (f"table version {self.version}: inserted {merged['numTargetRowsInserted']}, "
                f"updated {merged['numTargetRowsUpdated']}, deleted "
                f"{merged['numTargetRowsDeleted']}")

    def _merge_ordered(self, changes: DataFrame, batch_id: int, *, keys: list[str],
                       columns: list[str], deletes: bool) -> dict[str, int] | None:
        """MERGE in commit order (`_in_commit_order`)."""
        return delta.merge_changes(
            self.spark, self.path, changes=self._in_commit_order(
                changes, batch_id, keys=keys, columns=columns, deletes=deletes, deleted=DELETED),
            key_columns=keys, columns=columns, app_id=self.app_id, batch_id=batch_id,
            ordered=True, soft=self.config.deletes is Deletes.SOFT)

    def _in_commit_order(self, changes: DataFrame, batch_id: int, *, keys: list[str],
                         columns: list[str], deletes: bool, deleted: str) -> DataFrame:
        """A MERGE's source in commit order, each key with its tombstone's commit ts; first,
        when the batch has hard `deletes`, keep its tombstones in the guard, which reads the
        rows they replace before the MERGE removes them (`deleted`: the soft-deletes flag's
        name in this format)."""
        soft = self.config.deletes is Deletes.SOFT
        winners = in_commit_order(changes, keys, bound_row=[
            c for c in columns if c != deleted] if soft else None)
        if not soft:  # a soft-deleted row is its own tombstone
            if deletes:
                # Read twice, by the guard's MERGE and the table's: decoded and sorted once.
                winners = self._held(winners)
                self._record(winners, batch_id, keys=keys)
                self.tombstones = True
            if self.tombstones:
                return self._with_tombstones(winners, keys=keys)
        return winners.withColumn(TOMBSTONE, F.lit(None).cast("long"))

    def _held(self, rows: DataFrame) -> DataFrame:
        """`rows` cached until the batch is written (`apply`)."""
        rows = rows.persist()
        self.holding.append(rows)
        return rows

    def _record(self, winners: DataFrame, batch_id: int, *, keys: list[str]) -> None:
        """Keep the tombstones of the keys `winners` delete in the guard (made first, at the
        table's first delete)."""
        if not self.guard_made:
            ordering.create_guard(self.spark, self.path, columns=self.columns, keys=keys)
            self.guard_made = True
        ordering.record(self.spark, self.path, winners=winners, keys=keys, app_id=self.app_id,
                        batch_id=batch_id)

    def _with_tombstones(self, winners: DataFrame, *, keys: list[str]) -> DataFrame:
        """`winners` with their keys' tombstones."""
        return ordering.with_tombstones(self.spark, self.path, winners=winners, keys=keys)

    def _appended(self) -> str:
        """What an append did (the table's newest commit; none when Delta skipped a write it
        already had): an append returns no counts, so they come from the history."""
        last = DeltaTable.forPath(self.spark, self.path).history(1).select(
            "version", "operationMetrics").first()
        assert last is not None
        if int(last[0]) == self.version:
            return SKIPPED
        self.version = int(last[0])
        metrics: dict[str, Any] = last[1] or {}
        self.metrics.applied(metrics, keyed=False, table=self.name)
        return f"table version {last[0]}: appended {metrics.get('numOutputRows', '?')}"
