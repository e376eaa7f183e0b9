"""The job's one error type: a one-line message and a non-zero exit, never a stack trace."""

from __future__ import annotations

from service.core.errors import ServiceError

__all__ = ["JobError", "one_line", "not_a_delta_table", "not_a_dead_letter_table"]


class JobError(ServiceError):
    """The job cannot run or must stop (bad input, unreachable service, bad frames)."""

    code = "job_failed"


def one_line(exc: BaseException) -> str:
    """The first line of an exception's text (a Spark/JVM error without its Java trace)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def not_a_delta_table(path: str, *, topic: str) -> JobError:
    """The error for a table path that holds something else than a Delta table."""
    return JobError(f"{path} exists and is not a Delta table: give --table-path a new path "
                    f"or an existing Delta table of topic {topic}")


def not_a_dead_letter_table(path: str) -> JobError:
    """The error for a dead-letter path that holds something else than a Delta table."""
    return JobError(f"the dead-letter path {path} exists and is not a Delta table")
