"""The Apache Iceberg table a stream keeps equal to the TiDB table (``--format iceberg``): in the
catalog `settings.iceberg.CATALOG`, named ``namespace.table``; a keyed topic's table
merge-on-read (a MERGE writes new rows and small delete files, compaction merges them later),
a keyless topic's appended (a change log: its Kafka partition in `PARTITION`).

Exactly once: Iceberg has no Delta ``txnAppId``. Every write puts the stream's app id and the
micro-batch id into its snapshot's summary (``flatavro.app-id``, ``flatavro.batch-id``, through
the session's ``spark.sql.iceberg.snapshot-property.*``: the MERGE and its commit are one), and
a batch the table's snapshots already name for the app id is skipped (`last_batch`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from spark_jobs.decoding.schemas import SubjectVersions
from spark_jobs.errors import JobError, one_line
from spark_jobs.settings.iceberg import CATALOG, IcebergCatalog
from spark_jobs.sinks import history, merge
from spark_jobs.sinks.columns import Evolution, check_mode, defaults, describe, difference
from spark_jobs.sources.files import path_exists

__all__ = ["APP_ID", "BATCH_ID", "CATALOG_SECONDS", "DELETED", "FILLING", "HISTORY", "PARTITION",
           "WIDENINGS", "Written", "append_changes", "check_catalog", "check_table",
           "create_namespace", "create_table", "drop", "evolve", "exists", "finish_fill",
           "iceberg_types", "identifier", "in_session", "last_batch", "properties",
           "merge_changes", "merge_history", "rename_partition", "rewrite", "snapshot_summary",
           "table_columns", "use_catalog", "widens", "write_table"]

APP_ID = "flatavro.app-id"
BATCH_ID = "flatavro.batch-id"
"""The snapshot-summary keys of a stream's writes."""

TOPIC_PROPERTY = "flatavro.topic"
"""Table property naming the topic a stream applies to the table."""

DELETED = "__deleted"
"""A ``--deletes soft`` table's flag: Iceberg reserves ``_deleted`` (Delta's name) for a
metadata column; ``__deleted`` is the name Debezium's new-record-state transform gives it."""

HISTORY = history.Names(ended=DELETED, partition="__partition")
"""A ``--history`` table's columns: `DELETED` and ``__partition`` for Delta's ``_deleted`` and
``_partition`` (Iceberg's metadata columns); a change log's partition column too."""

PARTITION = HISTORY.partition
"""Kafka's partition in a keyless topic's table (a change log) and a ``--history`` table:
``__partition``, as Delta's ``_partition`` is the name of an Iceberg metadata column (a table
with such a column takes appends, but Iceberg refuses its MERGE, UPDATE, DELETE and
overwrite: "Table column names conflict with names reserved for Iceberg metadata columns").
Tables made before kept ``_partition``: `rename_partition`."""

FILLING = "flatavro.filling"
"""Table property naming added columns whose default is not yet in the rows (`evolve`)."""

_SESSION_PROPERTY = "spark.sql.iceberg.snapshot-property."

CATALOG_SECONDS = 60.0
"""How long the catalog has to answer the stream's first question."""

_MERGE_ON_READ = {f"write.{op}.mode": "merge-on-read" for op in ("merge", "update", "delete")}

# Integral types in widening order as Iceberg stores them (tinyint and smallint are int).
_INTEGRAL = ("int", "bigint")


def identifier(name: str) -> str:
    """The Spark identifier of table `name` (``namespace.table``) in the catalog, quoted."""
    return ".".join(f"`{part}`" for part in [CATALOG, *name.split(".")])


def iceberg_types(schema: T.StructType) -> T.StructType:
    """`schema` as an Iceberg table holds it: tinyint and smallint are int (Iceberg has no
    narrower integer)."""
    return T.StructType([
        T.StructField(f.name, T.IntegerType() if isinstance(f.dataType, (T.ByteType, T.ShortType))
                      else f.dataType, f.nullable) for f in schema.fields])


WIDENINGS = "int to bigint, float to double, a decimal's precision up at the same scale"
"""The type changes Iceberg makes in place (`widens`), for errors."""


