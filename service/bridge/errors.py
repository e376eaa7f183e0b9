"""The bridge's errors: bad configuration, a broker that cannot be used, a message that stops
the bridge."""

from __future__ import annotations

from service.core.errors import InvalidInputError, ServiceError

__all__ = ["BridgeError", "BridgeStopped", "KafkaConfigError", "TransactionAborted"]


class BridgeError(ServiceError):
    """The bridge cannot start or must stop (broker, topics, transactions)."""

    code = "bridge_failed"


class TransactionAborted(BridgeError):
    """A transaction failed and was aborted (a broker restarting under it, say): nothing of
    its batch is visible, and the bridge converts its messages again from the last committed
    offsets."""


class KafkaConfigError(InvalidInputError):
    """A Kafka client setting (a --kafka-config line, a FLATAVRO_KAFKA_* variable) is bad."""

    code = "invalid_kafka_config"


class BridgeStopped(BridgeError):
    """A message could not be converted and there is no dead-letter topic: the bridge
    committed everything before it and stops."""

    code = "unconvertible_message"
