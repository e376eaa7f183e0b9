"""The layout of the stream's Delta table: its deletion-vector setting (on when the stream
creates the table, kept on an existing one, enabled there only when asked, refused for readers
that cannot read them) and Delta's ``OPTIMIZE`` every N micro-batches, which keeps the file
count bounded and purges deletion vectors. Log checkpoints are Delta's own (a checkpoint every
``delta.checkpointInterval`` commits, 10 by default); nothing here runs ``VACUUM``.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

from delta.tables import DeltaTable
from pyspark.sql import SparkSession

from spark_jobs.errors import JobError
from spark_jobs.sources.files import qualified

__all__ = ["Cadence", "DELETION_VECTORS_PROPERTY", "DELETION_VECTORS_FEATURE", "DeletionVectors",
           "for_new_table", "deletion_vectors", "check_readers", "settle_deletion_vectors",
           "Compaction", "optimize_due", "optimize"]

DELETION_VECTORS_PROPERTY = "delta.enableDeletionVectors"
"""Table property: MERGE, UPDATE and DELETE write deletion vectors instead of rewriting files."""

DELETION_VECTORS_FEATURE = "deletionVectors"
"""The Delta table feature (reader and writer) a table with deletion vectors has: a reader
that does not support it cannot read the table at all, whether or not any vector exists yet."""


@dataclass(frozen=True, slots=True)
class DeletionVectors:
    """A table's deletion-vector state."""

    feature: bool  # its protocol has the table feature: readers must support it
    enabled: bool  # DELETION_VECTORS_PROPERTY is true: changes write deletion vectors


def for_new_table(wanted: bool | None, *, keyed: bool) -> bool:
    """Whether a table the stream creates gets deletion vectors: as `wanted`
    (``--deletion-vectors``), else for a keyed table only. A keyless table is an append-only
    change log, which nothing deletes from: the feature would only shut readers out."""
    return keyed if wanted is None else wanted


def deletion_vectors(properties: dict[str, str], features: list[str]) -> DeletionVectors:
    """The deletion-vector state of a Delta table, from its ``DESCRIBE DETAIL`` properties and
    table features."""
    return DeletionVectors(
        feature=DELETION_VECTORS_FEATURE in features,
        enabled=properties.get(DELETION_VECTORS_PROPERTY, "false").lower() == "true")


def check_readers(state: DeletionVectors, path: str, *, wanted: bool | None) -> None:
    """Refuse ``--deletion-vectors off`` for a table whose readers must read deletion vectors.

    Raises:
        JobError: `wanted` is False and the table has the table feature, naming the feature,
            the option and the ways out.
    """
    if wanted is False and state.feature:
        raise JobError(
            f"the Delta table at {path} has the table feature {DELETION_VECTORS_FEATURE} "
            f"({DELETION_VECTORS_PROPERTY} = {str(state.enabled).lower()}), so readers that "
            f"cannot read deletion vectors cannot read it, and --deletion-vectors off cannot "
            f"change that: leave out --deletion-vectors off to keep the table as it is, or "
            f"remove the feature first with Spark: ALTER TABLE delta.`{path}` DROP FEATURE "
            f"{DELETION_VECTORS_FEATURE} (Delta 4.0: rewrites the files that have deletion "
            f"vectors)")


def settle_deletion_vectors(spark: SparkSession, path: str, *, state: DeletionVectors,
                            wanted: bool | None, keyed: bool) -> str:
    """Bring an existing table to ``--deletion-vectors``: it keeps its setting unless `wanted`
    is True, which enables deletion vectors (``ALTER TABLE ... SET TBLPROPERTIES``, a protocol
    upgrade when the table lacks the feature). Returns a line for the log ("" when there is
    nothing to say, as for a keyless table, which never needs them)."""
    if state.enabled or wanted is False or (wanted is None and not keyed):
        return ""
    if wanted is None:
        return (f"the table {path} keeps its setting: no deletion vectors "
                f"({DELETION_VECTORS_PROPERTY} is not true), so MERGE rewrites every file it "
                f"changes; --deletion-vectors on enables them")
    location = qualified(spark, path).replace("`", "``")
    spark.sql(f"ALTER TABLE delta.`{location}` SET TBLPROPERTIES "
              f"('{DELETION_VECTORS_PROPERTY}' = 'true')")
    if state.feature:
        return f"deletion vectors enabled again on the table {path} (--deletion-vectors on)"
    return (f"deletion vectors enabled on the table {path} (--deletion-vectors on): its "
            f"protocol now has the table feature {DELETION_VECTORS_FEATURE}, so readers that "
            f"cannot read deletion vectors can no longer read it (docs/streaming.md, Readers)")


@dataclass(frozen=True, slots=True)
class Compaction:
    """What one ``OPTIMIZE`` did: data files removed and added."""

    removed: int
    added: int

    def __str__(self) -> str:
        if not self.removed:
            return "nothing to compact"
        return f"{self.removed} file(s) compacted into {self.added}"


@dataclass(slots=True)
class Cadence:
    """When one table of a stream is compacted (``--optimize-every``): it counts the batches the
    table is written in from the id of the first batch this process writes, so a table written
    in every batch compacts after the same batches across restarts. In whole-database mode each
    table is shifted by a number from its name, so that their compactions do not all fall on
    one micro-batch. The same for Delta's OPTIMIZE and Iceberg's rewrites."""

    every: int
    shift: int = 0
    written: int | None = None  # the count the next batch gets (None: no batch written yet)

    @classmethod
    def of(cls, name: str, *, every: int, many: bool) -> Cadence:
        """The cadence of table `name` (`many`: whole-database mode)."""
        return cls(every, zlib.crc32(name.encode()) % every if many and every else 0)

    def due(self, batch_id: int) -> bool:
        """Count micro-batch `batch_id` as written; whether the table is compacted after it."""
        written = batch_id + self.shift if self.written is None else self.written
        self.written = written + 1
        return optimize_due(written, every=self.every)


def optimize_due(batch_id: int, *, every: int) -> bool:
    """Whether ``OPTIMIZE`` follows micro-batch `batch_id`: after every `every`-th batch (ids
    every-1, 2*every-1, ...: the same batches after a restart), never when `every` is 0."""
    return every > 0 and (batch_id + 1) % every == 0


def optimize(spark: SparkSession, path: str) -> Compaction:
    """Delta's ``OPTIMIZE`` of the table at `path`: small files bin-packed into larger ones,
    files with many deleted rows rewritten without them (one commit)."""
    metrics = DeltaTable.forPath(spark, path).optimize().executeCompaction().select(
        "metrics.numFilesRemoved", "metrics.numFilesAdded").first()
    assert metrics is not None  # OPTIMIZE returns one row
    return Compaction(removed=int(metrics[0]), added=int(metrics[1]))
