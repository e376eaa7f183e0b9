"""`KafkaHealth`: what the bridge knows of its brokers: a fatal error that stops it, how long
every broker has been unreachable, and the consumer errors it has already logged."""

from __future__ import annotations

import time
from collections.abc import Callable

from confluent_kafka import KafkaError, KafkaException, Message
from confluent_kafka.admin import AdminClient

from service.bridge.errors import BridgeError
from service.bridge.log import log
from service.bridge.options import BridgeOptions
from service.bridge.source import SourceRecord
from service.kafka_client.settings import redacted

__all__ = ["FATAL_CODES", "KafkaHealth"]

FATAL_CODES = frozenset({
    KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED,
    KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.GROUP_AUTHORIZATION_FAILED,
    KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, KafkaError.CLUSTER_AUTHORIZATION_FAILED,
    KafkaError._SSL, KafkaError.UNKNOWN_TOPIC_OR_PART})
"""Errors librdkafka retries for good that no retry will cure: the bridge stops on them."""


class KafkaHealth:
    """The state of the brokers as librdkafka reports it (its ``error_cb`` and the errors of
    consumed messages), and the checks that stop the bridge on it."""

    def __init__(self, options: BridgeOptions, *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.options, self.clock = options, clock
        self.fatal: KafkaError | None = None
        self.down_since: float | None = None  # all brokers unreachable since
        self.reported: set[int] = set()  # consumer error codes already logged

    def on_error(self, error: KafkaError) -> None:
        """librdkafka's ``error_cb``: keep a fatal error, note when all brokers went down."""
        if error.fatal() or error.code() in FATAL_CODES:
            self.fatal = error
        elif error.code() == KafkaError._ALL_BROKERS_DOWN and self.down_since is None:
            self.down_since = self.clock()
            log(f"lost the Kafka broker at {self.options.bootstrap_servers} "
                f"({error.str()}); retrying for {self.options.broker_timeout:g} s")

    def raise_fatal(self) -> None:
        """Stop the bridge if librdkafka reported a fatal error.

        Raises:
            BridgeError: naming the error and the Kafka settings (secrets redacted).
        """
        if self.fatal is not None:
            raise BridgeError(f"Kafka: {self.fatal.str()} (settings: "
                              f"{redacted(self.options.kafka)})")

    def records(self, consumed: list[Message]) -> list[SourceRecord]:
        """The consumed messages without errors; a fatal consumer error stops the bridge,
        another is logged once per kind (librdkafka retries it).

        Raises:
            BridgeError: a fatal consumer error, naming its topic and partition.
        """
        fresh = []
        for message in consumed:
            error = message.error()
            if error is None:
                fresh.append(SourceRecord.of(message))
            elif error.fatal() or error.code() in FATAL_CODES:
                self.fatal = error
                raise BridgeError(f"Kafka: {error.str()} (topic {message.topic()}, partition "
                                  f"{message.partition()})")
            elif error.code() not in self.reported:
                self.reported.add(error.code())
                log(f"consumer: {error.str()} (retrying)")
        return fresh

    def heard(self) -> None:
        """Messages arrived: the brokers answer."""
        self.down_since = None

    def check(self, admin: AdminClient) -> None:
        """Stop when every broker has been unreachable for ``broker_timeout`` (one probe
        first: librdkafka says when brokers go, not when they come back).

        Raises:
            BridgeError: the probe gets no answer either.
        """
        if self.down_since is None or (
                self.clock() - self.down_since < self.options.broker_timeout):
            return
        try:
            admin.list_topics(timeout=5)
        except KafkaException as exc:
            raise BridgeError(
                f"lost the Kafka broker at {self.options.bootstrap_servers}: no answer for "
                f"{self.options.broker_timeout:g} s ({exc.args[0].str()}); everything "
                f"converted so far is committed, restart the bridge to resume") from exc
        log(f"the Kafka broker at {self.options.bootstrap_servers} answers again")
        self.down_since = None
