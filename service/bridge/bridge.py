"""The bridge loop: consume a TiCDC topic in a consumer group, convert each poll batch with
the service's `Converter`, and produce the flat-avro messages, the dead letters and the
consumer offsets in one Kafka transaction (consume-transform-produce, exactly once).

`Bridge` composes the parts: `PartitionQueues` (order, holds, retries), `ConversionStep`
(records through the converter, bad ones found), `Transaction` (begin, produce, offsets,
commit or abort), `Progress` (totals, metrics, the progress line), `KafkaHealth` (fatal
errors, lost brokers), `Topics` (start-up checks, target topics) and `Watchdog` (every Kafka
call bounded by --broker-timeout, liveness).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from confluent_kafka import Consumer, TopicPartition

from service.bridge.batch import Batch
from service.bridge.clients import KafkaClients, finished_within, kafka_clients, watched
from service.bridge.conversion import Conversion, ConversionStep
from service.bridge.errors import BridgeError, BridgeStopped, TransactionAborted
from service.bridge.health import KafkaHealth
from service.bridge.log import log
from service.bridge.metrics import BridgeMetrics
from service.bridge.options import BridgeOptions
from service.bridge.progress import Progress
from service.bridge.queue import PartitionQueues
from service.bridge.source import SourceRecord
from service.bridge.topics import Topics
from service.bridge.transaction import Transaction
from service.bridge.watchdog import Watchdog
from service.codec.convert import Converter
from service.core.naming import parse_topic_rule

__all__ = ["Bridge", "BridgeOptions"]


class Bridge:
    """One bridge process (one consumer, one transactional producer)."""

    def __init__(self, options: BridgeOptions, converter: Converter, *,
                 metrics: BridgeMetrics | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 clients: KafkaClients | None = None,
                 watchdog: Watchdog | None = None) -> None:
        """Make the Kafka clients (`clients`: ones made already) and the bridge's parts;
        every call on the clients is watched by `watchdog` (its thread is started by the
        command line).

        Raises:
            KafkaConfigError: librdkafka refuses a Kafka setting.
        """
        self.options, self.clock = options, clock
        self.metrics = metrics or BridgeMetrics()
        self.health = KafkaHealth(options, clock=clock)
        self.watchdog = watchdog or Watchdog(options.broker_timeout)
        self.clients = watched(clients or kafka_clients(options, on_error=self.health.on_error),
                               self.watchdog)
        self.topics = Topics(options, admin=self.clients.admin, health=self.health)
        self.queues = PartitionQueues(clock=clock)
        self.conversion = ConversionStep(options, converter)
        self.transaction = Transaction(options, clients=self.clients, health=self.health,
                                       watchdog=self.watchdog,
                                       metrics=self.metrics)
        self.progress = Progress(metrics=self.metrics, consumer=self.clients.consumer,
                                 every=options.progress_seconds)
        self.assigned_at: float | None = None  # None until the group gave this copy its share
        self.lost = False  # the group took this copy's partitions without a revocation
        self.unassigned_since: float | None = None  # joining the group (or again) since
        self.last_message = 0.0  # when the last message arrived (or the run started)
        self.aborted_since: float | None = None  # transactions failing since, None: none

    # -- start-up and shut-down -------------------------------------------------------------

    def start(self) -> None:
        """Check the broker and the source topic, start transactions, join the group.

        Raises:
            BridgeError: the broker does not answer, the source topic does not exist, or
                transactions cannot start (naming what and where).
        """
        parse_topic_rule(self.options.topic_rule)  # a bad rule stops before any work
        self.topics.start()
        self.transaction.init()
        self._subscribe()

    def _subscribe(self) -> None:
        self.unassigned_since = self.clock()
        self.clients.consumer.subscribe([self.options.source_topic], on_assign=self._assigned,
                                        on_revoke=self._revoked, on_lost=self._lost)

    def _assigned(self, _consumer: Consumer, _partitions: list[TopicPartition]) -> None:
        self.assigned_at = self.clock()  # idle time counts from the (re)assignment
        self.unassigned_since = None

    def _revoked(self, _consumer: Consumer, partitions: list[TopicPartition]) -> None:
        # Called inside consume(): the commit in flight ends first (its offsets belong to
        # this generation), then the new owner re-reads from the committed offsets, so what
        # was queued here is dropped, not lost.
        self._finish()
        self.queues.drop(tp.partition for tp in partitions)
        self.unassigned_since = self.clock()

    def _lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        # The session expired (a broker restarting, say): librdkafka goes on fetching the
        # lost partitions, and records fetched then reached the application after the next
        # assignment, ahead of the fetch from the committed offsets (librdkafka 2.16: a batch
        # converted and committed twice). A new consumer has no such records.
        self._revoked(consumer, partitions)
        self.lost = True

    def _close(self) -> None:
        self._leave()
        self.transaction.shutdown()

    def _leave(self) -> None:
        # Leave the group now, so the others rebalance at once; bounded, since librdkafka's
        # close can block for good once the brokers are gone (a bridge that lost its broker
        # must still exit and be restarted; the group then notices after
        # session.timeout.ms, and no offset is lost: they ride the transactions).
        wait = max(self.options.broker_timeout, 10.0)
        if not finished_within(self.clients.consumer.close, wait):
            log(f"leaving the consumer group did not finish within {wait:g} s (is the "
                "broker gone?); going on without it")

    # -- the loop ---------------------------------------------------------------------------

    async def run(self, stop: threading.Event) -> None:
        """Consume, convert and commit until `stop` is set or the source has been idle for
        ``exit_when_idle`` seconds; then leave the group.

        Raises:
            BridgeStopped: an unconvertible message without a dead-letter topic (everything
                before it is committed).
            BridgeError: a transaction that could not commit, a fatal Kafka error.
        """
        self.start()
        self.last_message = self.clock()
        self.progress.restart(self.last_message)
        try:
            while not stop.is_set():
                try:
                    if await self._round():
                        break
                except TransactionAborted as aborted:
                    self._rewind(aborted)
            self._finish()
            self.progress.summary()
        except BridgeStopped:
            self._finish()  # "everything before it is committed" must be true
            raise
        finally:
            self._close()

    async def _round(self) -> bool:
        """One poll: consume, convert, commit; whether the bridge is idle and exits."""
        messages = self.clients.consumer.consume(self.options.batch_size, 0.5)
        self.health.raise_fatal()
        if self.lost:  # nothing of this poll is queued: the new consumer reads it again
            self._new_consumer("the consumer group took this copy's partitions (its session "
                               "expired)")
            return False
        if (self.unassigned_since is not None
                and self.clock() - self.unassigned_since >= self.options.broker_timeout):
            # Even a copy with no partition gets an (empty) assignment: a join that has not
            # ended by now waits on a group coordinator librdkafka no longer reaches.
            self._new_consumer(f"joining the consumer group did not end within "
                               f"--broker-timeout {self.options.broker_timeout:g} s")
            return False
        fresh = self.health.records(messages)
        if fresh:
            self.last_message = self.clock()
            self.health.heard()
        self.health.check(self.clients.admin)
        sources = await self._process(fresh)
        if not fresh or self.transaction.done():
            self._finish()  # nothing to overlap with: count the batch now
        now = self.clock()
        self.progress.tick(sources, now=now, pending=self.queues.pending)
        self.watchdog.advanced()
        return self._idle(now)

    def _idle(self, now: float) -> bool:
        idle = self.options.exit_when_idle
        if idle is not None and self.assigned_at is not None and now - max(
                self.last_message, self.assigned_at) >= idle and not self.queues.any():
            log(f"idle for {idle:g} s: exiting")
            return True
        return False

    async def _process(self, fresh: list[SourceRecord]) -> int:
        """Queue a poll's records, convert the partitions they (or a retry) touch, commit;
        returns how many source records the batch settled."""
        dirty = self.queues.add(fresh)
        batch = Batch()
        dirty |= self._expire_held(batch)
        todo = self.queues.todo(dirty)
        if todo or batch.dead:
            await self._convert_into(todo, batch)
            self._commit(batch)
        self.progress.pending(self.queues.pending)
        return batch.sources

    def _expire_held(self, batch: Batch) -> set[int]:
        """A partition held longer than ``pending_timeout``: its first message goes to the
        dead-letter topic (or the bridge stops, everything before it committed)."""
        timeout = self.options.pending_timeout
        overdue = self.queues.overdue(timeout)
        reason = f"its table schema did not arrive within --pending-timeout {timeout:g} s"
        if overdue and self.options.dead_letter_topic is None:
            partition, offset = overdue[0]
            raise BridgeStopped(f"partition {partition} offset {offset}: {reason} (pass "
                                f"--dead-letter-topic to set such messages aside)")
        for partition, _offset in overdue:
            batch.set_aside(self.queues.release(partition), reason)
        return {partition for partition, _offset in overdue}  # convert the rest again

    async def _convert_into(self, todo: list[SourceRecord], batch: Batch) -> None:
        """Convert `todo` into `batch`. Without a dead-letter topic, a bad record stops the
        bridge: every partition's records before its first bad one are committed first."""
        stop = None
        set_aside = self.options.dead_letter_topic is not None
        while True:
            result = await self.conversion.convert(todo, set_aside=set_aside)
            if isinstance(result, Conversion):
                break
            stop, todo = result, result.before()  # the last bad records found are named
        self._take(result, batch)
        if stop is not None:
            self._commit(batch)
            self._finish()
            raise stop.error()

    def _take(self, conversion: Conversion, batch: Batch) -> None:
        """Add a conversion to the batch; keep each partition's held records queued."""
        held_from = batch.take(conversion)
        for note in conversion.converted.notes:  # a version evolved from rows: said once
            log(note)
        for partition, offset in held_from.items():
            self.queues.settle(partition, offset)

    # -- the transaction --------------------------------------------------------------------

    def _commit(self, batch: Batch) -> None:
        if not batch.offsets:
            return
        # Target topics are checked (or created) before the transaction opens: a missing one
        # stops the bridge without leaving an open transaction that blocks read_committed
        # readers of the other targets until it times out.
        partitions = {topic: self.topics.ensure(topic) for topic in batch.topics()}
        self._finish()
        self.transaction.commit(batch, partitions=partitions)

    def _finish(self) -> None:
        """Wait for the transaction in flight; count its batch once it is committed."""
        batch = self.transaction.finish()
        if batch is not None:
            self.aborted_since = None
            self.progress.committed(batch)

    def _rewind(self, aborted: TransactionAborted) -> None:
        """After an aborted transaction (a broker restarting under it), read the source
        again from the committed offsets; transactions failing for ``broker_timeout``
        stop the bridge.

        Raises:
            TransactionAborted: transactions have failed for ``broker_timeout`` seconds.
            BridgeError: the bridge cannot make a new consumer.
        """
        now = self.clock()
        if self.aborted_since is None:
            self.aborted_since = now
        elif now - self.aborted_since >= self.options.broker_timeout:
            raise aborted
        log(str(aborted))
        self._new_consumer("a transaction was aborted")

    def _new_consumer(self, why: str) -> None:
        """Leave the group and join it again with a new consumer, which starts at the
        committed offsets. Not a seek: a seek on partitions whose assignment was lost started
        a fetch that librdkafka (2.16) delivered after the next assignment, next to the one
        from the committed offsets (seen in a broker restart: a batch committed twice).

        Raises:
            BridgeError: the bridge cannot make a new consumer.
        """
        renew = self.clients.renew_consumer
        if renew is None:
            raise BridgeError(f"{why}; restart the bridge to resume after the last committed "
                              f"offsets")
        self.queues.drop(list(self.queues.queues))
        log(f"{why}: leaving the consumer group and joining it again with a new consumer, "
            f"from the committed offsets")
        self._leave()
        self.clients.consumer = self.progress.consumer = renew()
        self.lost, self.assigned_at = False, None
        self._subscribe()
