"""Pure DataFrame -> DataFrame steps: frames in Spark SQL, from_avro per writer id, typed
output, dead letters, the latest state per key. No Python per row. (What a job does with a
message these steps cannot decode is `spark_jobs.decoding.bad_messages`.)

Frame layouts (docs/flat-avro.md §7, `service.core.framing`), one per job, chosen at start-up
from the kind of registry (`Framing`):

- Confluent: byte 0 the magic byte 0, bytes 1-4 the schema id (big-endian), the Avro body
  from byte 5;
- AWS Glue (a ``glue://`` registry): byte 0 the header version 3, byte 1 the compression (0
  none; 5 zlib, which ``from_avro`` cannot read: such a message is a bad frame), bytes 2-17 the
  schema version's UUID, the Avro body from byte 18.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from pyspark import SparkContext
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.avro.functions import from_avro

from service.core.framing import (
    GLUE_HEADER_SIZE,
    GLUE_HEADER_VERSION,
    GLUE_UNCOMPRESSED,
    GLUE_ZLIB,
    HEADER_SIZE,
    MAGIC_BYTE,
)
from service.core.values import PHYSICAL_SHIFT
from spark_jobs.decoding.schemas import (
    Framing,
    SubjectVersions,
    TopicVersions,
    WriterId,
    for_spark,
)
from spark_jobs.settings.config import Mode

__all__ = ["Framing", "with_frames", "frame_problem", "ZLIB_GLUE_BODY", "fail_on_problem",
           "decode", "dead_letters",
           "latest_state", "last_change_per_key", "header_id", "BOOKKEEPING",
           "UNDECODED", "COMMIT_TS", "BOUND", "HAS_DELETE", "PHYSICAL_TIME",
           "PHYSICAL_SHIFT", "DELETED", "BOUND_ROW",
           "TOMBSTONE", "ordered_by_commit", "in_commit_order", "built"]

UNDECODED = "the body does not decode with its writer schema"
"""Why a message with a known schema id cannot be decoded (a dead letter's reason)."""

ZLIB_GLUE_BODY = "zlib-compressed AWS Glue body: not supported by the Spark jobs"
"""Why a Glue frame with compression byte 5 is a bad frame: ``from_avro`` reads Avro, not
deflated Avro, and inflating in Python per row is what the jobs never do (TiCDC never
compresses; AWS's own serializer may)."""

DECODED = "_flatavro_decoded"
"""A field `decode` adds to every reader schema, ``boolean`` with default true: Avro's schema
resolution fills it in for every body that decodes, while ``from_avro`` in PERMISSIVE mode
gives a body that does not a row of nulls (for a record, not a null struct), this field too.
Null here is Spark's own signal, where a row of nulls alone could be a row of NULL columns."""


_Built = TypeVar("_Built")

_BUILT: dict[tuple[Hashable, ...], Any] = {}
"""What `built` made, kept for the process: a Column is an expression, not data, so the one
built for a topic's schemas serves each of its micro-batches; building them again cost ~1,000
calls into the JVM per batch (docs/speed.md)."""


def built(key: tuple[Hashable, ...], build: Callable[[], _Built]) -> _Built:
    """What `build` makes for `key` (which names everything it depends on), made once per JVM
    (the driver's gateway): Columns for a schema, a table's columns derived from them."""
    key = (id(SparkContext._gateway), *key)
    found = _BUILT.get(key)
    if found is None:
        found = _BUILT[key] = build()
    return found  # type: ignore[no-any-return]


def _subject_key(subject: SubjectVersions | None) -> Hashable:
    """What the columns built for `subject` depend on: its name, its reader and its writer
    ids (an id is one schema text for good)."""
    if subject is None:
        return None
    return (subject.subject, subject.latest, tuple(sorted(subject.by_id)),
            tuple(sorted(subject.glue_ids.items())))


BOOKKEEPING = ("_op", "_partition", "_offset", "_timestamp")
"""The columns `decode` adds to the value's: the change kind and where it was in Kafka."""


def header_id(header: bytes | bytearray | None, framing: Framing = Framing.CONFLUENT
              ) -> WriterId | None:
    """What a frame header (`with_frames`' ``_{part}_header``) names its writer by: the schema
    id of a 5-byte Confluent header, or with `framing` GLUE the schema version UUID of an
    18-byte Glue header (whatever its compression byte); None when it is not one (short,
    wrong first byte, absent)."""
    if header is None or len(header) != framing.header_size:
        return None
    if framing is Framing.GLUE:
        if header[0] != GLUE_HEADER_VERSION:
            return None
        return uuid.UUID(bytes=bytes(header[2:]))
    if header[0] != MAGIC_BYTE:
        return None
    return int.from_bytes(header[1:], "big")


def with_frames(df: DataFrame, framing: Framing) -> DataFrame:
    """Add ``_{part}_header`` (the first 5 bytes, or a Glue frame's 18) and ``_{part}_body``
    for key and value.

    Rows are matched to writer schemas by comparing the header with each known writer's
    header (a binary equality), so the id is only spelt out for the error message of a row
    that matches none."""
    return df.withColumns(built(("with_frames", framing), lambda: _frames(framing.header_size)))


def _frames(size: int) -> dict[str, Column]:
    """`with_frames`' columns for a header of `size` bytes."""
    frames = {}
    for part in ("key", "value"):
        frames[f"_{part}_header"] = F.substring(F.col(part), 1, size)
        frames[f"_{part}_body"] = F.expr(
            f"substring({part}, {size + 1}, length({part}) - {size})")
    return frames


def _header(subject: SubjectVersions, schema_id: int) -> Column:
    return F.lit(bytearray(subject.header(schema_id)))


def _part_problem(part: str, subject: SubjectVersions | None) -> Column:
    raw, header = F.col(part), F.col(f"_{part}_header")
    magic = F.substring(raw, 1, 1)
    schema_id = F.conv(F.hex(F.substring(raw, 2, 4)), 16, 10)
    known = [_header(subject, i) for i in subject.by_id] if subject else []
    checks = F.when(raw.isNull(), F.lit(None))
    if known:
        checks = checks.when(header.isin(known), F.lit(None))
    return checks.when(
        F.length(raw) < HEADER_SIZE,
        F.concat(F.lit(f"{part}: shorter than the {HEADER_SIZE}-byte header ("),
                 F.length(raw).cast("string"), F.lit(" bytes)"))).when(
        magic != F.lit(bytearray([MAGIC_BYTE])),
        F.concat(F.lit(f"{part}: wrong magic byte 0x"), F.hex(magic), F.lit(" at offset 0"))
    ).otherwise(F.concat(
        F.lit(f"{part}: unknown schema id "), schema_id,
        F.lit(f" (not a version of {subject.subject})" if subject
              else f" (the topic has no {part} schema)")))


def _glue_part_problem(part: str, subject: SubjectVersions | None) -> Column:
    """`_part_problem` for Glue frames: too short, wrong first byte, compressed (or an unknown
    compression byte), or a schema version that is not one of the subject's."""
    raw, header = F.col(part), F.col(f"_{part}_header")
    first, compression = F.substring(raw, 1, 1), F.substring(raw, 2, 1)
    hexed = F.lower(F.hex(F.substring(raw, 3, 16)))
    version = F.concat_ws("-", *[F.substring(hexed, start, length) for start, length in
                                 ((1, 8), (9, 4), (13, 4), (17, 4), (21, 12))])
    known = [_header(subject, i) for i in subject.by_id] if subject else []
    checks = F.when(raw.isNull(), F.lit(None))
    if known:
        checks = checks.when(header.isin(known), F.lit(None))
    return checks.when(  # the first byte first: a short Confluent frame is named as one
        (F.length(raw) > 0) & (first != F.lit(bytearray([GLUE_HEADER_VERSION]))),
        F.concat(F.lit(f"{part}: wrong first byte 0x"), F.hex(first),
                 F.lit(f" at offset 0, expected 0x{GLUE_HEADER_VERSION:02x} (an AWS Glue "
                       f"frame)"))).when(
        F.length(raw) < GLUE_HEADER_SIZE,
        F.concat(F.lit(f"{part}: shorter than the {GLUE_HEADER_SIZE}-byte AWS Glue header ("),
                 F.length(raw).cast("string"), F.lit(" bytes)"))).when(
        compression == F.lit(bytearray([GLUE_ZLIB])), F.lit(f"{part}: {ZLIB_GLUE_BODY}")).when(
        compression != F.lit(bytearray([GLUE_UNCOMPRESSED])),
        F.concat(F.lit(f"{part}: unknown AWS Glue compression byte 0x"), F.hex(compression),
                 F.lit(" at offset 1"))
    ).otherwise(F.concat(
        F.lit(f"{part}: unknown AWS Glue schema version "), version,
        F.lit(f" (not a version of {subject.subject})" if subject
              else f" (the topic has no {part} schema)")))


def frame_problem(schemas: TopicVersions) -> Column:
    """Why a framed row cannot be decoded (null when it can): first byte, header, unknown id
    or Glue version, a compressed Glue body."""
    problem = _glue_part_problem if schemas.framing is Framing.GLUE else _part_problem
    return built(("frame_problem", schemas.framing, _subject_key(schemas.key),
                  _subject_key(schemas.value)),
                 lambda: F.coalesce(problem("key", schemas.key),
                                    problem("value", schemas.value)))


def _stop(reason: Column) -> Column:
    """Raise Spark's ``USER_RAISED_EXCEPTION`` naming the row's partition and offset (the
    error `spark_jobs.decoding.bad_messages` turns into the job's one line)."""
    return F.raise_error(F.concat(F.lit("message at partition "),
                                  F.col("partition").cast("string"), F.lit(" offset "),
                                  F.col("offset").cast("string"), F.lit(": "), reason))


def fail_on_problem() -> Column:
    """A filter that raises (in the same pass that decodes) on the first row with a frame
    problem, naming its partition and offset."""
    return built(("fail_on_problem",), lambda: F.when(
        F.col("_problem").isNotNull(), _stop(F.col("_problem"))).isNull())


def _reader(subject: SubjectVersions) -> str:
    """The latest schema (the reader) as Spark reads it, with `DECODED` appended."""
    schema = json.loads(for_spark(subject.latest))
    schema["fields"] = [*schema["fields"],
                        {"name": DECODED, "type": "boolean", "default": True}]
    return json.dumps(schema)


def _decoded(part: str, subject: SubjectVersions) -> Column:
    """`part`'s record, decoded with its writer schema into the latest (``from_avro`` in
    PERMISSIVE mode: a body that does not decode gives a row of nulls, `DECODED` included)."""
    options = {"avroSchema": _reader(subject), "mode": "PERMISSIVE"}
    body, header = F.col(f"_{part}_body"), F.col(f"_{part}_header")
    expr = None
    for writer_id, writer in subject.by_id.items():  # each id's rows with its writer schema
        branch = from_avro(body, for_spark(writer), options)
        match = header == _header(subject, writer_id)
        expr = F.when(match, branch) if expr is None else expr.when(match, branch)
    assert expr is not None
    return F.when(F.col(part).isNotNull(), expr)


def decode(df: DataFrame, schemas: TopicVersions, *, mode: Mode) -> DataFrame:
    """Typed rows: the value's columns (key columns filled from the key for tombstones),
    ``_op`` (upsert/delete), ``_partition``, ``_offset``, ``_timestamp``, and
    ``_undecoded`` (a body that does not decode with its writer schema: its columns are null).

    Each body is decoded once. In failfast mode ``_op`` of a message whose body does not
    decode is a stop naming it (the change kind of such a message is unknown): every job
    reads ``_op``, so the check runs in the same pass as the write.
    """
    value, key, selected = built(
        ("decode", _subject_key(schemas.key), _subject_key(schemas.value), mode),
        lambda: _decoding(schemas, mode=mode))
    df = df.withColumn("_v", value)
    if key is not None:
        df = df.withColumn("_k", key)
    return df.select(*selected)


def _decoding(schemas: TopicVersions, *, mode: Mode
              ) -> tuple[Column, Column | None, list[Column]]:
    """`decode`'s columns: the decoded value (``_v``), the decoded key of a tombstone
    (``_k``; None without a key schema), and the columns selected from them."""
    value = _decoded("value", schemas.value)
    undecoded = F.col("value").isNotNull() & F.col(f"_v.{DECODED}").isNull()
    key: Column | None = None
    key_fields: list[str] = []
    if schemas.key is not None:  # key columns are in the value: decode keys of tombstones only
        key = F.when(F.col("value").isNull(), _decoded("key", schemas.key))
        undecoded = undecoded | (F.col("value").isNull() & F.col("key").isNotNull()
                                 & F.col(f"_k.{DECODED}").isNull())
        key_fields = schemas.key.field_names()
    columns = [F.coalesce(F.col(f"_v.`{n}`"), F.col(f"_k.`{n}`")).alias(n) if n in key_fields
               else F.col(f"_v.`{n}`").alias(n) for n in schemas.value.field_names()]
    op = F.when(F.col("value").isNull(), F.lit("delete")).otherwise(F.lit("upsert"))
    if mode is Mode.FAILFAST:
        op = F.when(undecoded, _stop(F.lit(UNDECODED))).otherwise(op)
    return value, key, [
        *columns, op.alias("_op"),
        F.col("partition").alias("_partition"), F.col("offset").alias("_offset"),
        F.col("timestamp").alias("_timestamp"), undecoded.alias("_undecoded"),
        F.col("key"), F.col("value")]


def dead_letters(df: DataFrame, reason: Column, *, partition: str = "partition",
                 offset: str = "offset") -> DataFrame:
    """The raw messages that cannot be decoded: key, value, partition, offset, reason."""
    return df.select("key", "value", F.col(partition).alias("partition"),
                     F.col(offset).alias("offset"), reason.alias("reason"))


COMMIT_TS = "_tidb_commit_ts"
"""TiCDC's commit ts field (``enable-tidb-extension``): a value schema that has it is applied in
TiDB's commit order (docs/streaming.md, "Commit order")."""

BOUND = "_delete_bound"
"""The highest commit ts of a key's upserts before its last delete in the batch (`in_commit_order`;
a tombstone carries no commit ts: the delete is newer than every change of the key before it)."""

HAS_DELETE = "_has_delete"
"""Whether the batch deletes the key (`in_commit_order`)."""

PHYSICAL_TIME = "_tidb_commit_physical_time"
"""TiCDC's field with the commit's physical time, ``commit_ts >> PHYSICAL_SHIFT`` ms."""

DELETED = "_deleted"
"""The column of a ``--deletes soft`` table: true for a row TiDB deleted."""

TOMBSTONE = "_tombstone"
"""The commit ts of a key's tombstone, joined to a MERGE's source (null: none)."""


def ordered_by_commit(schemas: TopicVersions) -> bool:
    """Whether `schemas`' changes are ordered by commit ts: a keyed topic whose latest value
    version carries `COMMIT_TS` (else by Kafka offset)."""
    return schemas.key is not None and COMMIT_TS in schemas.value.field_names()


BOUND_ROW = "_bound_row"
"""`in_commit_order` with `bound_row`: the values of the upsert `BOUND` comes from."""


def in_commit_order(df: DataFrame, key_columns: list[str], *, bound_row: list[str] | None = None
                    ) -> DataFrame:
    """One row per key that says what the batch did to it in TiDB's commit order, whatever
    order TiCDC sent the changes in (docs/streaming.md, "Commit order"):

    - its newest upsert after the key's last delete (in Kafka order) by `COMMIT_TS`, ``_op``
      ``upsert``; or, when no upsert follows the last delete, a row with ``_op`` ``delete``;
    - `HAS_DELETE`, and `BOUND`: the commit ts the last delete is known to be newer than;
      with `bound_row` (column names), `BOUND_ROW`: those columns of the upsert it is from.

    Whether the upsert survives the delete depends on the row in the table as well (a MERGE's
    condition): it does when its commit ts is no older than the bound, the row the delete
    removed and the key's tombstone."""
    key = Window.partitionBy(*key_columns)  # every step on one sort by key
    position = F.struct("_partition", "_offset")  # arrival (TiCDC keeps a key in a partition)
    upsert = F.col("_op") == "upsert"
    df = df.withColumn("_last_delete", F.max(F.when(~upsert, position)).over(key))
    after = upsert & (F.col("_last_delete").isNull() | (position > F.col("_last_delete")))
    before = F.when(upsert & ~after, F.col(COMMIT_TS))
    # The row to keep: the newest upsert after the last delete, else the newest before it,
    # else the last delete.
    df = df.withColumn("_rank", F.struct(after.alias("after"), F.col(COMMIT_TS).alias("ts"),
                                         position.alias("at")))
    over_key = {"_best": F.max("_rank").over(key), BOUND: F.max(before).over(key)}
    if bound_row is not None:
        over_key[BOUND_ROW] = F.max_by(F.struct(*[F.col(f"`{c}`") for c in bound_row]),
                                       before).over(key)
    df = df.withColumns(over_key)  # one pass over each key's rows
    return (df.where(F.col("_rank").eqNullSafe(F.col("_best")))
            .withColumn("_op", F.when(F.col("_rank.after"), F.lit("upsert")).otherwise(
                F.lit("delete")))
            .withColumn(HAS_DELETE, F.col("_last_delete").isNotNull())
            .drop("_last_delete", "_rank", "_best"))


def last_change_per_key(df: DataFrame, key_columns: list[str]) -> DataFrame:
    """The last change per key, deletes included (Kafka order: partition, then offset; TiCDC
    keeps a key in one partition)."""
    window = Window.partitionBy(*key_columns).orderBy(F.col("_partition").desc(),
                                                      F.col("_offset").desc())
    return df.withColumn("_rank", F.row_number().over(window)).where("_rank = 1").drop("_rank")


def latest_state(df: DataFrame, key_columns: list[str], *, by_commit: bool = False
                 ) -> DataFrame:
    """The latest row per key with deleted keys removed and the bookkeeping columns dropped:
    in Kafka order, or with `by_commit` in commit order (`in_commit_order`: the newest upsert
    after the last delete, when it is no older than what the delete removed)."""
    if not by_commit:
        return last_change_per_key(df, key_columns).where(F.col("_op") == "upsert").drop(
            *BOOKKEEPING)
    survives = (F.col("_op") == "upsert") & (
        F.col(COMMIT_TS) >= F.coalesce(F.col(BOUND), F.lit(-1)))
    return in_commit_order(df, key_columns).where(survives).drop(*BOOKKEEPING, BOUND,
                                                                 HAS_DELETE)
