"""The bridge's extra librdkafka settings: the shared client settings
(`service.kafka_client.settings`), less those the bridge sets itself."""

from __future__ import annotations

from collections.abc import Mapping

from service.kafka_client.errors import KafkaConfigError
from service.kafka_client.settings import client_settings

__all__ = ["kafka_settings"]

# Set by the bridge itself: a user value would break exactly-once.
# The partitioner is fixed so that a key lands where Java clients (and an avro changefeed
# through them) put it.
_RESERVED = frozenset({"enable.auto.commit", "isolation.level", "transactional.id",
                       "group.id", "enable.idempotence", "bootstrap.servers", "partitioner",
                       "enable.partition.eof"})


def kafka_settings(environ: Mapping[str, str], path: str | None) -> dict[str, str]:
    """The extra client settings (variables, then the file over them).

    Raises:
        KafkaConfigError: an unreadable file, a line that is not key=value, or a setting the
            bridge owns (naming it).
    """
    settings = client_settings(environ, path)
    for name in settings:
        if name in _RESERVED:
            raise KafkaConfigError(f"Kafka setting {name} is set by the bridge (exactly-once "
                                   f"depends on it); remove it", setting=name)
    return settings