def widens(old: T.DataType, new: T.DataType) -> bool:
    """Every value of `old` is a value of `new`, and Iceberg changes the column in place: int to
    bigint, float to double, a decimal's precision up at the same scale."""
    o, n = old.simpleString(), new.simpleString()
    if o in _INTEGRAL and n in _INTEGRAL:
        return _INTEGRAL.index(o) <= _INTEGRAL.index(n)
    if o == "float" and n == "double":
        return True
    return (isinstance(old, T.DecimalType) and isinstance(new, T.DecimalType)
            and new.scale == old.scale and new.precision >= old.precision)


def use_catalog(spark: SparkSession, catalog: IcebergCatalog) -> SparkSession:
    """`spark` with `catalog` as the catalog `CATALOG` (runtime settings: a session built
    elsewhere, a test's say, takes them as well; a session loads a catalog once, so each new
    session gets them before its first use)."""
    for name, value in catalog.spark_settings().items():
        spark.conf.set(name, value)
    return spark


def check_catalog(spark: SparkSession, catalog: IcebergCatalog) -> None:
    """The catalog answers (lists its namespaces) within `CATALOG_SECONDS` (asked through a new
    session of `spark`'s).

    Raises:
        JobError: naming the catalog's URI and what went wrong.
    """
    spark = use_catalog(spark.newSession(), catalog)
    failed: list[BaseException] = []

    def ask() -> None:
        try:
            spark.sql(f"SHOW NAMESPACES IN `{CATALOG}`").collect()
        except BaseException as exc:  # reported below
            failed.append(exc)

    # A daemon thread: a catalog that never answers must not hold the process at exit.
    asking = threading.Thread(target=ask, name="flatavro-catalog", daemon=True)
    asking.start()
    asking.join(CATALOG_SECONDS)
    if asking.is_alive():
        raise JobError(f"the Iceberg catalog {catalog.uri} did not answer within "
                       f"{CATALOG_SECONDS:g} s ({catalog.source})")
    if failed:  # a JVM error: one line of it
        raise JobError(f"the Iceberg catalog {catalog.uri} cannot be used: "
                       f"{one_line(failed[0])} ({catalog.source})") from failed[0]


def _location(name: str, warehouse: str | None) -> str | None:
    """Where the default catalog puts table `name` (``<warehouse>/<namespace>/<table>``)."""
    if warehouse is None:
        return None
    return "/".join([warehouse.rstrip("/"), *name.split(".")])


def table_columns(spark: SparkSession, name: str) -> T.StructType:
    """The table's columns."""
    return spark.table(identifier(name)).schema


def check_table(spark: SparkSession, name: str, *, topic: str, warehouse: str | None,
                versions: dict[int, T.StructType], latest: T.StructType) -> bool:
    """Whether the Iceberg table `name` of `topic` exists (False: not yet).

    Raises:
        JobError: its place holds a Delta table, it is another topic's, or its columns match no
            registered version (naming the difference: a column of another type, say).
    """
    if not spark.catalog.tableExists(f"{CATALOG}.{name}"):
        location = _location(name, warehouse)
        if location is not None and path_exists(spark, f"{location}/_delta_log"):
            raise JobError(f"{location}, where the Iceberg table {name} would go, holds a Delta "
                           f"table: --format iceberg writes Iceberg tables only; stream it with "
                           f"--format delta --table-path {location}, or name another table")
        return False
    owner = properties(spark, name).get(TOPIC_PROPERTY)
    if owner is not None and owner != topic:
        raise JobError(f"the Iceberg table {name} mirrors topic {owner}, not {topic}")
    have = table_columns(spark, name)
    if not any(describe(have) == describe(iceberg_types(v)) for v in versions.values()):
        check_mode(have, latest, table=f"the Iceberg table {name}", deleted=DELETED)
        raise JobError(f"the Iceberg table {name} is not a table of topic {topic}: it "
                       f"{difference(have, iceberg_types(latest))} (compared with the latest "
                       f"version)")
    return True


def rename_partition(spark: SparkSession, name: str, *, topic: str,
                     latest: T.StructType) -> str | None:
    """Rename an earlier version's ``_partition`` of table `name` (of `topic`, a change log:
    its columns `latest` have `PARTITION`) to `PARTITION`, once; what was done, for the log
    (None: nothing to do: no such table, the column renamed already, another topic's table).
    Renaming is metadata only (Iceberg tracks columns by id): the rows keep their values."""
    if PARTITION not in latest.fieldNames() or not exists(spark, name) or (
            properties(spark, name).get(TOPIC_PROPERTY) not in (None, topic)):
        return None
    have = table_columns(spark, name).fieldNames()
    if history.PARTITION not in have or PARTITION in have:
        return None
    spark.sql(f"ALTER TABLE {identifier(name)} RENAME COLUMN `{history.PARTITION}` TO "
              f"`{PARTITION}`")
    return (f"table {CATALOG}.{name}: column {history.PARTITION} renamed {PARTITION} (Iceberg "
            f"reserves {history.PARTITION} for a metadata column and refuses a MERGE into a "
            f"table that has it; docs/streaming.md, 'Iceberg')")


