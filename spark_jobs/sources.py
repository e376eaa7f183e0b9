"""Reading the topic (Kafka batch or a Parquet dump) and writing Parquet whole or not at all."""

from __future__ import annotations

import uuid
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from spark_jobs import object_store
from spark_jobs.config import JobConfig
from spark_jobs.errors import JobError
from spark_jobs.transforms import KAFKA_COLUMNS

__all__ = ["read_source", "require_absent", "write_parquet", "write_output",
           "path_exists", "qualified", "read_text", "write_text"]

_KAFKA_TIMEOUT_MS = "20000"


def read_source(spark: SparkSession, config: JobConfig) -> DataFrame:
    """The raw messages with the Kafka source's columns.

    Raises:
        JobError: a dump without the ``value`` column (or another Kafka column).
    """
    if config.input is not None:
        df = spark.read.parquet(config.input)
        missing = [c for c in KAFKA_COLUMNS if c not in df.columns and c != "topic"]
        if missing:
            raise JobError(f"the dump {config.input} lacks column(s) {', '.join(missing)}; "
                           f"it needs the Kafka source's {', '.join(KAFKA_COLUMNS)}")
        return df
    return (spark.read.format("kafka")
            .option("kafka.bootstrap.servers", str(config.bootstrap_servers))
            .option("subscribe", config.topic)
            .option("startingOffsets", config.starting_offsets)
            .option("endingOffsets", config.ending_offsets)
            .option("kafka.request.timeout.ms", _KAFKA_TIMEOUT_MS)
            .option("kafka.default.api.timeout.ms", _KAFKA_TIMEOUT_MS)
            .options(**config.kafka.spark_options())
            .load())


def _fs_and_path(spark: SparkSession, path: str) -> tuple[Any, Any, Any]:
    """The Hadoop file system of `path`, the Hadoop path and the JVM view (py4j objects)."""
    context = spark.sparkContext
    jvm, jsc = context._jvm, context._jsc
    if jvm is None or jsc is None:
        raise JobError("the Spark session is stopped")
    hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
    return hadoop_path.getFileSystem(jsc.hadoopConfiguration()), hadoop_path, jvm


def path_exists(spark: SparkSession, path: str, *, empty_is_absent: bool = False) -> bool:
    """Whether `path` exists (any Hadoop file system); an empty folder counts as absent when
    `empty_is_absent`."""
    fs, hadoop_path, _ = _fs_and_path(spark, path)
    if not fs.exists(hadoop_path):
        return False
    return not (empty_is_absent and fs.getFileStatus(hadoop_path).isDirectory()
                and len(fs.listStatus(hadoop_path)) == 0)


def qualified(spark: SparkSession, path: str) -> str:
    """`path` with its file system's scheme, absolute (``file:/tmp/t`` for ``/tmp/t``)."""
    fs, hadoop_path, _ = _fs_and_path(spark, path)
    return str(fs.makeQualified(hadoop_path).toString())


def read_text(spark: SparkSession, path: str) -> str | None:
    """A small UTF-8 file's text (None when it does not exist)."""
    fs, hadoop_path, jvm = _fs_and_path(spark, path)
    if not fs.exists(hadoop_path):
        return None
    stream = fs.open(hadoop_path)
    try:
        return str(jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8"))
    finally:
        stream.close()


def write_text(spark: SparkSession, path: str, *, text: str) -> None:
    """Write a small UTF-8 file (replacing it)."""
    fs, hadoop_path, _ = _fs_and_path(spark, path)
    stream = fs.create(hadoop_path, True)
    try:
        stream.write(bytearray(text.encode()))
    finally:
        stream.close()


def require_absent(spark: SparkSession, path: str, *, overwrite: bool) -> None:
    """Refuse an existing output unless `overwrite`.

    Raises:
        JobError: the path exists.
    """
    fs, hadoop_path, _ = _fs_and_path(spark, path)
    if fs.exists(hadoop_path) and not overwrite:
        raise JobError(f"the output {path} exists; pass --overwrite to replace it")


def write_parquet(spark: SparkSession, df: DataFrame, *, path: str) -> None:
    """Write `df` as Parquet (see `write_output`)."""
    write_output(spark, df, path=path, data_format="parquet")


def write_output(spark: SparkSession, df: DataFrame, *, path: str, data_format: str) -> None:
    """Write `df` in `data_format` (``parquet`` or ``delta``) to a temporary sibling, then move
    it into place: a failed job leaves no output that looks complete. (A Delta table's log
    names its files relative to the table's folder, so the folder can be moved whole.) On
    object storage (``s3a://``) a move is a copy of every object, and not atomic: the output
    is written in place and deleted if the write fails."""
    fs, target, jvm = _fs_and_path(spark, path)
    if path.startswith(object_store.SCHEME):
        if fs.exists(target):
            fs.delete(target, True)
        try:
            df.write.format(data_format).mode("error").save(path)
        except BaseException:
            fs.delete(target, True)
            raise
        return
    staging = f"{path.rstrip('/')}.tmp-{uuid.uuid4().hex}"
    try:
        df.write.format(data_format).mode("error").save(staging)
    except BaseException:
        fs.delete(jvm.org.apache.hadoop.fs.Path(staging), True)
        raise
    if fs.exists(target):
        fs.delete(target, True)
    if not fs.rename(jvm.org.apache.hadoop.fs.Path(staging), target):
        raise JobError(f"cannot move {staging} to {path}")
