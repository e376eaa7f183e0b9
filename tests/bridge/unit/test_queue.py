"""`PartitionQueues`: order per partition, holds, retries, expiry, revocation."""

from __future__ import annotations

from service.bridge.queue import PartitionQueues
from tests.bridge.unit.fakes import Clock, record


def test_messages_queue_per_partition_and_convert_partition_by_partition() -> None:
    queues = PartitionQueues(clock=Clock())
    dirty = queues.add([record(1, 10), record(0, 5), record(1, 11)])
    assert dirty == {0, 1} and queues.fresh == {0, 1}
    assert [(r.partition, r.offset) for r in queues.todo(dirty)] == [(0, 5), (1, 10), (1, 11)]
    assert queues.pending == 3 and queues.any()


def test_a_settled_partition_without_a_hold_empties() -> None:
    queues = PartitionQueues(clock=Clock())
    queues.add([record(0, 5), record(0, 6)])
    queues.settle(0, None)
    assert queues.todo({0}) == [] and queues.pending == 0 and not queues.any()
    assert queues.held_since == {} and queues.retry == set()


def test_a_held_partition_keeps_its_messages_and_is_retried_only_when_it_changes() -> None:
    clock = Clock(100.0)
    queues = PartitionQueues(clock=clock)
    queues.add([record(0, 5), record(0, 6), record(0, 7)])
    queues.settle(0, 6)  # offset 5 committed, 6 waits for its table schema
    assert [r.offset for r in queues.todo({0})] == [6, 7]
    assert queues.held_since == {0: (6, 100.0)} and queues.retry == {0}

    clock.now = 101.0
    assert queues.add([]) == {0}  # the retry is due in the next round
    queues.settle(0, 6)  # still held, nothing new came: not again
    assert queues.retry == set() and queues.held_since == {0: (6, 100.0)}

    assert queues.add([record(0, 8)]) == {0}  # a new message: maybe its BOOTSTRAP
    queues.settle(0, 6)
    assert queues.retry == {0} and queues.held_since == {0: (6, 100.0)}

    queues.settle(0, 7)  # 6 converted, 7 held from now on
    assert queues.held_since == {0: (7, 101.0)}
    assert [r.offset for r in queues.todo({0})] == [7, 8]


def test_a_partition_held_too_long_is_overdue_and_its_first_message_released() -> None:
    clock = Clock(100.0)
    queues = PartitionQueues(clock=clock)
    queues.add([record(0, 5), record(0, 6), record(1, 9)])
    queues.settle(0, 5)
    queues.settle(1, 9)
    clock.now = 102.0
    assert queues.overdue(3.0) == []
    clock.now = 103.0
    assert queues.overdue(3.0) == [(0, 5), (1, 9)]
    assert queues.release(0) == record(0, 5)
    assert 0 not in queues.held_since and [r.offset for r in queues.todo({0})] == [6]


def test_revoked_partitions_are_forgotten() -> None:
    queues = PartitionQueues(clock=Clock())
    queues.add([record(0, 5), record(1, 9)])
    queues.settle(0, 5)
    queues.drop([0])
    assert queues.todo({0, 1}) == [record(1, 9)]
    assert queues.held_since == {} and 0 not in queues.retry
