"""`Watchdog`: the bridge's own bound on every wait on librdkafka, on a stop after SIGTERM,
and the liveness answer of its metrics port.

librdkafka does not always honour the timeouts it is given (librdkafka#5456: the group
coordinator request of ``send_offsets_to_transaction`` never checks its timeout; #5511: it
waits for good on a coordinator that was decommissioned), so the bridge cannot trust them: a
thread here knows which Kafka call is in flight since when and ends the process (one line, exit
2) when one is still blocked ``grace`` seconds past ``--broker-timeout``. Kafka fences and
aborts the open transaction when the next copy with the same transactional id starts.
"""

from __future__ import annotations

import itertools
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

__all__ = ["GRACE", "Liveness", "Watchdog"]

GRACE = 5.0
"""Seconds a call may run past its own librdkafka timeout before the watchdog ends it."""


@dataclass(frozen=True, slots=True)
class Liveness:
    """The answer of the liveness endpoint: whether the main loop advanced in time."""

    alive: bool
    reason: str


class Watchdog:
    """Kafka calls in flight, the main loop's last turn, and a SIGTERM's deadline."""

    def __init__(self, broker_timeout: float, *, clock: Callable[[], float] = time.monotonic,
                 end: Callable[[int], object] = os._exit) -> None:
        """`end` ends the process with an exit code (``os._exit``: a blocked librdkafka call
        holds locks that a normal exit would wait on)."""
        self.bound, self.clock, self.end = broker_timeout, clock, end
        self.calls: dict[int, tuple[str, float]] = {}
        self.tokens = itertools.count()
        self.lock = threading.Lock()
        self.advanced_at = clock()
        self.stop_at: float | None = None

    @contextmanager
    def watch(self, name: str) -> Iterator[None]:
        """Mark the Kafka call `name` (``producer.commit_transaction``) in flight."""
        token = next(self.tokens)
        with self.lock:
            self.calls[token] = (name, self.clock())
        try:
            yield
        finally:
            with self.lock:
                del self.calls[token]

    def advanced(self) -> None:
        """The main loop finished one turn."""
        self.advanced_at = self.clock()

    def stopping(self) -> None:
        """SIGTERM/SIGINT arrived: the process ends within ``broker_timeout`` + 10 s."""
        if self.stop_at is None:
            self.stop_at = self.clock()

    def liveness(self) -> Liveness:
        """Alive unless the main loop has not advanced for ``broker_timeout`` seconds."""
        idle = self.clock() - self.advanced_at
        if idle < self.bound:
            return Liveness(alive=True, reason="the main loop advanced "
                                               f"{idle:.1f} s ago")
        with self.lock:
            calls = sorted(self.calls.values(), key=lambda call: call[1])
        waiting = f"; waiting on {calls[0][0]}" if calls else ""
        return Liveness(alive=False, reason=f"the main loop has not advanced for {idle:.0f} s "
                                            f"(--broker-timeout {self.bound:g} s){waiting}")

    def check(self) -> None:
        """End the process if a call is overdue (exit 2) or a stop takes too long (exit 0)."""
        now = self.clock()
        with self.lock:
            overdue = [(name, now - since) for name, since in self.calls.values()
                       if now - since >= self.bound + GRACE]
        if overdue:
            name, waited = overdue[0]
            self._end(f"flatavro: error [bridge_failed]: {name} did not return within "
                      f"--broker-timeout {self.bound:g} s (blocked {waited:.0f} s; "
                      f"librdkafka#5456); exiting: a restarted bridge with the same "
                      f"--instance-id aborts the open transaction and resumes after the last "
                      f"committed offsets", 2)
        elif self.stop_at is not None and now - self.stop_at >= self.bound + 10 - 1:
            self._end(f"bridge: stopping took longer than --broker-timeout {self.bound:g} s + "
                      f"10 s; exiting without waiting further (the open transaction, if any, "
                      f"is aborted by the broker or by the next copy)", 0)

    def start(self, every: float = 0.5) -> None:
        """Check every `every` seconds in a daemon thread."""
        def loop() -> None:
            while True:
                time.sleep(every)
                self.check()

        threading.Thread(target=loop, daemon=True, name="flatavro-watchdog").start()

    def _end(self, line: str, code: int) -> None:
        print(line, file=sys.stderr, flush=True)
        sys.stdout.flush()
        self.end(code)
