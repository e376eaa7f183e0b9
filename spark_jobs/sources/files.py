"""File operations on two back ends (the stream's start-up checks, the bulk read's output):
Hadoop's file systems through a Spark session (any scheme: ``file:``, ``s3a://`` ...), and
plain Python for local paths, so the checks of local paths run before the JVM starts. Nothing
here imports pyspark."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

from spark_jobs.errors import JobError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["Files", "HadoopFiles", "LocalFiles", "local_files", "same_location", "hadoop_fs",
           "path_exists", "qualified", "read_text", "write_text"]


def hadoop_fs(spark: SparkSession, path: str) -> tuple[Any, Any, Any]:
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
    fs, hadoop_path, _ = hadoop_fs(spark, path)
    if not fs.exists(hadoop_path):
        return False
    return not (empty_is_absent and fs.getFileStatus(hadoop_path).isDirectory()
                and len(fs.listStatus(hadoop_path)) == 0)


def qualified(spark: SparkSession, path: str) -> str:
    """`path` with its file system's scheme, absolute (``file:/tmp/t`` for ``/tmp/t``)."""
    fs, hadoop_path, _ = hadoop_fs(spark, path)
    return str(fs.makeQualified(hadoop_path).toString())


def read_text(spark: SparkSession, path: str) -> str | None:
    """A small UTF-8 file's text (None when it does not exist)."""
    fs, hadoop_path, jvm = hadoop_fs(spark, path)
    if not fs.exists(hadoop_path):
        return None
    stream = fs.open(hadoop_path)
    try:
        return str(jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8"))
    finally:
        stream.close()


def write_text(spark: SparkSession, path: str, *, text: str) -> None:
    """Write a small UTF-8 file (replacing it)."""
    fs, hadoop_path, _ = hadoop_fs(spark, path)
    stream = fs.create(hadoop_path, True)
    try:
        stream.write(bytearray(text.encode()))
    finally:
        stream.close()


class Files(Protocol):
    """Read, test and write small files."""

    def exists(self, path: str, *, empty_is_absent: bool = False) -> bool:
        """Whether `path` exists; an empty folder counts as absent when `empty_is_absent`."""

    def read_text(self, path: str) -> str | None:
        """A small UTF-8 file's text (None when it does not exist)."""

    def write_text(self, path: str, *, text: str) -> None:
        """Write a small UTF-8 file (replacing it)."""

    def qualified(self, path: str) -> str:
        """`path` absolute, with its file system's scheme (``file:/tmp/t`` for ``/tmp/t``)."""


class HadoopFiles:
    """`Files` on Hadoop's file systems, through `spark`'s JVM."""

    def __init__(self, spark: SparkSession) -> None:
        """Use `spark`'s Hadoop configuration."""
        self.spark = spark

    def exists(self, path: str, *, empty_is_absent: bool = False) -> bool:
        """Whether `path` exists (see `Files`)."""
        return path_exists(self.spark, path, empty_is_absent=empty_is_absent)

    def read_text(self, path: str) -> str | None:
        """The file's text or None (see `Files`)."""
        return read_text(self.spark, path)

    def write_text(self, path: str, *, text: str) -> None:
        """Write the file (see `Files`)."""
        write_text(self.spark, path, text=text)

    def qualified(self, path: str) -> str:
        """The qualified path (see `Files`)."""
        return qualified(self.spark, path)


class LocalFiles:
    """`Files` on the local disk, in plain Python (paths without a scheme, or ``file:``)."""

    def exists(self, path: str, *, empty_is_absent: bool = False) -> bool:
        """Whether `path` exists (see `Files`)."""
        local = Path(_local(path))
        if not local.exists():
            return False
        return not (empty_is_absent and local.is_dir() and not any(local.iterdir()))

    def read_text(self, path: str) -> str | None:
        """The file's text or None (see `Files`)."""
        local = Path(_local(path))
        return local.read_text(encoding="utf-8") if local.is_file() else None

    def write_text(self, path: str, *, text: str) -> None:
        """Write the file (see `Files`)."""
        Path(_local(path)).write_text(text, encoding="utf-8")

    def qualified(self, path: str) -> str:
        """The qualified path (see `Files`)."""
        return f"file:{os.path.abspath(_local(path))}"


def local_files(*paths: str | None) -> LocalFiles | None:
    """`LocalFiles` when every given path is on the local disk, else None."""
    given = [p for p in paths if p is not None]
    if not given or any(urlsplit(p).scheme not in ("", "file") for p in given):
        return None
    return LocalFiles()


def same_location(a: str, b: str) -> bool:
    """Whether two qualified paths name one place (``file:/t``, ``file:///t/`` and ``/t``
    are one; other schemes compare as given, trailing slashes aside)."""
    return _normal(a) == _normal(b)


def _local(path: str) -> str:
    parts = urlsplit(path)
    return parts.path if parts.scheme == "file" else path


def _normal(path: str) -> str:
    parts = urlsplit(path)
    if parts.scheme in ("", "file"):
        return os.path.normpath(os.path.abspath(parts.path if parts.scheme else path))
    return path.rstrip("/")
