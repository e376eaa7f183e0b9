"""The job's one error type: a one-line message and a non-zero exit, never a stack trace."""

from __future__ import annotations

from service.core.errors import ServiceError

__all__ = ["JobError", "one_line", "not_a_delta_table", "not_a_dead_letter_table"]


class JobError(ServiceError):
    """The job cannot run or must stop (bad input, unreachable service, bad frames)."""

    code = "job_failed"


_PY4J_PREAMBLE = "An error occurred while calling "


def one_line(exc: BaseException) -> str:
    """The first line of an exception's text (a Spark/JVM error without its Java trace: for a
    py4j error, the Java exception's line rather than py4j's "An error occurred while
    calling o123.execute.")."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    if len(lines) > 1 and lines[0].startswith(_PY4J_PREAMBLE):
        return lines[1].removeprefix(": ")
    return lines[0] if lines else type(exc).__name__


def not_a_delta_table(path: str, *, topic: str, iceberg: bool = False) -> JobError:
    """The error for a table path that holds something else than a Delta table (`iceberg`: an
    Iceberg table's ``metadata/``)."""
    if iceberg:
        return JobError(f"{path} holds an Iceberg table, not a Delta table: stream it with "
                        f"--format iceberg (tables in a catalog), or give --table-path a new "
                        f"path")
    return JobError(f"{path} exists and is not a Delta table: give --table-path a new path "
                    f"or an existing Delta table of topic {topic}")


def not_a_dead_letter_table(path: str) -> JobError:
    """The error for a dead-letter path that holds something else than a Delta table."""
    return JobError(f"the dead-letter path {path} exists and is not a Delta table")
