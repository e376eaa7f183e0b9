"""One topic's Iceberg table in the stream (``--format iceberg``): `open_iceberg_table` checks
or creates it in the catalog before its first write; an `IcebergWriter` applies the topic's
part of each micro-batch as a `TableWriter` does for Delta (the same decoding, ordering and
MERGE clauses), and its upkeep is Iceberg's ``rewrite_data_files`` and
``rewrite_position_delete_files``.

Exactly once per table: each write names (the table's app id, the batch id) in its snapshot's
summary; the writer reads the highest batch id there once, at open, and skips a batch at or
below it (a batch Spark re-runs after a crash that this table had committed).
"""

from __future__ import annotations

import time

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from spark_jobs.decoding.transforms import (
    COMMIT_TS,
    last_change_per_key,
    ordered_by_commit,
)
from spark_jobs.jobs.stream_metrics import StreamMetrics
from spark_jobs.jobs.table_writer import (
    SKIPPED,
    Located,
    TableWriter,
    check_history,
    columns_for,
    log,
    table_app_id,
)
from spark_jobs.settings.config import Deletes, StreamConfig
from spark_jobs.settings.iceberg import CATALOG
from spark_jobs.sinks import iceberg, iceberg_guard
from spark_jobs.sinks.columns import plan_evolution, table_schema, version_schemas

__all__ = ["IcebergWriter", "open_iceberg_table"]


def open_iceberg_table(spark: SparkSession, config: StreamConfig, *, located: Located,
                       app_id: str, metrics: StreamMetrics, label: str | None = None
                       ) -> IcebergWriter:
    """The topic's Iceberg table (named by its place's path), checked or created, and evolved
    (`label`, `app_id`: as for `table_writer.open_table`); a keyless topic's table an earlier
    version made with ``_partition`` gets `iceberg.PARTITION` first (`iceberg.rename_partition`,
    logged).

    Raises:
        JobError: the name's place holds a Delta table, the table is another topic's, or its
            columns match no registered version (a column of another type: named).
    """
    assert config.iceberg is not None
    schemas, place = located.schemas, located.labelled(label)
    check_history(config, schemas, table=f"{CATALOG}.{place.path}")
    app_id = table_app_id(config, app_id=app_id, topic=place.topic)
    session = iceberg.use_catalog(spark.newSession(), config.iceberg)
    versions = {i: columns_for(config, schemas, columns=v, deleted=iceberg.DELETED,
                               names=iceberg.HISTORY)
                for i, v in version_schemas(session, schemas).items()}
    latest = columns_for(config, schemas, columns=table_schema(session, schemas),
                         deleted=iceberg.DELETED, names=iceberg.HISTORY)
    name = place.path
    if note := iceberg.rename_partition(session, name, topic=place.topic, latest=latest):
        log(note)  # a change log an earlier version made, before its first check and write
    if not iceberg.check_table(session, name, topic=place.topic,
                               warehouse=config.iceberg.warehouse, versions=versions,
                               latest=latest):
        iceberg.create_table(session, name, topic=place.topic, schema=latest,
                             keyed=schemas.key is not None,
                             format_version=config.iceberg_format_version)
        log(f"table {CATALOG}.{name}: created (Iceberg format version "
            f"{config.iceberg_format_version}"
            f"{', merge-on-read' if schemas.key is not None else ''})")
    if schemas.key is not None and config.commit_order and not ordered_by_commit(schemas):
        log(f"table {CATALOG}.{name}: {schemas.value.subject} has no {COMMIT_TS}: Kafka order "
            f"(docs/streaming.md, 'Commit order')")
    writer = IcebergWriter(session, config, place=place, schemas=schemas, app_id=app_id,
                           metrics=metrics)
    writer.sync_table()
    return writer


