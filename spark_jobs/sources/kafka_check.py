"""The driver's check of the broker before Spark reads from it: it answers, accepts the client
(TLS, SASL) and has the topic; otherwise one line naming the cause, within a bound.

Spark's Kafka source retries a refused login or a failed TLS handshake for as long as its
timeouts allow, and then reports a Java trace; librdkafka, with the user's own settings (the
same ones Spark gets mapped), reports the cause at once. Both jobs run this check before the
JVM starts, and again when a session is handed to them."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from service.kafka_client.tls_probe import tls_hint
from spark_jobs.errors import JobError
from spark_jobs.settings.kafka import KafkaSettings

if TYPE_CHECKING:
    from confluent_kafka import KafkaError

__all__ = ["check_broker", "check_topic", "CHECK_SECONDS"]

CHECK_SECONDS = 15.0
"""How long the check waits for the broker before giving up on it."""

_REFUSED = {"_AUTHENTICATION": "the broker refused the login",
            "SASL_AUTHENTICATION_FAILED": "the broker refused the login",
            "_SSL": "TLS failed",
            "TOPIC_AUTHORIZATION_FAILED": "the user may not read the topic",
            "CLUSTER_AUTHORIZATION_FAILED": "the user may not describe the cluster"}
"""librdkafka errors that no retry cures -> what they mean (the check stops on them)."""


class _Attempts:
    """What the client heard while it tried: librdkafka's errors (its ``error_cb``, served by
    ``poll``), and whether the port speaks TLS to a client without it (probed once)."""

    def __init__(self, bootstrap_servers: str, kafka: KafkaSettings) -> None:
        self.bootstrap_servers, self.kafka = bootstrap_servers, kafka
        self.seen: list[tuple[str, str]] = []
        self.probed = False

    def __call__(self, error: KafkaError) -> None:
        """Keep the error's name and text."""
        self.seen.append((error.name(), error.str()))

    def hopeless(self) -> str | None:
        """Why no retry will help, as one line, if that is known: the first error no retry
        cures, or (after a failed attempt, probed once) a TLS port reached without TLS."""
        for name, text in self.seen:
            if name in _REFUSED:
                return f"{_REFUSED[name]}: {text}"
        if not self.probed:
            self.probed = True
            hint = tls_hint(self.bootstrap_servers, self.kafka.librdkafka())
            if hint:
                return f"no answer{hint}"
        return None


def check_topic(bootstrap_servers: str, topic: str, *, kafka: KafkaSettings,
                timeout: float = CHECK_SECONDS) -> None:
    """Return once the broker lists `topic` to a client with the `kafka` settings.

    Raises:
        JobError: the broker cannot be used (see `check_broker`), or has no such topic.
    """
    if topic not in check_broker(bootstrap_servers, kafka=kafka, timeout=timeout):
        raise JobError(f"topic {topic} does not exist at {bootstrap_servers}")


def check_broker(bootstrap_servers: str, *, kafka: KafkaSettings,
                 timeout: float = CHECK_SECONDS) -> set[str]:
    """The topics the broker lists to a client with the `kafka` settings.

    Raises:
        JobError: one line naming the cause: at once a refused login, a TLS failure (an
            untrusted CA, a host name the certificate does not name) or a TLS listener
            reached without TLS; else no answer within `timeout` seconds. Secrets are never
            shown.
    """
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    attempts = _Attempts(bootstrap_servers, kafka)
    config: dict[str, Any] = {"log_level": 0, **kafka.librdkafka(),
                              "bootstrap.servers": bootstrap_servers, "error_cb": attempts}
    try:
        admin = AdminClient(config)
    except KafkaException as exc:  # librdkafka refuses a setting (named in its message)
        raise JobError(f"Kafka client settings refused: {exc.args[0].str()}"
                       f"{_shown(kafka)}") from exc
    deadline = time.monotonic() + timeout
    while True:
        try:
            metadata = admin.list_topics(timeout=1)
            break
        except KafkaException as exc:
            admin.poll(0)  # serves error_cb
            hopeless = attempts.hopeless()
            if hopeless is not None:
                raise JobError(f"Kafka at {bootstrap_servers}: {hopeless}{_shown(kafka)}"
                               ) from exc
            if time.monotonic() >= deadline:
                raise JobError(f"the Kafka broker at {bootstrap_servers} does not answer "
                               f"within {timeout:g} s ({exc.args[0].str()}){_shown(kafka)}"
                               ) from exc
    return set(metadata.topics)


def _shown(kafka: KafkaSettings) -> str:
    """The settings for an error line (secrets redacted), if there are any."""
    return f" (settings: {kafka.shown()})" if kafka.values else ""
