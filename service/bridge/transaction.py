"""`Transaction`: one Kafka transaction per batch: begin, produce the flat-avro messages and
the dead letters, add the source offsets, commit (in a background thread, while the next
batch converts) or abort."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, NoReturn

from confluent_kafka import KafkaException, TopicPartition

from service.bridge.batch import Batch
from service.bridge.clients import KafkaClients
from service.bridge.errors import BridgeError, TransactionAborted
from service.bridge.health import KafkaHealth
from service.bridge.log import log
from service.bridge.metrics import BridgeMetrics
from service.bridge.options import BridgeOptions

__all__ = ["DEAD_LETTER_HEADERS", "Transaction"]

DEAD_LETTER_HEADERS = ("flatavro.reason", "flatavro.source.topic", "flatavro.source.partition",
                       "flatavro.source.offset")
"""The headers of a dead letter: why, and where the source message was read."""


class Transaction:
    """The bridge's transactional producer: one transaction per batch, one in flight."""

    def __init__(self, options: BridgeOptions, *, clients: KafkaClients,
                 health: KafkaHealth, metrics: BridgeMetrics) -> None:
        self.options, self.clients, self.health, self.metrics = options, clients, health, metrics
        self.producer = clients.producer
        # The commit of one batch waits on the broker while the next batch is converted.
        self.committer = ThreadPoolExecutor(1, thread_name_prefix="flatavro-commit")
        self.in_flight: tuple[Future[None], Batch] | None = None

    def init(self) -> None:
        """Start transactions (fencing an earlier producer of the same transactional id).

        Raises:
            BridgeError: the broker does not support or allow them.
        """
        try:
            self.producer.init_transactions(self.options.start_timeout)
        except KafkaException as exc:
            self.health.raise_fatal()
            raise BridgeError(f"cannot start Kafka transactions at "
                              f"{self.options.bootstrap_servers}: {exc.args[0].str()} (the "
                              f"bridge needs Kafka >= 2.5 with transactions)") from exc

    def commit(self, batch: Batch, *, partitions: dict[str, int]) -> None:
        """Produce `batch` and its source offsets in a new transaction and start its commit
        (`finish` waits for it); `partitions` counts each target topic's partitions. The
        transaction before must be finished.

        Raises:
            BridgeError: the transaction failed and was aborted.
        """
        self.producer.begin_transaction()
        try:
            self._produce_outputs(batch, partitions)
            self._produce_dead(batch)
            offsets = [TopicPartition(self.options.source_topic, p, o)
                       for p, o in sorted(batch.offsets.items())]
            metadata = self.clients.consumer.consumer_group_metadata()
            self._retrying("send_offsets_to_transaction", lambda wait: (
                self.producer.send_offsets_to_transaction(offsets, metadata, wait)))
        except KafkaException as exc:
            self._abort(exc)
        self.in_flight = (self.committer.submit(
            self._retrying, "commit_transaction", self.producer.commit_transaction), batch)

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

    def _retrying(self, name: str, call: Callable[[float], object]) -> None:
        """Run `call` (given its timeout); a retriable failure (a broker restarting, the
        coordinator moving) is tried again until ``broker_timeout`` has passed since the
        first one, as librdkafka allows for these calls; anything else is raised at once.

        Raises:
            KafkaException: not retriable, or still failing at the deadline.
        """
        bound = self.options.broker_timeout
        deadline, wait = time.monotonic() + bound, bound
        while True:
            try:
                call(wait)
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
                self.producer.poll(0.05)
                self.health.check(self.clients.admin)

    def _abort(self, exc: KafkaException) -> NoReturn:
        """Abort the open transaction after `exc`.

        Raises:
            TransactionAborted: the abort went through (the bridge goes on).
            BridgeError: the abort failed too, or librdkafka reported a fatal error.
        """
        self.metrics.aborts.inc()
        failed = f"a transaction failed and was aborted ({exc.args[0].str()})"
        try:
            # librdkafka: an abort that times out may be called again (a broker restarting).
            self._retrying("abort_transaction", self.producer.abort_transaction)
        except KafkaException:
            # The broker is gone: the transaction times out on its side, unseen.
            self.health.raise_fatal()
            raise BridgeError(f"{failed}: nothing of its batch is visible; restart the bridge "
                              f"to resume after the last committed offsets") from exc
        self.health.raise_fatal()
        raise TransactionAborted(f"{failed}: nothing of its batch is visible; converting its "
                                 f"messages again from the last committed offsets") from exc
