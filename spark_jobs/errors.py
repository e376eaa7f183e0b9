"""The job's one error type: a one-line message and a non-zero exit, never a stack trace."""

from __future__ import annotations

from service.core.errors import ServiceError

__all__ = ["JobError"]


class JobError(ServiceError):
    """The job cannot run or must stop (bad input, unreachable service, bad frames)."""

    code = "job_failed"
