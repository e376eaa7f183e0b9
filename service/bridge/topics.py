"""`Topics`: the topics the broker has and their partition counts; checks the source and
dead-letter topics at start-up and creates missing target topics when asked to."""

from __future__ import annotations

import time
from concurrent.futures import TimeoutError as FutureTimeout

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from service.bridge.errors import BridgeError
from service.bridge.health import KafkaHealth
from service.bridge.log import log
from service.bridge.options import BridgeOptions
from service.kafka_client.tls_probe import tls_hint

__all__ = ["Topics"]


_BROKER_STARTING = frozenset({
    KafkaError.INVALID_REPLICATION_FACTOR,  # "All brokers are currently fenced": restarting
    KafkaError.NOT_CONTROLLER, KafkaError._TIMED_OUT, KafkaError._TIMED_OUT_QUEUE,
    KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN,
    KafkaError._DESTROY_BROKER})  # the broker asked went away mid-request (killed, restarted)
"""CreateTopics errors of a broker that is restarting or went away: asked again within
--broker-timeout (a topic created meanwhile then answers TOPIC_ALREADY_EXISTS: fine)."""


class Topics:
    """Partition counts by topic, as the broker last listed them (plus the topics made)."""

    def __init__(self, options: BridgeOptions, *, admin: AdminClient,
                 health: KafkaHealth) -> None:
        self.options, self.admin, self.health = options, admin, health
        self.partitions: dict[str, int] = {}

    def start(self) -> None:
        """List the topics and check the source one and the dead-letter one.

        Raises:
            BridgeError: the broker does not answer, the source topic does not exist, or the
                dead-letter topic does not and cannot be created.
        """
        self.partitions = self._listed(self.options.start_timeout, "")
        source = self.options.source_topic
        if source not in self.partitions:
            raise BridgeError(f"the source topic {source} does not exist at "
                              f"{self.options.bootstrap_servers}")
        if self.options.dead_letter_topic:
            self.ensure(self.options.dead_letter_topic)

    def ensure(self, topic: str) -> int:
        """The partition count of `topic`, created (as many partitions as the source) if it
        does not exist and ``create_topics`` allows it.

        Raises:
            BridgeError: the topic does not exist and may not or cannot be created.
        """
        if topic not in self.partitions:  # mid-run: a restarting broker has --broker-timeout
            self.partitions = self._listed(self.options.broker_timeout, "--broker-timeout ")
        if topic not in self.partitions:
            if not self.options.create_topics:
                raise BridgeError(f"the target topic {topic} does not exist at "
                                  f"{self.options.bootstrap_servers}: create it, or pass "
                                  f"--create-topics")
            self.partitions[topic] = self._create(topic)
        return self.partitions[topic]

    def _create(self, topic: str) -> int:
        """Create `topic`; a broker still starting (fenced, no controller) is asked again
        for ``broker_timeout`` seconds."""
        count = self.partitions[self.options.source_topic]
        deadline = time.monotonic() + self.options.broker_timeout
        while True:
            future = self.admin.create_topics([NewTopic(topic, count)])[topic]
            try:
                future.result(max(1.0, deadline - time.monotonic()))
                break
            except FutureTimeout as exc:  # asked again: it may exist by then
                if time.monotonic() >= deadline:
                    raise BridgeError(
                        f"cannot create topic {topic}: the broker did not answer within "
                        f"--broker-timeout {self.options.broker_timeout:g} s") from exc
            except KafkaException as exc:
                error = exc.args[0]
                if error.code() == KafkaError.TOPIC_ALREADY_EXISTS:
                    break
                if (not (error.retriable() or error.code() in _BROKER_STARTING)
                        or time.monotonic() >= deadline):
                    raise BridgeError(f"cannot create topic {topic}: {error.str()}") from exc
                time.sleep(1.0)
        log(f"created topic {topic} with {count} partition(s)")
        return count

    def _listed(self, within: float, flag: str) -> dict[str, int]:
        """The broker's topics, tried each second for `within` seconds (an authentication
        failure stops at once, not at the end); `flag` names the option `within` comes
        from in the error."""
        deadline = time.monotonic() + within
        while True:
            try:
                metadata = self.admin.list_topics(
                    timeout=max(0.1, min(1.0, deadline - time.monotonic())))
                break
            except KafkaException as exc:
                self.admin.poll(0)  # serve error_cb: authentication, TLS, ...
                self.health.raise_fatal()
                if time.monotonic() >= deadline:
                    raise BridgeError(
                        f"the Kafka broker at {self.options.bootstrap_servers} does not "
                        f"answer within {flag}{within:g} s "
                        f"({exc.args[0].str()})"
                        f"{tls_hint(self.options.bootstrap_servers, self.options.kafka)}"
                    ) from exc
        return {name: len(t.partitions) for name, t in metadata.topics.items()
                if t.error is None}
