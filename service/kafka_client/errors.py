"""The Kafka client layer's error."""

from __future__ import annotations

from service.core.errors import InvalidInputError

__all__ = ["KafkaConfigError"]


class KafkaConfigError(InvalidInputError):
    """A Kafka client setting (a --kafka-config line, a FLATAVRO_KAFKA_* variable) is bad."""

    code = "invalid_kafka_config"
