"""The bridge's errors: bad configuration, a broker that cannot be used, a message that stops
the bridge."""

from __future__ import annotations

from service.core.errors import ServiceError
from service.kafka_client.errors import KafkaConfigError

__all__ = ["BridgeError", "BridgeStopped", "KafkaConfigError", "TransactionAborted"]


class BridgeError(ServiceError):
    """The bridge cannot start or must stop (broker, topics, transactions)."""

    code = "bridge_failed"


class TransactionAborted(BridgeError):
    """A transaction failed and was aborted (a broker restarting under it, say): nothing of
    its batch is visible, and the bridge converts its messages again from the last committed
    offsets."""


class BridgeStopped(BridgeError):
    """A message could not be converted and there is no dead-letter topic: the bridge
    committed everything before it and stops."""

    code = "unconvertible_message"
