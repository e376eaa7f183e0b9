"""`rewind`: after an aborted transaction, put the consumer back at the group's committed
offsets, so the messages of the aborted batch are read and converted again."""

from __future__ import annotations

import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition

from service.bridge.errors import BridgeError

__all__ = ["rewind"]


def rewind(consumer: Consumer, *, timeout: float) -> list[int]:
    """Seek every assigned partition to its committed offset (the beginning without one: the
    bridge reads a new source from its start); returns the partitions rewound. The group
    coordinator may be moving (a broker restarting): asked again for up to `timeout` seconds.

    Raises:
        BridgeError: the committed offsets did not arrive within `timeout`, or a seek failed.
    """
    assignment = consumer.assignment()
    if not assignment:
        return []
    deadline = time.monotonic() + timeout
    while True:
        try:
            committed = consumer.committed(assignment, max(1.0, deadline - time.monotonic()))
            break
        except KafkaException as exc:
            if time.monotonic() >= deadline:
                raise BridgeError(f"cannot read the committed offsets to convert an aborted "
                                  f"batch again: {exc.args[0].str()} (after {timeout:g} s of "
                                  f"--broker-timeout); restart the bridge to resume") from exc
            time.sleep(0.5)
    try:
        for tp in committed:
            offset = tp.offset if tp.offset >= 0 else OFFSET_BEGINNING
            consumer.seek(TopicPartition(tp.topic, tp.partition, offset))
    except KafkaException as exc:
        raise BridgeError(f"cannot rewind the source to its committed offsets after an "
                          f"aborted transaction: {exc.args[0].str()}; restart the bridge "
                          f"to resume") from exc
    return [tp.partition for tp in assignment]
