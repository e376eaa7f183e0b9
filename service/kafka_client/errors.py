"""The Kafka client layer's error."""

from __future__ import annotations

from service.core.errors import InvalidInputError, ServiceError

__all__ = ["KafkaConfigError", "KafkaReadError", "TopicNotFoundError"]


class KafkaConfigError(InvalidInputError):
    """A Kafka client setting (a --kafka-config line, a FLATAVRO_KAFKA_* variable) is bad."""

    code = "invalid_kafka_config"


class KafkaReadError(ServiceError):
    """The broker did not answer a read (in time), or refused it."""

    code = "kafka_read_failed"


class TopicNotFoundError(ServiceError):
    """The broker has no topic of that name."""

    code = "topic_not_found"
