"""`Transaction`: one Kafka transaction per batch: begin, produce the flat-avro messages and
the dead letters, add the source offsets, commit (in a background thread, while the next
batch converts) or abort.

librdkafka does not always return from a transactional call in time (librdkafka#5456: the
group coordinator request of ``send_offsets_to_transaction`` ignores its timeout; #5511: it
waits for good on the coordinator it cached before a broker restarted). Each such call runs
in a thread of its own here; one that has not returned shortly after its timeout is given
up, and so is its producer: a new producer with the same transactional id starts
(``init_transactions`` fences the old one, and the broker aborts or completes its open
transaction first), and the bridge converts the batch again from the committed offsets.
"""

from __future__ import annotations

import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, NoReturn

from confluent_kafka import KafkaError, KafkaException, Producer, TopicPartition

from service.bridge.batch import Batch
from service.bridge.clients import KafkaClients, finished_within
from service.bridge.errors import BridgeError, TransactionAborted
from service.bridge.health import KafkaHealth
from service.bridge.log import log
from service.bridge.metrics import BridgeMetrics
from service.bridge.options import BridgeOptions
from service.bridge.watchdog import Watchdog

__all__ = ["DEAD_LETTER_HEADERS", "LATE", "Transaction"]

LATE = 2.0
"""Seconds a transactional call may run past its own timeout before it is given up (less
than the watchdog's grace, which would end the process)."""

DEAD_LETTER_HEADERS = ("flatavro.reason", "flatavro.source.topic", "flatavro.source.partition",
                       "flatavro.source.offset")
"""The headers of a dead letter: why, and where the source message was read."""


