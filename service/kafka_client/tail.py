"""The last messages of a topic, read with librdkafka (confluent-kafka) without a consumer
group: every partition from its high watermark less the count, newest last. For the console's
messages page; blocking (run it in a worker thread)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from service.kafka_client.errors import KafkaReadError, TopicNotFoundError

__all__ = ["RawMessage", "last_messages"]


@dataclass(frozen=True)
class RawMessage:
    """One Kafka message as it is on the topic."""

    partition: int
    offset: int
    timestamp_ms: int
    key: bytes | None
    value: bytes | None


def last_messages(settings: Mapping[str, str], topic: str, *, count: int,
                  timeout: float = 10.0) -> list[RawMessage]:
    """The newest `count` messages of `topic` over all its partitions (by timestamp, then
    partition and offset), read committed.

    Raises:
        TopicNotFoundError: the broker has no such topic.
        KafkaReadError: the broker does not answer within `timeout`, or refuses the read.
    """
    consumer = Consumer({**settings, "group.id": "flatavro-console", "enable.auto.commit": False,
                         "isolation.level": "read_committed", "enable.partition.eof": True,
                         "fetch.wait.max.ms": 10})
    try:
        return _read(consumer, topic, count=count, timeout=timeout)
    except KafkaException as exc:
        raise KafkaReadError(f"reading topic {topic} failed: {exc.args[0]}",
                             topic=topic) from exc
    finally:
        consumer.close()


def _read(consumer: Consumer, topic: str, *, count: int, timeout: float) -> list[RawMessage]:
    deadline = time.monotonic() + timeout
    ends = _ends(consumer, topic, count=count, timeout=timeout)
    found: list[RawMessage] = []
    while ends and time.monotonic() < deadline:
        message = consumer.poll(0.2)
        if message is None:
            continue
        error = message.error()
        if error is not None and error.code() != KafkaError._PARTITION_EOF:
            raise KafkaException(error)
        partition, offset = message.partition() or 0, message.offset() or 0
        if error is None:
            found.append(RawMessage(partition=partition, offset=offset,
                                    timestamp_ms=message.timestamp()[1], key=message.key(),
                                    value=message.value()))
        if error is not None or offset + 1 >= ends.get(partition, 0):
            ends.pop(partition, None)
    if ends:
        raise KafkaReadError(f"reading topic {topic} did not reach the end of partition(s) "
                             f"{', '.join(map(str, sorted(ends)))} within {timeout:g} s",
                             topic=topic)
    found.sort(key=lambda m: (m.timestamp_ms, m.partition, m.offset))
    return found[-count:]


def _ends(consumer: Consumer, topic: str, *, count: int, timeout: float) -> dict[int, int]:
    """Each non-empty partition's high watermark, the consumer assigned `count` before it."""
    metadata = consumer.list_topics(topic, timeout=timeout).topics.get(topic)
    if metadata is None or metadata.error is not None or not metadata.partitions:
        raise TopicNotFoundError(f"the broker has no topic {topic}", topic=topic)
    starts, ends = [], {}
    for partition in sorted(metadata.partitions):
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition),
                                                   timeout=timeout)
        if high > low:
            starts.append(TopicPartition(topic, partition, max(low, high - count)))
            ends[partition] = high
    if starts:
        consumer.assign(starts)
    return ends
