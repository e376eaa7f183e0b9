"""The columns of a topic's table, whatever its format: what `decode` gives for each registered
value version, how the table must change to hold the latest one (`plan_evolution`), and the
defaults that fill an added column in the rows already there."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.avro.functions import from_avro

from spark_jobs.decoding.schemas import SubjectVersions, TopicVersions, for_spark
from spark_jobs.decoding.transforms import BOOKKEEPING, DELETED, built, decode, with_frames
from spark_jobs.errors import JobError
from spark_jobs.settings.config import Mode
from spark_jobs.sinks.history import VALID_FROM

__all__ = ["DELTA_WIDENINGS", "Evolution", "KAFKA_SCHEMA", "check_mode", "defaults", "describe",
           "difference", "plan_evolution", "table_schema", "version_schemas"]

KAFKA_SCHEMA = T.StructType([
    T.StructField("key", T.BinaryType()), T.StructField("value", T.BinaryType()),
    T.StructField("topic", T.StringType()), T.StructField("partition", T.IntegerType()),
    T.StructField("offset", T.LongType()), T.StructField("timestamp", T.TimestampType())])
"""The Kafka source's columns (what `decode` reads)."""

# Integral and floating types in widening order; a later one holds every value of an earlier.
_INTEGRAL = ("tinyint", "smallint", "int", "bigint")
_INTEGRAL_DIGITS = {"tinyint": 3, "smallint": 5, "int": 10, "bigint": 20}

DELTA_WIDENINGS = "a larger integer, float to double, a wider decimal, date to timestamp"
"""The type changes `_widens` allows, for errors."""


def _made_with(columns: T.StructType, *, deleted: str) -> str:
    """Which of ``--deletes hard``, ``--deletes soft`` and ``--history`` made a keyed table
    with `columns` (`deleted`: the format's soft-deletes flag), and the columns that tell."""
    names = describe(columns)
    if VALID_FROM in names:
        return f"--history (its columns have {VALID_FROM})"
    if deleted in names:
        return f"--deletes soft (its columns have {deleted})"
    return f"--deletes hard (its columns lack {deleted})"


def check_mode(have: T.StructType, latest: T.StructType, *, table: str,
               deleted: str = DELETED) -> None:
    """Refuse a table (its columns `have`) made in another delete mode than the one asked
    (its columns would be `latest`).

    Raises:
        JobError: naming the `table`, its mode and the one asked.
    """
    made, asked = _made_with(have, deleted=deleted), _made_with(latest, deleted=deleted)
    if made != asked:
        raise JobError(f"{table} was made with {made}, not {asked.split(' (')[0]}: keep its "
                       f"mode, or rebuild it into a new place")


def table_schema(spark: SparkSession, schemas: TopicVersions) -> T.StructType:
    """The table's columns for the topic's latest version: the value's columns as `decode`
    types them; a keyless topic (no key schema) also keeps `BOOKKEEPING` (a change log).
    Every column nullable (Delta writes them so). Derived once per process for each pair of
    reader schemas (value and key): `decode` reads every writer version into the latest, so
    the latest alone types the columns (deriving them, the analysis of a decode plan, cost a
    table's open ~0.4-0.9 s each time: docs/speed.md)."""
    def derive() -> T.StructType:
        empty = with_frames(spark.createDataFrame([], KAFKA_SCHEMA), schemas.framing)
        decoded = decode(empty, schemas, mode=Mode.FAILFAST)
        names = schemas.value.field_names() + (list(BOOKKEEPING) if schemas.key is None
                                               else [])
        return T.StructType([T.StructField(f.name, f.dataType, True)
                             for f in decoded.select(*names).schema.fields])

    readers = (schemas.value.latest, schemas.key.latest if schemas.key is not None else None)
    return T.StructType(list(built(("table_schema", *readers), derive).fields))


def version_schemas(spark: SparkSession, schemas: TopicVersions) -> dict[int, T.StructType]:
    """The table's columns as each registered value version (by schema id) would have them."""
    return {schema_id: table_schema(spark, TopicVersions(
        schemas.topic, schemas.key, schemas.value.only(schema_id)))
        for schema_id in schemas.value.by_id}


def describe(schema: T.StructType) -> dict[str, str]:
    """Each column's type, by name."""
    return {f.name: f.dataType.simpleString() for f in schema.fields}


