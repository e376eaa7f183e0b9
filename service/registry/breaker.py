"""`Breaker`: makes calls to a registry known to be unreachable fail at once, and probes it.

Written here rather than taken from PyPI: ``aiobreaker`` has had no release since 2021, and
``purgatory`` lets every call through once half-open and reads the wall clock directly, while
this one needs exactly one probe and an injectable clock (unit tests).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from datetime import UTC, datetime

from service.registry.errors import RegistryUnavailableError

__all__ = ["Breaker"]

log = logging.getLogger("flatavro.registry")


class Breaker:
    """A circuit breaker over whether the registry can be reached (not over what it answers).

    Closed, calls go out and consecutive unreachable attempts are counted; `failures` of them
    open it: every call then fails at once with `RegistryUnavailableError` for `seconds`.
    Then it is half-open: exactly one call goes out as the probe while the others still fail
    at once; an answer closes it, another unreachable attempt opens it again. It never awaits,
    so one event loop needs no lock.
    """

    def __init__(self, url: str, *, failures: int = 3, seconds: float = 5.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._url, self._threshold, self._seconds, self._clock = url, failures, seconds, clock
        self._failures = 0
        self._reason = ""
        self._since: float | None = None  # first unreachable attempt of the current streak
        self._until: float | None = None  # None while closed; else when the probe may go
        self._probing = False

    @property
    def state(self) -> str:
        """``closed``, ``open`` or ``half_open`` (the probe may go out, or is out)."""
        if self._until is None:
            return "closed"
        return "half_open" if self._probing or self._clock() >= self._until else "open"

    def admit(self) -> bool:
        """Let one attempt go out; True when it is the half-open breaker's probe.

        Raises:
            RegistryUnavailableError: the breaker is open, or another call is the probe.
        """
        if self._until is None:
            return False
        if self._probing or self._clock() < self._until:
            raise self.error()
        self._probing = True
        return True

    def succeeded(self) -> None:
        """The registry answered (whatever it said): close."""
        if self._until is not None:
            log.info("registry reachable again", extra={"registry": self._url})
        self._failures, self._since, self._until, self._probing = 0, None, None, False

    def failed(self, reason: str) -> None:
        """An attempt could not reach the registry; `reason` says how (``connection refused``)."""
        now = self._clock()
        self._failures += 1
        self._reason = reason
        if self._since is None:
            self._since = now
        if self._probing or (self._until is None and self._failures >= self._threshold):
            self._until, self._probing = now + self._seconds, False
            log.warning("registry unreachable: calls fail at once until the next probe",
                        extra={"registry": self._url, "reason": reason,
                               "probe_in_seconds": self._seconds})

    def abandoned(self) -> None:
        """The probe was cancelled before it learnt anything: the next call probes instead."""
        self._probing = False

    def error(self) -> RegistryUnavailableError:
        """What a refused call raises: since when the registry is unreachable, until when calls
        fail at once; `retry_after` is the seconds until the next probe (at least 1)."""
        now = self._clock()
        to_wall = time.time() - now  # one reading: `since` and `until` keep their distance
        since = _wall(self._since if self._since is not None else now, to_wall)
        until = self._until if self._until is not None else now
        when = (f"calls fail at once until {_wall(until, to_wall)}, when one call probes it "
                "again" if until > now else "one call is probing it now")
        return RegistryUnavailableError(
            f"schema registry at {self._url} is unreachable ({self._reason}) since {since}; "
            f"{when}", retry_after=max(1, math.ceil(until - now)), url=self._url,
            reason=self._reason, breaker=self.state, unreachable_since=since,
            open_until=_wall(until, to_wall))


def _wall(moment: float, to_wall: float) -> str:
    """A clock reading as UTC wall time (`to_wall` seconds later), ISO 8601 to the millisecond."""
    return datetime.fromtimestamp(moment + to_wall, UTC).isoformat(timespec="milliseconds") \
        .replace("+00:00", "Z")