class Transaction:
    """The bridge's transactional producer: one transaction per batch, one in flight."""

    def __init__(self, options: BridgeOptions, *, clients: KafkaClients,
                 health: KafkaHealth, metrics: BridgeMetrics,
                 watchdog: Watchdog | None = None) -> None:
        self.options, self.clients, self.health, self.metrics = options, clients, health, metrics
        self.watchdog = watchdog or Watchdog(options.broker_timeout)
        self.producer = clients.producer
        # Producers given up with a call still blocked in them: kept, never destroyed (that
        # would wait on the blocked call).
        self.given_up: list[Producer] = []
        # The commit of one batch waits on the broker while the next batch is converted.
        self.committer = ThreadPoolExecutor(1, thread_name_prefix="flatavro-commit")
        self.in_flight: tuple[Future[None], Batch] | None = None

    def init(self) -> None:
        """Start transactions (fencing an earlier producer of the same transactional id).

        Raises:
            BridgeError: the broker does not support or allow them.
        """
        try:
            self._bounded("init_transactions", self.options.start_timeout)
        except KafkaException as exc:
            self.health.raise_fatal()
            raise BridgeError(f"cannot start Kafka transactions at "
                              f"{self.options.bootstrap_servers}: {exc.args[0].str()} (the "
                              f"bridge needs Kafka >= 2.5 with transactions)") from exc

    def commit(self, batch: Batch, *, partitions: dict[str, int]) -> None:
        """Produce `batch` in a new transaction and start adding its source offsets to it and
        committing it (`finish` waits for both, and raises what they raised); `partitions`
        counts each target topic's partitions. The transaction before must be finished.

        Raises:
            BridgeError: the transaction failed and was aborted.
        """
        with self.watchdog.watch("producer.begin_transaction"):
            self.producer.begin_transaction()
        try:
            self._produce_outputs(batch, partitions)
            self._produce_dead(batch)
            offsets = [TopicPartition(self.options.source_topic, p, o)
                       for p, o in sorted(batch.offsets.items())]
            metadata = self.clients.consumer.consumer_group_metadata()
        except KafkaException as exc:
            self._abort(exc)
        # Both wait on the broker (the transaction coordinator, then the group's) while the
        # next batch is consumed and converted: a whole round trip less per batch.
        self.in_flight = (self.committer.submit(self._offsets_and_commit, offsets, metadata),
                          batch)

    def _offsets_and_commit(self, offsets: list[TopicPartition], metadata: object) -> None:
        self._retrying("send_offsets_to_transaction", offsets, metadata)
        self._retrying("commit_transaction")

    def done(self) -> bool:
        """Whether a transaction is in flight and its commit has returned."""
        return self.in_flight is not None and self.in_flight[0].done()

    def finish(self) -> Batch | None:
        """Wait for the transaction in flight; its batch once committed (None: none).

        Raises:
            BridgeError: the commit failed (the transaction is aborted).
        """
        if self.in_flight is None:
            return None
        future, batch = self.in_flight
        self.in_flight = None
        try:
            future.result()
        except KafkaException as exc:
            self._abort(exc)
        return batch

    def shutdown(self) -> None:
        """Stop the commit thread."""
        self.committer.shutdown()

    def _retrying(self, name: str, *args: object) -> None:
        """Call the producer's transactional method `name` (its timeout last); a retriable
        failure (a broker restarting, the coordinator moving) is tried again until
        ``broker_timeout`` has passed since the first one, as librdkafka allows for these
        calls; anything else is raised at once.

        Raises:
            KafkaException: not retriable, given up (`_bounded`), or still failing at the
                deadline.
        """
        bound = self.options.broker_timeout
        deadline, wait = time.monotonic() + bound, bound
        while True:
            try:
                self._bounded(name, wait, *args)
                return
            except KafkaException as exc:
                error = exc.args[0]
                if (not error.retriable() or error.txn_requires_abort() or error.fatal()
                        or time.monotonic() >= deadline):
                    raise
                log(f"{name}: {error.str()}; retrying for at most "
                    f"{deadline - time.monotonic():.0f} s of --broker-timeout {bound:g} s")
                time.sleep(0.5)
                wait = max(1.0, deadline - time.monotonic())

    def _bounded(self, name: str, wait: float, *args: object) -> None:
        """Call the producer's method `name` with `args` and the timeout `wait`, watched, in a
        thread of its own; give it up ``LATE`` seconds after `wait`.

        Raises:
            KafkaException: what the call raised, or a non-retriable timeout when it was given
                up (a call still running must not be made again on that producer).
        """
        method = getattr(self.producer, name)
        with self.watchdog.watch(f"producer.{name}"):
            if finished_within(lambda: method(*args, wait), wait + LATE):
                return
        self.given_up.append(self.producer)
        raise KafkaException(KafkaError(KafkaError._TIMED_OUT, (
            f"{name} did not return within {wait:.0f} s (librdkafka#5456); the producer is "
            f"given up")))

    def _produce_outputs(self, batch: Batch, partitions: dict[str, int]) -> None:
        for output, source_partition in batch.outputs:
            topic = output.schemas.topic
            # A keyless message stays in its source partition's order.
            extra = ({} if output.key is not None
                     else {"partition": source_partition % partitions[topic]})
            self._produce(topic, key=output.key, value=output.value, extra=extra)

    def _produce_dead(self, batch: Batch) -> None:
        for record, reason in batch.dead:
            headers = list(zip(DEAD_LETTER_HEADERS, (
                reason, record.topic, str(record.partition), str(record.offset)), strict=True))
            self._produce(str(self.options.dead_letter_topic), key=record.key,
                          value=record.value, extra={"headers": headers})

    def _produce(self, topic: str, *, key: bytes | None, value: bytes | None,
                 extra: dict[str, Any]) -> None:
        while True:
            try:
                self.producer.produce(topic, key=key, value=value, **extra)
                return
            except BufferError:  # the local queue is full: let deliveries drain it
                with self.watchdog.watch("producer.poll"):
                    self.producer.poll(0.05)
                self.health.check(self.clients.admin)

    def _abort(self, exc: KafkaException) -> NoReturn:
        """Abort the open transaction after `exc`; when the abort fails too, or the producer
        was given up, start a new producer of the same transactional id instead (the broker
        aborts the open transaction when it starts).

        Raises:
            TransactionAborted: the transaction is aborted (the bridge goes on).
            BridgeError: a new producer could not start either, or librdkafka reported a
                fatal error.
        """
        self.metrics.aborts.inc()
        failed = f"a transaction failed and was aborted ({exc.args[0].str()})"
        if self.producer not in self.given_up:  # a call may be running in a given-up one
            try:
                # librdkafka: an abort that times out may be called again (a broker
                # restarting).
                self._retrying("abort_transaction")
            except KafkaException as abort:
                self.health.raise_fatal()
                error = abort.args[0]
                both = f"{failed}; the abort failed too ({error.str()}, {error.name()})"
                if exc.args[0].fatal() or error.fatal():
                    # Fenced by a newer copy of the same id, say: a new producer would fence
                    # that copy in turn.
                    raise BridgeError(f"{both}: nothing of its batch is visible; restart the "
                                      f"bridge to resume after the last committed offsets"
                                      ) from exc
                self._renew(both, exc)
        else:
            self._renew(failed, exc)
        self.health.raise_fatal()
        raise TransactionAborted(f"{failed}: nothing of its batch is visible; converting its "
                                 f"messages again from the last committed offsets") from exc

    def _renew(self, failed: str, exc: KafkaException) -> None:
        """Replace the producer by a new one of the same transactional id.

        Raises:
            BridgeError: the bridge cannot make one, or it did not start transactions within
                ``broker_timeout`` (the broker is gone: its transaction times out there).
        """
        restart = (f"{failed}: nothing of its batch is visible; restart the bridge to resume "
                   f"after the last committed offsets")
        if self.clients.renew is None or self.watchdog.stop_at is not None:  # or stopping
            raise BridgeError(restart) from exc
        if self.producer not in self.given_up:  # the abort failed: given up now
            self.given_up.append(self.producer)
        log(f"{failed}; starting a new transactional producer (the same transactional id: "
            f"the broker ends the open transaction first)")
        self.producer = self.clients.renew()
        try:
            self._retrying("init_transactions")
        except KafkaException as renewal:
            raise BridgeError(f"{restart} (a new producer did not start transactions either: "
                              f"{renewal.args[0].str()})") from exc