def difference(have: T.StructType, want: T.StructType) -> str:
    """How `have` differs from `want`, for an error."""
    old, new = describe(have), describe(want)
    parts = [f"lacks {', '.join(n for n in new if n not in old)}"
             if any(n not in old for n in new) else "",
             f"has {', '.join(n for n in old if n not in new)} that the topic has not"
             if any(n not in new for n in old) else ""]
    parts += [f"{n} is {old[n]} where the topic has {new[n]}" for n in new
              if n in old and old[n] != new[n]]
    return "; ".join(p for p in parts if p)


@dataclass(frozen=True, slots=True)
class Evolution:
    """How the table's columns must change to hold the latest version's rows."""

    added: tuple[str, ...]
    removed: tuple[str, ...]
    widened: tuple[str, ...]
    target: T.StructType

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.widened)

    def __str__(self) -> str:
        parts = [f"added {', '.join(self.added)}" if self.added else "",
                 f"dropped {', '.join(self.removed)}" if self.removed else "",
                 f"widened {', '.join(self.widened)}" if self.widened else ""]
        return "; ".join(p for p in parts if p)


def _widens(old: T.DataType, new: T.DataType) -> bool:
    """Every value of `old` is a value of `new` (TiDB's MODIFY COLUMN to a wider type)."""
    o, n = old.simpleString(), new.simpleString()
    if o in _INTEGRAL and n in _INTEGRAL:
        return _INTEGRAL.index(o) <= _INTEGRAL.index(n)
    if o == "float" and n == "double":
        return True
    if isinstance(new, T.DecimalType):
        if isinstance(old, T.DecimalType):
            return (new.scale >= old.scale
                    and new.precision - new.scale >= old.precision - old.scale)
        return o in _INTEGRAL_DIGITS and new.precision - new.scale >= _INTEGRAL_DIGITS[o]
    return o == "date" and n in ("timestamp", "timestamp_ntz")


def plan_evolution(have: T.StructType, want: T.StructType, *, subject: str,
                   widens: Callable[[T.DataType, T.DataType], bool] | None = None,
                   table: str = "a Delta table", rebuild: str = "delta",
                   widenings: str = DELTA_WIDENINGS) -> Evolution:
    """What changes the table needs (empty when none); `widens` says which type changes the table
    can make in place (Delta's by default), `table`, `rebuild` and `widenings` name the format
    and its widenings in the error.

    Raises:
        JobError: a column's type changed in a way that is not a widening (naming the column,
            both types and what to do).
    """
    old = {f.name: f.dataType for f in have.fields}
    new = {f.name: f.dataType for f in want.fields}
    for name, data_type in new.items():
        if name in old and old[name] != data_type and not (widens or _widens)(old[name], data_type):
            raise JobError(
                f"column {name} changed from {old[name].simpleString()} to "
                f"{data_type.simpleString()} in the latest version of {subject}; {table} "
                f"cannot change a column that way in place (only widenings: {widenings}). Stop the "
                f"stream, move the table aside and rebuild it (bulk_read --format {rebuild} "
                f"--materialize, then a new --checkpoint with --starting-offsets earliest: the "
                f"last change per key wins, so nothing is lost or doubled)")
    return Evolution(
        added=tuple(n for n in new if n not in old),
        removed=tuple(n for n in old if n not in new),
        widened=tuple(n for n in new if n in old and old[n] != new[n]), target=want)


def defaults(spark: SparkSession, subject: SubjectVersions, *, names: tuple[str, ...]
              ) -> DataFrame:
    """One row: each named column's Avro default, typed as `from_avro` types the column (Avro's
    own schema resolution fills a field the writer lacks with the reader's default, so the
    value is what a message of the old version decodes to)."""
    schema = json.loads(for_spark(subject.latest))
    fields = [f for f in schema["fields"] if f["name"] in names]
    missing = [f["name"] for f in fields if "default" not in f]
    if missing:
        raise JobError(
            f"column(s) {', '.join(missing)} added to {subject.subject} without a default "
            f"(NOT NULL, no DEFAULT): the rows already in the table have no value the stream "
            f"can know; rebuild the table (bulk_read --format delta --materialize)")
    record = {"type": "record", "name": schema["name"], "namespace": schema.get("namespace", "")}
    reader = json.dumps(dict(record, fields=fields))
    value = from_avro(F.lit(bytearray()), json.dumps(dict(record, fields=[])),
                      {"avroSchema": reader, "mode": "FAILFAST"})
    return spark.range(1).select(value.alias("d")).select("d.*")


