"""`PartitionQueues`: per source partition, the messages read but not yet committed, in
order; which partitions are held (their first message waits for its table schema) and since
when, and which to convert again.

A Simple protocol DML whose table version is unknown holds its partition: it and everything
after it stay queued (their offsets are not committed) and are converted again when the
partition brings new messages (TiCDC re-sends BOOTSTRAP), until ``pending_timeout``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from service.bridge.source import SourceRecord

__all__ = ["PartitionQueues"]


class PartitionQueues:
    """The uncommitted messages of each source partition this copy owns."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.queues: dict[int, list[SourceRecord]] = {}
        self.held_since: dict[int, tuple[int, float]] = {}  # partition -> (offset, since)
        self.retry: set[int] = set()  # held partitions to convert again next time
        self.fresh: set[int] = set()  # partitions with new messages in this poll

    @property
    def pending(self) -> int:
        """How many messages are queued (held, or read and not yet committed)."""
        return sum(len(q) for q in self.queues.values())

    def any(self) -> bool:
        """Whether any message is queued."""
        return any(self.queues.values())

    def add(self, fresh: list[SourceRecord]) -> set[int]:
        """Queue a poll's messages; returns the partitions to convert: theirs, and the held
        ones to try again."""
        dirty, self.retry = self.retry, set()
        for record in fresh:
            self.queues.setdefault(record.partition, []).append(record)
            dirty.add(record.partition)
        self.fresh = {r.partition for r in fresh}
        return dirty

    def todo(self, partitions: Iterable[int]) -> list[SourceRecord]:
        """The queued messages of `partitions`, partition by partition, in order."""
        return [r for p in sorted(partitions) for r in self.queues.get(p, [])]

    def overdue(self, timeout: float) -> list[tuple[int, int]]:
        """The held partitions (and their first offset) held for `timeout` seconds or more."""
        now = self.clock()
        return [(partition, offset) for partition, (offset, since) in self.held_since.items()
                if now - since >= timeout]

    def release(self, partition: int) -> SourceRecord:
        """Take the first message of a held partition out (it will not be converted), so
        the rest of the partition can be."""
        del self.held_since[partition]
        return self.queues[partition].pop(0)

    def settle(self, partition: int, held_from: int | None) -> None:
        """Drop a converted partition's committed messages: keep those from offset
        `held_from` (None: all went), hold the partition while its first message is held."""
        held = [] if held_from is None else [
            r for r in self.queues.get(partition, []) if r.offset >= held_from]
        self.queues[partition] = held
        if not held:
            self.held_since.pop(partition, None)
            return
        first = held[0].offset
        if partition in self.fresh or self.held_since.get(partition, (-1, 0.0))[0] != first:
            # A BOOTSTRAP/DDL behind the held message may have just taught the decoder
            # its schema: convert the partition once more (not again while unchanged).
            self.retry.add(partition)
        if self.held_since.get(partition, (-1, 0.0))[0] != first:
            self.held_since[partition] = (first, self.clock())

    def clear(self) -> None:
        """Forget every queued message (a new consumer reads them again from the committed
        offsets)."""
        self.drop(list(self.queues))

    def drop(self, partitions: Iterable[int]) -> None:
        """Forget partitions this copy no longer owns (the next owner reads them again from
        the committed offsets)."""
        for partition in partitions:
            self.queues.pop(partition, None)
            self.held_since.pop(partition, None)
            self.retry.discard(partition)