def properties(spark: SparkSession, name: str) -> dict[str, str]:
    """Table `name`'s properties."""
    return {r[0]: r[1] for r in spark.sql(f"SHOW TBLPROPERTIES {identifier(name)}").collect()}


_NAMESPACES = threading.Lock()
"""One namespace made at a time in this driver: the tables of a database are opened in parallel,
and the JDBC catalog's ``CREATE NAMESPACE IF NOT EXISTS`` checks and inserts in two steps (two
tables of a new namespace at once: a primary-key violation in ``iceberg_namespace_properties``)."""


def create_namespace(spark: SparkSession, parts: list[str]) -> None:
    """Make the namespace `parts` of the catalog unless it exists.

    Raises:
        Exception: the catalog's error, unless the namespace exists after it (another process
            made it between the catalog's check and its insert).
    """
    namespace = ".".join(f"`{p}`" for p in [CATALOG, *parts])
    with _NAMESPACES:
        try:
            spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {namespace}")
        except Exception:
            parent = ".".join(f"`{p}`" for p in [CATALOG, *parts[:-1]])
            shown = spark.sql(f"SHOW NAMESPACES IN {parent}").collect()
            if parts[-1] not in {str(r[0]).rsplit(".", 1)[-1].strip("`") for r in shown}:
                raise


def _new_table(spark: SparkSession, name: str, *, topic: str, keyed: bool,
               format_version: int) -> dict[str, str]:
    """Make the namespace of table `name` (if new); the properties a table the jobs create
    has: its format version, its topic, and merge-on-read for a keyed topic."""
    create_namespace(spark, name.split(".")[:-1])
    return {"format-version": str(format_version), TOPIC_PROPERTY: topic,
            **(_MERGE_ON_READ if keyed else {})}


def create_table(spark: SparkSession, name: str, *, topic: str, schema: T.StructType,
                 keyed: bool, format_version: int) -> None:
    """An empty Iceberg table with the topic's columns and the topic as a property; a keyed
    topic's merge-on-read (its format version's row deletes: position delete files in v2,
    deletion vectors in v3)."""
    columns = ", ".join(f"`{f.name}` {f.dataType.simpleString()}"
                        for f in iceberg_types(schema).fields)
    listed = ", ".join(f"'{k}' = '{v}'" for k, v in _new_table(
        spark, name, topic=topic, keyed=keyed, format_version=format_version).items())
    spark.sql(f"CREATE TABLE IF NOT EXISTS {identifier(name)} ({columns}) USING iceberg "
              f"TBLPROPERTIES ({listed})")


def evolve(spark: SparkSession, name: str, *, evolution: Evolution,
           subject: SubjectVersions) -> None:
    """Give the table the latest version's columns: dropped columns go, widened ones change type,
    new ones are added and then filled with their default in the rows already there (as TiDB
    shows them after ``ADD COLUMN ... DEFAULT``). Iceberg changes a schema without a snapshot,
    so the fill is a commit of its own: the columns to fill are named in the table property
    `FILLING` first, and the property goes with the fill; a crash in between leaves it, and
    `finish_fill` fills them at the next start, before any row of the new version is written."""
    table = identifier(name)
    target = {f.name: f.dataType for f in iceberg_types(evolution.target).fields}
    if evolution.added:
        spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES "
                  f"('{FILLING}' = '{','.join(evolution.added)}')")
    for column in evolution.removed:
        spark.sql(f"ALTER TABLE {table} DROP COLUMN `{column}`")
    for column in evolution.widened:
        spark.sql(f"ALTER TABLE {table} ALTER COLUMN `{column}` TYPE "
                  f"{target[column].simpleString()}")
    if evolution.added:
        adding = ", ".join(f"`{c}` {target[c].simpleString()}" for c in evolution.added)
        spark.sql(f"ALTER TABLE {table} ADD COLUMNS ({adding})")
        finish_fill(spark, name, subject=subject)


