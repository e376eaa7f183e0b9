"""Writing Parquet (or a Delta table) whole or not at all: the bulk read's output."""

from __future__ import annotations

import uuid

from pyspark.sql import DataFrame, SparkSession

from spark_jobs.errors import JobError
from spark_jobs.settings import object_store
from spark_jobs.sources.files import hadoop_fs

__all__ = ["remove", "require_absent", "write_output", "write_parquet"]


def require_absent(spark: SparkSession, path: str, *, overwrite: bool) -> None:
    """Refuse an existing output unless `overwrite`.

    Raises:
        JobError: the path exists.
    """
    fs, hadoop_path, _ = hadoop_fs(spark, path)
    if fs.exists(hadoop_path) and not overwrite:
        raise JobError(f"the output {path} exists; pass --overwrite to replace it")


def remove(spark: SparkSession, path: str) -> None:
    """Delete an output this run wrote (a later part of the job failed)."""
    fs, hadoop_path, _ = hadoop_fs(spark, path)
    fs.delete(hadoop_path, True)


def write_parquet(spark: SparkSession, df: DataFrame, *, path: str) -> None:
    """Write `df` as Parquet (see `write_output`)."""
    write_output(spark, df, path=path, data_format="parquet")


def write_output(spark: SparkSession, df: DataFrame, *, path: str, data_format: str) -> None:
    """Write `df` in `data_format` (``parquet`` or ``delta``) to a temporary sibling, then move
    it into place: a failed job leaves no output that looks complete. (A Delta table's log
    names its files relative to the table's folder, so the folder can be moved whole.) On
    object storage (``s3a://``) a move is a copy of every object, and not atomic: the output
    is written in place and deleted if the write fails."""
    fs, target, jvm = hadoop_fs(spark, path)
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
