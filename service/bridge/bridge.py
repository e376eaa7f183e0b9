"""The bridge loop: consume a TiCDC topic in a consumer group, convert each poll batch with
the service's `Converter`, and produce the flat-avro messages, the dead letters and the
consumer offsets in one Kafka transaction (consume-transform-produce, exactly once).

Per source partition the bridge keeps a queue of messages read but not committed. A Simple
protocol DML whose table version is unknown holds its partition: it and everything after it
stay queued (offsets not committed) and are converted again when the partition brings new
messages (TiCDC re-sends BOOTSTRAP), until ``pending_timeout``.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from service.bridge.errors import BridgeError, BridgeStopped, KafkaConfigError
from service.bridge.kafka_settings import redacted
from service.bridge.metrics import BridgeMetrics
from service.cdc.catalog import Protocol
from service.codec.convert import Converted, Converter, ConvertInput, Output
from service.codec.errors import UnconvertibleMessagesError
from service.core.errors import InvalidInputError, ServiceError
from service.core.naming import parse_topic_rule
from service.core.options import SchemaOptions
from service.registry.errors import IncompatibleSchemaError
from service.registry.tables import TopicBindingError

__all__ = ["Bridge", "BridgeOptions", "DEAD_LETTER_HEADERS"]

DEAD_LETTER_HEADERS = ("flatavro.reason", "flatavro.source.topic", "flatavro.source.partition",
                       "flatavro.source.offset")
_FATAL_CODES = {KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED,
                KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.GROUP_AUTHORIZATION_FAILED,
                KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                KafkaError.CLUSTER_AUTHORIZATION_FAILED, KafkaError._SSL,
                KafkaError.UNKNOWN_TOPIC_OR_PART}
# What the registry refuses about one table (its new schema incompatible, its topic bound to
# another table, a schema it finds invalid): the messages of that table are unconvertible.
# Other registry errors (unavailable, read-only, store) stop the bridge with nothing of the
# batch committed, as the next run can convert them.
_REFUSALS = (InvalidInputError, IncompatibleSchemaError, TopicBindingError)


@dataclass(frozen=True, slots=True)
class BridgeOptions:
    """What `flatavro bridge` was asked to do."""

    protocol: Protocol
    source_topic: str
    bootstrap_servers: str
    group_id: str
    instance_id: str
    topic_rule: str = "tidb_{schema}_{table}"
    register: bool = False
    schema_options: SchemaOptions = field(default_factory=SchemaOptions)
    key_columns: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    dead_letter_topic: str | None = None
    create_topics: bool = False
    pending_timeout: float = 300.0
    exit_when_idle: float | None = None
    batch_size: int = 1000
    progress_seconds: float = 5.0
    start_timeout: float = 15.0
    broker_timeout: float = 60.0
    kafka: Mapping[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class _Batch:
    """What one transaction commits."""

    outputs: list[tuple[Output, int]] = field(default_factory=list)  # (message, source part.)
    dead: list[tuple[Message, str]] = field(default_factory=list)
    offsets: dict[int, int] = field(default_factory=dict)
    sources: int = 0
    skipped: list[dict[str, Any]] = field(default_factory=list)


def _reason(error: Mapping[str, Any]) -> str:
    """A converter error without its batch position ("message 3: "): the bridge names the
    partition and offset instead."""
    return str(error["message"]).removeprefix(f"message {error['message_index']}: ")


def _log(text: str) -> None:
    print(f"bridge: {text}", file=sys.stderr, flush=True)


def _clients(options: BridgeOptions, on_error: Callable[[KafkaError], None]
             ) -> tuple[AdminClient, Consumer, Producer]:
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
    common = {"log_level": 2, **options.kafka, "bootstrap.servers": options.bootstrap_servers,
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
        return AdminClient(common), Consumer(consumer), Producer(producer)
    except KafkaException as exc:
        raise KafkaConfigError(f"Kafka client settings refused: {exc.args[0].str()} "
                               f"(settings: {redacted(options.kafka)})") from exc


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


class Bridge:
    """One bridge process (one consumer, one transactional producer)."""

    def __init__(self, options: BridgeOptions, converter: Converter,
                 metrics: BridgeMetrics | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.options, self.converter, self.clock = options, converter, clock
        self.metrics = metrics or BridgeMetrics()
        self.queues: dict[int, list[Message]] = {}
        self.held_since: dict[int, tuple[int, float]] = {}  # partition -> (offset, since)
        self.partitions: dict[str, int] = {}
        self.fatal: KafkaError | None = None
        self.totals = {"converted": 0, "dead-lettered": 0, "skipped": 0}
        self.retry: set[int] = set()  # held partitions to convert again next time
        self.fresh: set[int] = set()  # partitions with new messages in this poll
        self.assigned_at: float | None = None  # None until the group gave this copy its share
        self.down_since: float | None = None  # all brokers unreachable since
        self.reported: set[int] = set()  # consumer error codes already logged
        self.admin, self.consumer, self.producer = _clients(options, self._error)
        # The commit of one batch waits on the broker while the next batch is converted.
        self.committer = ThreadPoolExecutor(1, thread_name_prefix="flatavro-commit")
        self.in_flight: tuple[Future[None], _Batch] | None = None

    def _error(self, error: KafkaError) -> None:
        if error.fatal() or error.code() in _FATAL_CODES:
            self.fatal = error
        elif error.code() == KafkaError._ALL_BROKERS_DOWN and self.down_since is None:
            self.down_since = self.clock()
            _log(f"lost the Kafka broker at {self.options.bootstrap_servers} "
                 f"({error.str()}); retrying for {self.options.broker_timeout:g} s")

    def _raise_fatal(self) -> None:
        if self.fatal is not None:
            raise BridgeError(f"Kafka: {self.fatal.str()} (settings: "
                              f"{redacted(self.options.kafka)})")

    # -- start-up ---------------------------------------------------------------------------

    def _topics(self) -> dict[str, int]:
        deadline = time.monotonic() + self.options.start_timeout
        while True:  # 1 s tries: an authentication failure stops at once, not at the end
            try:
                metadata = self.admin.list_topics(
                    timeout=max(0.1, min(1.0, deadline - time.monotonic())))
                break
            except KafkaException as exc:
                self.admin.poll(0)  # serve error_cb: authentication, TLS, ...
                self._raise_fatal()
                if time.monotonic() >= deadline:
                    raise BridgeError(
                        f"the Kafka broker at {self.options.bootstrap_servers} does not "
                        f"answer within {self.options.start_timeout:g} s "
                        f"({exc.args[0].str()})") from exc
        return {name: len(t.partitions) for name, t in metadata.topics.items()
                if t.error is None}

    def start(self) -> None:
        """Check the broker and the source topic, start transactions, join the group.

        Raises:
            BridgeError: the broker does not answer, the source topic does not exist, or
                transactions cannot start (naming what and where).
        """
        parse_topic_rule(self.options.topic_rule)  # a bad rule stops before any work
        self.partitions = self._topics()
        source = self.options.source_topic
        if source not in self.partitions:
            raise BridgeError(f"the source topic {source} does not exist at "
                              f"{self.options.bootstrap_servers}")
        if self.options.dead_letter_topic:
            self._ensure_topic(self.options.dead_letter_topic)
        try:
            self.producer.init_transactions(self.options.start_timeout)
        except KafkaException as exc:
            self._raise_fatal()
            raise BridgeError(f"cannot start Kafka transactions at "
                              f"{self.options.bootstrap_servers}: {exc.args[0].str()} (the "
                              f"bridge needs Kafka >= 2.5 with transactions)") from exc
        self.consumer.subscribe([source], on_assign=self._assigned, on_revoke=self._revoked,
                                on_lost=self._revoked)

    def _assigned(self, _consumer: Consumer, _partitions: list[TopicPartition]) -> None:
        self.assigned_at = self.clock()  # idle time counts from the (re)assignment

    def _revoked(self, _consumer: Consumer, partitions: list[TopicPartition]) -> None:
        # Called inside consume(): the commit in flight ends first (its offsets belong to
        # this generation), then the new owner re-reads from the committed offsets, so what
        # was queued here is dropped, not lost.
        self._finish()
        for tp in partitions:
            self.queues.pop(tp.partition, None)
            self.held_since.pop(tp.partition, None)
            self.retry.discard(tp.partition)

    def _ensure_topic(self, topic: str) -> int:
        if topic not in self.partitions:
            self.partitions = self._topics()
        if topic not in self.partitions:
            if not self.options.create_topics:
                raise BridgeError(f"the target topic {topic} does not exist at "
                                  f"{self.options.bootstrap_servers}: create it, or pass "
                                  f"--create-topics")
            count = self.partitions[self.options.source_topic]
            future = self.admin.create_topics([NewTopic(topic, count)])[topic]
            try:
                future.result(self.options.start_timeout)
            except KafkaException as exc:
                if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                    raise BridgeError(f"cannot create topic {topic}: "
                                      f"{exc.args[0].str()}") from exc
            _log(f"created topic {topic} with {count} partition(s)")
            self.partitions[topic] = count
        return self.partitions[topic]

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
        last_message = last_progress = self.clock()
        done_since_progress = 0
        try:
            while not stop.is_set():
                messages = self.consumer.consume(self.options.batch_size, 0.5)
                self._raise_fatal()
                fresh = self._messages(messages)
                if fresh:
                    last_message = self.clock()
                    self.down_since = None
                self._check_broker()
                done_since_progress += await self._process(fresh)
                if not fresh or (self.in_flight and self.in_flight[0].done()):
                    self._finish()  # nothing to overlap with: count the batch now
                now = self.clock()
                if now - last_progress >= self.options.progress_seconds:
                    self._progress(done_since_progress / (now - last_progress))
                    last_progress, done_since_progress = now, 0
                idle = self.options.exit_when_idle
                if idle is not None and self.assigned_at is not None and now - max(
                        last_message, self.assigned_at) >= idle and not any(
                        self.queues.values()):
                    _log(f"idle for {idle:g} s: exiting")
                    break
            self._finish()
        except BridgeStopped:
            self._finish()  # "everything before it is committed" must be true
            raise
        finally:
            # Leave the group now, so the others rebalance at once; bounded, since librdkafka's
            # close can block for good once the brokers are gone (a bridge that lost its broker
            # must still exit and be restarted; the group then notices after
            # session.timeout.ms, and no offset is lost: they ride the transactions).
            wait = max(self.options.broker_timeout, 10.0)
            if not finished_within(self.consumer.close, wait):
                _log(f"leaving the consumer group did not finish within {wait:g} s (is the "
                     "broker gone?); exiting without it")
            self.committer.shutdown()

    def _messages(self, consumed: list[Message]) -> list[Message]:
        """The messages without errors; a fatal consumer error stops the bridge, another is
        logged once per kind (librdkafka retries it)."""
        fresh = []
        for message in consumed:
            error = message.error()
            if error is None:
                fresh.append(message)
            elif error.fatal() or error.code() in _FATAL_CODES:
                self.fatal = error
                raise BridgeError(f"Kafka: {error.str()} (topic {message.topic()}, partition "
                                  f"{message.partition()})")
            elif error.code() not in self.reported:
                self.reported.add(error.code())
                _log(f"consumer: {error.str()} (retrying)")
        return fresh

    def _check_broker(self) -> None:
        """Stop when every broker has been unreachable for ``broker_timeout`` (one probe
        first: librdkafka says when brokers go, not when they come back)."""
        if self.down_since is None or (
                self.clock() - self.down_since < self.options.broker_timeout):
            return
        try:
            self.admin.list_topics(timeout=5)
        except KafkaException as exc:
            raise BridgeError(
                f"lost the Kafka broker at {self.options.bootstrap_servers}: no answer for "
                f"{self.options.broker_timeout:g} s ({exc.args[0].str()}); everything "
                f"converted so far is committed, restart the bridge to resume") from exc
        _log(f"the Kafka broker at {self.options.bootstrap_servers} answers again")
        self.down_since = None

    async def _process(self, fresh: list[Message]) -> int:
        dirty, self.retry = self.retry, set()
        for message in fresh:
            self.queues.setdefault(message.partition(), []).append(message)
            dirty.add(message.partition())
        self.fresh = {m.partition() for m in fresh}
        batch = _Batch()
        dirty |= self._expire_held(batch)
        todo = [m for p in sorted(dirty) for m in self.queues.get(p, [])]
        if todo or batch.dead:
            await self._convert_into(todo, batch)
            self._commit(batch)
        self.metrics.pending.set(sum(len(q) for q in self.queues.values()))
        return batch.sources

    def _expire_held(self, batch: _Batch) -> set[int]:
        """A partition held longer than ``pending_timeout``: its first message goes to the
        dead-letter topic (or the bridge stops, everything before it committed)."""
        now, expired = self.clock(), set()
        for partition, (offset, since) in list(self.held_since.items()):
            if now - since < self.options.pending_timeout:
                continue
            queue = self.queues[partition]
            reason = (f"its table schema did not arrive within --pending-timeout "
                      f"{self.options.pending_timeout:g} s")
            if self.options.dead_letter_topic is None:
                raise BridgeStopped(f"partition {partition} offset {offset}: {reason} (pass "
                                    f"--dead-letter-topic to set such messages aside)")
            batch.dead.append((queue.pop(0), reason))
            batch.offsets[partition] = offset + 1
            batch.sources += 1
            del self.held_since[partition]
            expired.add(partition)  # convert the rest of the partition again
        return expired

    async def _convert_into(self, todo: list[Message], batch: _Batch) -> None:
        bad: dict[int, str] = {}
        while True:
            keep = [i for i in range(len(todo)) if i not in bad]
            try:
                converted = await self._convert([todo[i] for i in keep])
                break
            except UnconvertibleMessagesError as exc:
                for error in exc.errors:
                    for index in [error["message_index"], *error.get("affected_messages", ())]:
                        bad.setdefault(keep[index], _reason(error))
            except _REFUSALS as exc:  # one table's schema refused: find its messages
                found = await self._refused([todo[i] for i in keep])
                if not found:
                    raise self._whole_batch(todo, exc) from exc
                bad.update({keep[i]: reason for i, reason in found.items()})
            if self.options.dead_letter_topic is None:
                await self._stop_at(todo, bad, batch)
        self._apply(todo, keep, bad, converted, batch)

    async def _convert(self, messages: list[Message]) -> Converted:
        """Convert messages in order; an error of the registry itself (unavailable,
        read-only, its store) stops the bridge with nothing of the batch committed."""
        try:
            return await self.converter.convert_raw(
                self.options.protocol, ConvertInput(
                    [(m.key(), m.value()) for m in messages], "raw", self.options.topic_rule,
                    self.options.register, self.options.schema_options,
                    self.options.key_columns), may_register=True)
        except (UnconvertibleMessagesError, *_REFUSALS):
            raise
        except ServiceError as exc:
            raise self._whole_batch(messages, exc) from exc

    async def _refused(self, messages: list[Message]) -> dict[int, str]:
        """Which messages the registry refuses, found by converting them one by one in
        order (only after a refusal; what converts is registered as it would be anyway)."""
        found: dict[int, str] = {}
        for index, message in enumerate(messages):
            try:
                await self._convert([message])
            except UnconvertibleMessagesError as exc:
                found[index] = _reason(exc.errors[0])
            except _REFUSALS as exc:
                found[index] = f"the schema registry refused its table's schema: {exc}"
        return found

    def _whole_batch(self, messages: list[Message], exc: Exception) -> BridgeError:
        first = messages[0]
        return BridgeError(f"the batch from partition {first.partition()} offset "
                           f"{first.offset()} cannot be converted: {exc}; nothing of it is "
                           f"committed, restart the bridge to resume")

    async def _stop_at(self, todo: list[Message], bad: dict[int, str], batch: _Batch) -> None:
        """Commit every partition's messages before its first bad one, then stop."""
        first: dict[int, int] = {}
        for index in sorted(bad):
            first.setdefault(todo[index].partition(), index)
        before = [m for i, m in enumerate(todo)
                  if i < first.get(m.partition(), len(todo))]
        await self._convert_into(before, batch)
        self._commit(batch)
        self._finish()
        index = min(first.values(), key=lambda i: (todo[i].partition(), todo[i].offset()))
        message = todo[index]
        others = f" ({len(bad) - 1} more in this batch)" if len(bad) > 1 else ""
        raise BridgeStopped(f"partition {message.partition()} offset {message.offset()}: "
                            f"{bad[index]}{others}; everything before it is committed (pass "
                            f"--dead-letter-topic to set such messages aside)")

    def _apply(self, todo: list[Message], keep: list[int], bad: dict[int, str],
               converted: Converted, batch: _Batch) -> None:
        """Cut each partition at its first pending message; the rest is this batch's."""
        cut: dict[int, int] = {}
        for pending in converted.pending:
            index = keep[pending.source_index]
            cut.setdefault(todo[index].partition(), index)
        for index, message in enumerate(todo):
            partition = message.partition()
            if index >= cut.get(partition, len(todo)):
                continue
            batch.sources += 1
            batch.offsets[partition] = message.offset() + 1
            if index in bad:
                batch.dead.append((message, bad[index]))
        for output in converted.messages:
            index = keep[output.source_index]
            if index < cut.get(todo[index].partition(), len(todo)):
                batch.outputs.append((output, todo[index].partition()))
        for note in converted.notes:  # a version evolved from rows: said once, when made
            _log(note)
        batch.skipped.extend(s for s in converted.skipped
                             if keep[s["source_index"]] < cut.get(
                                 todo[keep[s["source_index"]]].partition(), len(todo)))
        for partition in {m.partition() for m in todo}:
            first_held = todo[cut[partition]].offset() if partition in cut else None
            held = [] if first_held is None else [
                m for m in self.queues.get(partition, []) if m.offset() >= first_held]
            self.queues[partition] = held
            if not held:
                self.held_since.pop(partition, None)
                continue
            if partition in self.fresh or self.held_since.get(
                    partition, (-1, 0.0))[0] != held[0].offset():
                # A BOOTSTRAP/DDL behind the held message may have just taught the decoder
                # its schema: convert the partition once more (not again while unchanged).
                self.retry.add(partition)
            if self.held_since.get(partition, (-1, 0.0))[0] != held[0].offset():
                self.held_since[partition] = (held[0].offset(), self.clock())

    # -- the transaction --------------------------------------------------------------------

    def _produce(self, topic: str, key: bytes | None, value: bytes | None, **extra: Any) -> None:
        while True:
            try:
                self.producer.produce(topic, key=key, value=value, **extra)
                return
            except BufferError:  # the local queue is full: let deliveries drain it
                self.producer.poll(0.05)
                self._check_broker()

    def _commit(self, batch: _Batch) -> None:
        if not batch.offsets:
            return
        # Target topics are checked (or created) before the transaction opens: a missing one
        # stops the bridge without leaving an open transaction that blocks read_committed
        # readers of the other targets until it times out.
        counts = {topic: self._ensure_topic(topic)
                  for topic in {output.schemas.topic for output, _ in batch.outputs}}
        self._finish()
        self.producer.begin_transaction()
        try:
            for output, source_partition in batch.outputs:
                topic = output.schemas.topic
                extra = ({} if output.key is not None
                         else {"partition": source_partition % counts[topic]})
                self._produce(topic, output.key, output.value, **extra)
            for message, reason in batch.dead:
                self._produce(str(self.options.dead_letter_topic), message.key(),
                              message.value(), headers=list(zip(DEAD_LETTER_HEADERS, (
                                  reason, message.topic(), str(message.partition()),
                                  str(message.offset())), strict=True)))
            offsets = [TopicPartition(self.options.source_topic, p, o)
                       for p, o in sorted(batch.offsets.items())]
            # Bounded by --broker-timeout: a broker lost mid-transaction stops the bridge
            # then (the transaction is aborted, or times out on the broker, unseen).
            wait = self.options.broker_timeout
            self.producer.send_offsets_to_transaction(
                offsets, self.consumer.consumer_group_metadata(), wait)
        except KafkaException as exc:
            self._abort(exc)
        self.in_flight = (self.committer.submit(self.producer.commit_transaction, wait), batch)

    def _finish(self) -> None:
        """Wait for the transaction in flight; count its batch once it is committed."""
        if self.in_flight is None:
            return
        future, batch = self.in_flight
        self.in_flight = None
        try:
            future.result()
        except KafkaException as exc:
            self._abort(exc)
        self.totals["converted"] += len(batch.outputs)
        self.totals["dead-lettered"] += len(batch.dead)
        self.totals["skipped"] += len(batch.skipped)
        self.metrics.consumed.inc(batch.sources)
        self.metrics.converted.inc(len(batch.outputs))
        self.metrics.dead_lettered.inc(len(batch.dead))
        for skipped in batch.skipped:
            self.metrics.skipped.labels(skipped["kind"]).inc()

    def _abort(self, exc: KafkaException) -> None:
        self.metrics.aborts.inc()
        try:
            self.producer.abort_transaction(min(30.0, self.options.broker_timeout))
        except KafkaException:
            pass  # the broker is gone: the transaction times out on its side, unseen
        self._raise_fatal()
        raise BridgeError(f"a transaction failed and was aborted ({exc.args[0].str()}): "
                          f"nothing of its batch is visible; restart the bridge to resume "
                          f"after the last committed offsets") from exc

    def _progress(self, rate: float) -> None:
        lag = []
        for tp in self.consumer.assignment():
            position = self.consumer.position([tp])[0].offset
            _low, high = self.consumer.get_watermark_offsets(tp, cached=True)
            if position >= 0 and high >= 0:
                self.metrics.lag.labels(str(tp.partition)).set(high - position)
                lag.append(f"p{tp.partition}={high - position}")
        pending = sum(len(q) for q in self.queues.values())
        totals = ", ".join(f"{name} {count}" for name, count in self.totals.items())
        _log(f"{rate:,.0f} msg/s; {totals}, pending {pending}, lag {' '.join(lag) or '-'}")