def finish_fill(spark: SparkSession, name: str, *, subject: SubjectVersions) -> None:
    """Fill the columns the table property `FILLING` names with their default in every row,
    then drop the property (nothing to do without it)."""
    kept = properties(spark, name)
    have = set(table_columns(spark, name).fieldNames())  # a crash before ADD COLUMNS: none
    names = tuple(c for c in kept.get(FILLING, "").split(",") if c in have)
    if FILLING not in kept:
        return
    if names:
        _fill(spark, name, defaults=defaults(spark, subject, names=names))
    spark.sql(f"ALTER TABLE {identifier(name)} UNSET TBLPROPERTIES ('{FILLING}')")


def _fill(spark: SparkSession, name: str, *, defaults: DataFrame) -> None:
    """Set the columns of `defaults` (one row) to its values in every row of the table (a
    MERGE of that one row ON true: every row matches it)."""
    row = defaults.first()
    assert row is not None
    if all(row[c] is None for c in defaults.columns):
        return  # a new column reads NULL already
    view = "flatavro_defaults"
    in_session(spark, defaults).createOrReplaceTempView(view)
    assigned = ", ".join(f"`{c}` = d.`{c}`" for c in defaults.columns)
    try:
        spark.sql(f"MERGE INTO {identifier(name)} t USING {view} d ON true "
                  f"WHEN MATCHED THEN UPDATE SET {assigned}")
    finally:
        spark.catalog.dropTempView(view)


@contextmanager
def snapshot_summary(spark: SparkSession, *, app_id: str, batch_id: int) -> Iterator[None]:
    """The writes inside put (`app_id`, `batch_id`) into their snapshot's summary."""
    spark.conf.set(_SESSION_PROPERTY + APP_ID, app_id)
    spark.conf.set(_SESSION_PROPERTY + BATCH_ID, str(batch_id))
    try:
        yield
    finally:
        spark.conf.unset(_SESSION_PROPERTY + APP_ID)
        spark.conf.unset(_SESSION_PROPERTY + BATCH_ID)


def last_batch(spark: SparkSession, name: str, *, app_id: str) -> int | None:
    """The highest batch id the table's snapshots name for `app_id` (None: none)."""
    row = spark.sql(
        f"SELECT max(CAST(summary['{BATCH_ID}'] AS BIGINT)) FROM {identifier(name)}.snapshots "
        f"WHERE summary['{APP_ID}'] = '{app_id}'").first()
    return None if row is None or row[0] is None else int(row[0])


@dataclass(frozen=True, slots=True)
class Written:
    """What a write committed: its snapshot and the summary's counts."""

    snapshot: int
    added: int  # rows written (inserts, and the new image of updates)
    removed: int  # rows deleted (deletes, and the old image of updates)

    def __str__(self) -> str:
        return f"snapshot {self.snapshot}: wrote {self.added} row(s), removed {self.removed}"


def _written(spark: SparkSession, name: str) -> Written:
    row = spark.sql(f"SELECT snapshot_id, summary FROM {identifier(name)}.snapshots "
                    f"ORDER BY committed_at DESC LIMIT 1").first()
    assert row is not None
    summary = row[1] or {}
    # A MERGE may rewrite a data file's earlier deletes into its new delete file (or
    # deletion vector): the rows it removed are the positions added net of those replaced.
    count = {k: int(summary.get(k) or 0) for k in (
        "added-position-deletes", "removed-position-deletes", "deleted-records")}
    removed = (count["added-position-deletes"] - count["removed-position-deletes"]
               + count["deleted-records"])
    return Written(int(row[0]), int(summary.get("added-records") or 0), removed)


def in_session(spark: SparkSession, df: DataFrame) -> DataFrame:
    """`df` as a DataFrame of `spark` (another session of the same SparkContext: each table
    writes through its own, for its own snapshot properties)."""
    if df.sparkSession is spark:
        return df
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    moved = jvm.org.apache.spark.sql.classic.Dataset.ofRows(
        spark._jsparkSession, df._jdf.logicalPlan())  # type: ignore[attr-defined]
    return DataFrame(moved, spark)


