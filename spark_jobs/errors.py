"""The job's one error type: a one-line message and a non-zero exit, never a stack trace."""

from __future__ import annotations

from service.core.errors import ServiceError

__all__ = ["JobError", "one_line"]


class JobError(ServiceError):
    """The job cannot run or must stop (bad input, unreachable service, bad frames)."""

    code = "job_failed"


def one_line(exc: BaseException) -> str:
    """The first line of an exception's text (a Spark/JVM error without its Java trace)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
