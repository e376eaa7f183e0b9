"""The bridge loop: consume a TiCDC topic in a consumer group, convert each poll batch with
the service's `Converter`, and produce the flat-avro messages, the dead letters and the
consumer offsets in one Kafka transaction (consume-transform-produce, exactly once).

`Bridge` composes the parts: `PartitionQueues` (order, holds, retries), `ConversionStep`
(records through the converter, bad ones found), `Transaction` (begin, produce, offsets,
commit or abort), `Membership` (the consumer group: subscription, assignment, joining again
with a new consumer), `Progress` (totals, metrics, the progress line), `KafkaHealth` (fatal
errors, lost brokers), `Topics` (start-up checks, target topics) and `Watchdog` (every Kafka
call bounded by --broker-timeout, liveness).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from confluent_kafka import TopicPartition

from service.bridge.batch import Batch
from service.bridge.clients import KafkaClients, kafka_clients, watched
from service.bridge.conversion import Conversion, ConversionStep
from service.bridge.errors import BridgeStopped, TransactionAborted
from service.bridge.health import KafkaHealth
from service.bridge.log import log
from service.bridge.membership import Membership
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
        self.progress = Progress(metrics=self.metrics, consumer=lambda: self.clients.consumer,
                                 every=options.progress_seconds)
        self.membership = Membership(options, clients=self.clients, clock=clock,
                                     revoked=self._revoked)
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
        self.membership.join()

    def _revoked(self, partitions: list[TopicPartition]) -> None:
        # Called inside consume(): the commit in flight ends first (its offsets belong to
        # this generation), then the new owner re-reads from the committed offsets, so what
        # was queued here is dropped, not lost.
        self._finish()
        self.queues.drop(tp.partition for tp in partitions)

    def _close(self) -> None:
        self.membership.leave()
        self.transaction.shutdown()

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
        rejoin = self.membership.rejoin_reason()
        if rejoin is not None:  # nothing of this poll is queued: the new consumer reads it
            self._new_consumer(rejoin)
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
        assigned_at = self.membership.assigned_at
        if idle is not None and assigned_at is not None and now - max(
                self.last_message, assigned_at) >= idle and not self.queues.any() and (
                self._caught_up()):
            log(f"idle for {idle:g} s: exiting")
            return True
        return False

    def _caught_up(self) -> bool:
        """Whether every partition of the source topic is read to its end. An assigned one:
        its position (or, before its first message since the assignment, its committed offset)
        at its high watermark as the last fetch saw it; a slow first fetch after a restart is
        not idleness. One assigned elsewhere: the group's committed offset at its high
        watermark; a partition still held by a killed copy whose session has not expired is
        not idleness either (the group gives it to this copy once it has)."""
        consumer = self.clients.consumer
        assigned = consumer.assignment()
        positions = consumer.position(assigned)
        mine = {(tp.topic, tp.partition) for tp in assigned}
        source = self.options.source_topic
        elsewhere = [TopicPartition(source, p) for p in range(self.topics.partitions[source])
                     if (source, p) not in mine]
        unread = [tp for tp in positions if tp.offset < 0] + elsewhere
        committed = {(tp.topic, tp.partition): tp.offset
                     for tp in (consumer.committed(unread, timeout=10) if unread else [])}
        for tp in [*positions, *elsewhere]:
            if (tp.topic, tp.partition) in mine:
                low, high = consumer.get_watermark_offsets(tp, cached=True)
            else:
                low, high = consumer.get_watermark_offsets(tp, timeout=10, cached=False)
            offset = tp.offset if tp.offset >= 0 else committed.get((tp.topic, tp.partition), -1)
            if high < 0 or max(offset, low) < high:
                return False
        return True

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
        """Drop every queued record and join the group again with a new consumer
        (`Membership.rejoin`), which reads them again from the committed offsets.

        Raises:
            BridgeError: the bridge cannot make a new consumer.
        """
        self.queues.clear()
        self.membership.rejoin(why)