def merge_changes(spark: SparkSession, name: str, *, changes: DataFrame, key_columns: list[str],
                  columns: list[str], app_id: str, batch_id: int, ordered: bool = False,
                  soft: bool = False) -> Written:
    """MERGE INTO the table (`merge.clauses`, as for Delta), as (`app_id`, `batch_id`)."""
    on = merge.key_on(key_columns)
    sql = merge.clauses(merge.SqlMerge(), merge.values(columns, soft=soft, deleted=DELETED),
                        ordered=ordered, soft=soft, deleted=DELETED)
    return _merge(spark, name, source=in_session(spark, changes), sql=sql, on=on,
                  app_id=app_id, batch_id=batch_id)


def _merge(spark: SparkSession, name: str, *, source: DataFrame, sql: merge.SqlMerge, on: str,
           app_id: str, batch_id: int) -> Written:
    """Run `sql`'s MERGE of `source` (a DataFrame of `spark`) INTO the table ON `on`, as
    (`app_id`, `batch_id`); what it committed."""
    view = f"flatavro_changes_{batch_id}"
    source.createOrReplaceTempView(view)
    try:
        with snapshot_summary(spark, app_id=app_id, batch_id=batch_id):
            spark.sql(sql.sql(target=identifier(name), source=view, on=on))
    finally:
        spark.catalog.dropTempView(view)
    return _written(spark, name)


def merge_history(spark: SparkSession, name: str, *, changes: DataFrame, key_columns: list[str],
                  columns: list[str], app_id: str, batch_id: int) -> Written:
    """MERGE a batch into a ``--history`` table (`history.changed_versions`, with `HISTORY`'s
    names): new versions inserted, the spans that changed updated, as (`app_id`,
    `batch_id`)."""
    values = [c for c in columns if c not in HISTORY.columns]
    source = history.changed_versions(in_session(spark, changes), spark.table(identifier(name)),
                                      keys=key_columns, values=values, names=HISTORY)
    return _merge(spark, name, source=source,
                  sql=history.history_clauses(merge.SqlMerge(), columns, names=HISTORY),
                  on=history.merge_on(key_columns), app_id=app_id, batch_id=batch_id)


def append_changes(spark: SparkSession, df: DataFrame, *, name: str, app_id: str,
                   batch_id: int) -> Written:
    """Append rows (a keyless table's changes) as (`app_id`, `batch_id`)."""
    with snapshot_summary(spark, app_id=app_id, batch_id=batch_id):
        in_session(spark, df).writeTo(identifier(name)).append()
    return _written(spark, name)


def rewrite(spark: SparkSession, name: str) -> str:
    """Iceberg's compaction: ``rewrite_data_files`` (data files with their deletes applied; a
    file with any delete is rewritten), then ``rewrite_position_delete_files`` (what deletes
    remain); what each did."""
    quoted = f"{CATALOG}.{name}".replace("'", "''")
    data = spark.sql(
        f"CALL `{CATALOG}`.system.rewrite_data_files(table => '{quoted}', "
        f"options => map('delete-file-threshold', '1', 'min-input-files', '2'))").first()
    deletes = spark.sql(
        f"CALL `{CATALOG}`.system.rewrite_position_delete_files(table => '{quoted}')").first()
    rewritten = f"{data[0] if data else 0} data file(s) into {data[1] if data else 0}"
    return (f"rewrite_data_files {rewritten}; rewrite_position_delete_files "
            f"{deletes[0] if deletes else 0} delete file(s)")


def exists(spark: SparkSession, name: str) -> bool:
    """Whether the catalog has table `name`."""
    return bool(spark.catalog.tableExists(f"{CATALOG}.{name}"))


def drop(spark: SparkSession, name: str) -> None:
    """Drop table `name` and its files (a bulk read's output, when a later part failed)."""
    spark.sql(f"DROP TABLE IF EXISTS {identifier(name)} PURGE")


def write_table(spark: SparkSession, df: DataFrame, *, name: str, topic: str, keyed: bool,
                overwrite: bool, format_version: int = 3) -> None:
    """Create table `name` holding `df` in one commit (Iceberg's atomic CREATE / REPLACE TABLE
    AS SELECT: a failed write leaves no table, or the old one), with the topic as a property
    and, for a keyed topic's state, merge-on-read (a stream can continue it)."""
    writer = in_session(spark, df).writeTo(identifier(name)).using("iceberg")
    for key, value in _new_table(spark, name, topic=topic, keyed=keyed,
                                 format_version=format_version).items():
        writer = writer.tableProperty(key, value)
    if overwrite:
        writer.createOrReplace()
    else:
        writer.create()
