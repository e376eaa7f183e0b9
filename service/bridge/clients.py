"""The bridge's Kafka clients (admin, read_committed consumer, transactional producer), made
from its options, `watched` to put every call on them under the `Watchdog`, and
`finished_within` to bound a call that can block for good."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient

from service.bridge.options import BridgeOptions
from service.bridge.watchdog import Watchdog
from service.kafka_client.errors import KafkaConfigError
from service.kafka_client.settings import redacted

__all__ = ["KafkaClients", "finished_within", "kafka_clients", "watched"]


@dataclass(slots=True)
class KafkaClients:
    """The admin client, the consumer and the transactional producer of one bridge, how to
    make a new producer of the same transactional id and a new consumer of the same group
    (None: the bridge cannot). The bridge's parts share one of these: a new consumer put
    here is the one every part uses."""

    admin: AdminClient
    consumer: Consumer
    producer: Producer
    renew: Callable[[], Producer] | None = None
    renew_consumer: Callable[[], Consumer] | None = None


def kafka_clients(options: BridgeOptions, *,
                  on_error: Callable[[KafkaError], None]) -> KafkaClients:
    """The admin client, the read_committed consumer and the transactional producer.

    Defaults first, the user's settings over them, the settings exactly-once rests on last
    (`kafka_settings` refuses those, so nothing the user wrote is silently dropped).

    Raises:
        KafkaConfigError: librdkafka refuses a setting (unknown name, bad value, an
            incomplete SASL/TLS set), naming it.
    """
    # librdkafka's own log lines (connection refused, ...) stay quiet: errors reach the
    # bridge through error_cb and exceptions and are reported once; `log_level` in the
    # Kafka settings turns them back on.
    # After losing every broker, librdkafka >= 2.10 "re-bootstraps": it decommissions the
    # brokers it knew, and a transaction's offset commit then waits for good on the group
    # coordinator it had cached (librdkafka#5511; seen here on a restart of a single broker).
    # Keeping the known brokers lets it reconnect to them instead.
    common: dict[str, Any] = {"log_level": 2, "metadata.recovery.strategy": "none",
                              **options.kafka,
                              "bootstrap.servers": options.bootstrap_servers,
                              "error_cb": on_error}
    consumer = {
        # A crashed copy's partitions wait this long for the group to notice (45 s by
        # default); a stopped copy leaves at once.
        "session.timeout.ms": 10000, "auto.offset.reset": "earliest", **common,
        "group.id": options.group_id, "enable.auto.commit": False,
        "isolation.level": "read_committed", "enable.partition.eof": False}
    # A request to a broker that died mid-transaction (AddOffsetsToTxn, EndTxn) waits
    # socket.timeout.ms whatever timeout the call was given: bound it by --broker-timeout too
    # (librdkafka wants it 100 ms under transaction.timeout.ms, 60 s unless the user sets it,
    # in which case librdkafka derives it).
    bounded = {} if "transaction.timeout.ms" in options.kafka else {
        "socket.timeout.ms": max(10, min(int(options.broker_timeout * 1000), 59_900))}
    producer = {
        "linger.ms": 5, **bounded, **common, "enable.idempotence": True,
        "transactional.id": f"flatavro-bridge.{options.group_id}.{options.instance_id}",
        "partitioner": "murmur2_random"}  # a key's partition as Java clients choose it
    try:
        return KafkaClients(AdminClient(common), Consumer(consumer), Producer(producer),
                            renew=lambda: Producer(producer),
                            renew_consumer=lambda: Consumer(consumer))
    except KafkaException as exc:
        raise KafkaConfigError(f"Kafka client settings refused: {exc.args[0].str()} "
                               f"(settings: {redacted(options.kafka)})") from exc


class _Watched:
    """A Kafka client whose every method call is marked in flight on the watchdog."""

    def __init__(self, client: object, *, name: str, watchdog: Watchdog) -> None:
        self._client, self._name, self._watchdog = client, name, watchdog

    def __getattr__(self, attr: str) -> Any:
        method = getattr(self._client, attr)
        if not callable(method):
            return method
        label, watchdog = f"{self._name}.{attr}", self._watchdog

        def call(*args: Any, **kwargs: Any) -> Any:
            with watchdog.watch(label):
                return method(*args, **kwargs)

        return call


def watched(clients: KafkaClients, watchdog: Watchdog) -> KafkaClients:
    """The same clients, every call on the admin client and the consumer (a new one too)
    watched (``consumer.consume``); the producer's calls are watched by `Transaction`, which
    gives up on one that does not return in time and starts a new producer."""
    def consumer(made: Consumer) -> Consumer:
        return cast(Consumer, _Watched(made, name="consumer", watchdog=watchdog))

    renew_consumer = clients.renew_consumer
    return KafkaClients(
        cast(AdminClient, _Watched(clients.admin, name="admin", watchdog=watchdog)),
        consumer(clients.consumer), clients.producer, clients.renew,
        None if renew_consumer is None else lambda: consumer(renew_consumer()))


def finished_within(work: Callable[[], object], seconds: float) -> bool:
    """Run `work` in a daemon thread; whether it returned within `seconds` (what it raised
    then is raised here). A call still blocked then is left behind: the process may exit
    without it."""
    failure: list[BaseException] = []

    def attempt() -> None:
        try:
            work()
        except BaseException as exc:  # handed to the caller below
            failure.append(exc)

    thread = threading.Thread(target=attempt, daemon=True,
                              name=f"bounded {getattr(work, '__name__', 'call')}")
    thread.start()
    thread.join(seconds)
    if failure:
        raise failure[0]
    return not thread.is_alive()
