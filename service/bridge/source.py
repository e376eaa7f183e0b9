"""`SourceRecord`: one message read from the source topic, with where it was read."""

from __future__ import annotations

from dataclasses import dataclass

from confluent_kafka import Message

from service.bridge.errors import BridgeError

__all__ = ["SourceRecord"]


@dataclass(frozen=True, slots=True)
class SourceRecord:
    """A source message the consumer read without an error: its topic, partition, offset,
    key and value (bytes as TiCDC wrote them)."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None

    @classmethod
    def of(cls, message: Message) -> SourceRecord:
        """The record of a consumed message.

        Raises:
            BridgeError: the message lacks its topic, partition or offset (librdkafka sets
                them on every message it delivers without an error).
        """
        topic, partition, offset = message.topic(), message.partition(), message.offset()
        if topic is None or partition is None or offset is None:
            raise BridgeError(f"Kafka delivered a message without its place (topic {topic}, "
                              f"partition {partition}, offset {offset})")
        return cls(topic, partition, offset, message.key(), message.value())
