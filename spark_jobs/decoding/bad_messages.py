"""Messages a job cannot decode, one path for both jobs (`bulk_read.run` and the stream's
micro-batch): `triaged` checks the frames, decodes, and either stops at the first bad message
(failfast) or sets the bad ones aside as dead letters (permissive).

A bad message is a frame of no known schema (wrong magic byte, too short, unknown id: the
reason is `transforms.frame_problem`'s) or a body that does not decode with its writer schema
(``from_avro`` in PERMISSIVE mode, its null row told apart by `transforms.DECODED`). Failfast
stops with Spark's own ``raise_error``, in the same pass that decodes and writes (no second
read of the topic); the driver recognises it by its error condition,
``USER_RAISED_EXCEPTION``, and takes the one line from the error's message parameter, never
from an exception's text.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from py4j.java_gateway import is_instance_of
from py4j.protocol import Py4JJavaError
from pyspark import SparkContext
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_jobs.decoding.schemas import TopicVersions
from spark_jobs.decoding.transforms import (
    UNDECODED,
    dead_letters,
    decode,
    fail_on_problem,
    frame_problem,
)
from spark_jobs.errors import JobError
from spark_jobs.settings.config import Mode

__all__ = ["Triage", "triaged"]

_PERMISSIVE_HINT = "--mode permissive --dead-letter PATH sets bad messages aside"

_RAISED = "USER_RAISED_EXCEPTION"
"""The condition of Spark's ``raise_error``: the failfast stop (the jobs raise no other)."""

_NOT_DECODED = ("_undecoded", "key", "value")


@dataclass(frozen=True, slots=True)
class Triage:
    """A read's messages sorted for writing.

    Attributes:
        rows: the decoded messages: the value's columns, ``_op``, ``_partition``,
            ``_offset``, ``_timestamp``.
        dead: permissive mode: the bad messages (key, value, partition, offset, reason);
            None in failfast mode, where the first one stops the write instead.
    """

    rows: DataFrame
    dead: DataFrame | None


@contextmanager
def triaged(framed: DataFrame, schemas: TopicVersions, *, mode: Mode,
            cache: bool = False) -> Iterator[Triage]:
    """Sort `framed` (`transforms.with_frames` of the raw messages) for writing; write inside
    the ``with`` block.

    In failfast mode a bad message raises, while the block writes, a `JobError` naming its
    partition and offset. In permissive mode `cache` keeps the decoded messages for the two
    writes (dead letters, then rows) instead of decoding them twice.

    Raises:
        JobError: failfast mode, a bad message (raised by the block's writes).
    """
    framed = framed.withColumn("_problem", frame_problem(schemas))
    if mode is Mode.FAILFAST:
        decoded = decode(framed.where(fail_on_problem()), schemas, mode=mode)
        with _failing_fast():
            yield Triage(decoded.drop(*_NOT_DECODED), None)
        return
    decoded = decode(framed.where("_problem IS NULL"), schemas, mode=mode)
    if cache:
        decoded = decoded.persist()
    try:
        dead = dead_letters(framed.where("_problem IS NOT NULL"), F.col("_problem")).unionByName(
            dead_letters(decoded.where("_undecoded"), F.lit(UNDECODED),
                         partition="_partition", offset="_offset"))
        yield Triage(decoded.where("NOT _undecoded").drop(*_NOT_DECODED), dead)
    finally:
        if cache:
            decoded.unpersist()


@contextmanager
def _failing_fast() -> Iterator[None]:
    """Turn the failfast stop raised inside Spark into the job's `JobError`."""
    try:
        yield
    except (PySparkException, Py4JJavaError) as exc:
        reason = _stop_reason(exc)
        if reason is None:
            raise
        raise JobError(f"{reason} ({_PERMISSIVE_HINT})") from exc


def _stop_reason(exc: BaseException) -> str | None:
    """The message of the failfast stop behind `exc` (a failed Spark action, the stop perhaps
    wrapped as the cause of a failed write), or None when `exc` is another failure."""
    for throwable in _spark_throwables(exc):
        if throwable.getCondition() == _RAISED:
            return str(dict(throwable.getMessageParameters()).get("errorMessage", ""))
    return None


def _spark_throwables(exc: BaseException) -> Iterator[Any]:
    """The errors with a condition (``SparkThrowable``) behind `exc`: pyspark's own, then each
    JVM exception down the cause chain of a `Py4JJavaError`."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, PySparkException) and current.getCondition():
            yield current
        if isinstance(current, Py4JJavaError):
            yield from _java_throwables(current.java_exception)
        current = current.__cause__ or current.__context__


def _java_throwables(throwable: Any) -> Iterator[Any]:
    gateway = SparkContext._gateway
    while throwable is not None and gateway is not None:
        if is_instance_of(gateway, throwable, "org.apache.spark.SparkThrowable"):
            yield throwable
        throwable = throwable.getCause()