class IcebergWriter(TableWriter):
    """Applies one topic's part of each micro-batch to its Iceberg table (driver side)."""

    last: int | None  # the table's highest batch id of this app id (None: none)
    guard_last: int | None = None  # the guard's highest batch id (`last` for it)

    def _open(self) -> T.StructType:
        """The table's columns; its highest batch id of this app id."""
        self.last = iceberg.last_batch(self.spark, self.place.path, app_id=self.app_id)
        return iceberg.table_columns(self.spark, self.place.path)

    @property
    def path(self) -> str:
        """The table's name in the catalog, ``flatavro.<namespace>.<table>``."""
        return f"{CATALOG}.{self.place.path}"

    def sync_table(self) -> None:
        """Evolve the table to the latest value version's columns, if they differ (first,
        finish filling columns an interrupted evolution added); give a table in commit order
        with hard deletes its guard (`iceberg_guard`)."""
        iceberg.finish_fill(self.spark, self.place.path, subject=self.schemas.value)
        want = iceberg.iceberg_types(columns_for(
            self.config, self.schemas, columns=table_schema(self.spark, self.schemas),
            deleted=iceberg.DELETED, names=iceberg.HISTORY))
        evolution = plan_evolution(self.columns, want, subject=self.schemas.value.subject,
                                   widens=iceberg.widens, table="an Iceberg table",
                                   rebuild="iceberg", widenings=iceberg.WIDENINGS)
        if evolution:
            iceberg.evolve(self.spark, self.place.path, evolution=evolution,
                           subject=self.schemas.value)
            log(f"table {self.path} now has the columns of {self.schemas.value.subject} "
                f"schema id {self.schemas.value.latest_id} ({evolution})")
            self.metrics.table(self.topic, self.name, schema_id=self.schemas.value.latest_id)
        self.columns = want
        if self.guarded:
            assert self.schemas.key is not None
            guard = iceberg_guard.guard_name(self.place.path)
            held = iceberg_guard.open_guard(
                self.spark, self.place.path, columns=want, keys=self.schemas.key.field_names(),
                format_version=self.config.iceberg_format_version)
            if held is None:  # made now: empty, no batch in it
                log(f"table {self.path}: tombstones of hard deletes in {CATALOG}.{guard} "
                    f"(docs/streaming.md, 'Iceberg')")
            self.tombstones = bool(held)
            self.guard_last = None if held is None else iceberg.last_batch(
                self.spark, guard, app_id=self.app_id)

    def applied(self) -> int:
        """The newest batch the table has committed as this writer's app id (-1: none)."""
        return -1 if self.last is None else self.last

    def upkeep(self, batch_id: int) -> None:
        """Compact after every N-th batch the table was written in (``--optimize-every``, on
        the table's own `upkeep.Cadence`)."""
        if not self.cadence.due(batch_id):
            return
        started = time.monotonic()
        if self.guarded:
            iceberg_guard.expire(self.spark, self.place.path,
                                 retention_ms=self.config.tombstone_retention_ms,
                                 now_ms=int(time.time() * 1000))
        done = iceberg.rewrite(self.spark, self.place.path)
        log(f"table {self.path} after batch {batch_id}: {done} in "
            f"{time.monotonic() - started:.1f} s")

    def _write(self, changes: DataFrame, batch_id: int, *, deletes: bool) -> str:
        if self.last is not None and batch_id <= self.last:
            return SKIPPED
        columns = [f.name for f in self.columns.fields]
        name = self.place.path
        if self.schemas.key is None:
            written = iceberg.append_changes(
                self.spark, iceberg.HISTORY.log_rows(changes).select(*columns), name=name,
                app_id=self.app_id, batch_id=batch_id)
        elif self.config.history:
            written = iceberg.merge_history(self.spark, name, changes=changes,
                                            key_columns=self.schemas.key.field_names(),
                                            columns=columns, app_id=self.app_id,
                                            batch_id=batch_id)
        else:
            keys = self.schemas.key.field_names()
            if self.ordered:
                source = self._in_commit_order(changes, batch_id, keys=keys, columns=columns,
                                               deletes=deletes, deleted=iceberg.DELETED)
            else:
                source = last_change_per_key(changes, keys)
            written = iceberg.merge_changes(self.spark, name, changes=source, key_columns=keys,
                                            columns=columns, app_id=self.app_id,
                                            batch_id=batch_id, ordered=self.ordered,
                                            soft=self.config.deletes is Deletes.SOFT)
        self.last = batch_id
        self.metrics.applied({"numTargetRowsInserted": written.added,
                              "numTargetRowsDeleted": written.removed,
                              "numOutputRows": written.added},
                             keyed=self.schemas.key is not None, table=self.name)
        return str(written)

    def _record(self, winners: DataFrame, batch_id: int, *, keys: list[str]) -> None:
        """Keep the batch's tombstones in the guard, unless its snapshots name the batch."""
        if self.guard_last is None or batch_id > self.guard_last:
            iceberg_guard.record(self.spark, self.place.path, winners=winners, keys=keys,
                                 app_id=self.app_id, batch_id=batch_id)
            self.guard_last = batch_id

    def _with_tombstones(self, winners: DataFrame, *, keys: list[str]) -> DataFrame:
        return iceberg_guard.with_tombstones(self.spark, self.place.path, winners=winners,
                                             keys=keys)
