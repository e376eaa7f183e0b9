"""`Bridge` composing its parts, with fake Kafka clients and a scripted converter: a poll
converted and committed, a held partition retried then dead-lettered or stopped at, a bad
message stopping after what came before it is committed, a revoked partition forgotten."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from confluent_kafka import KafkaError, Message, TopicPartition

from service.bridge.bridge import Bridge
from service.bridge.errors import BridgeStopped
from service.codec.convert import Converted, MessageProblem, Unconvertible
from service.core.errors import InvalidInputError
from tests.bridge.unit.fakes import (
    SOURCE,
    Clock,
    FakeAdmin,
    FakeConsumer,
    FakeConverter,
    FakeProducer,
    answer,
    clients,
    kafka_exception,
    options,
    record,
)


def message(partition: int, offset: int, value: bytes) -> Message:
    return Message(topic=SOURCE, partition=partition, offset=offset, key=None, value=value)


class Draining(FakeConsumer):
    """A consumer that sets `stop` once its scripted polls are used up."""

    def __init__(self, stop: threading.Event, **script: Any) -> None:
        super().__init__(**script)
        self.stop = stop

    def consume(self, num_messages: int, timeout: float) -> list[Any]:
        if not self.polls:
            self.stop.set()
        return super().consume(num_messages, timeout)


def bridge(converter: FakeConverter | None = None, *, consumer: FakeConsumer | None = None,
           clock: Clock | None = None, **overrides: Any) -> tuple[Bridge, FakeProducer]:
    producer = FakeProducer()
    made = Bridge(options(**overrides), converter or FakeConverter(),
                  clock=clock or Clock(),
                  clients=clients(FakeAdmin({SOURCE: 2, "out": 2, "dlt": 2}),
                                  consumer or FakeConsumer(assigned=[0, 1]), producer))
    return made, producer


def committed_offsets(producer: FakeProducer) -> list[list[tuple[str, int, int]]]:
    return [call[0] for call in producer.named("send_offsets_to_transaction")]


def test_a_run_converts_commits_and_exits_when_idle(capsys: pytest.CaptureFixture[str]) -> None:
    consumer = FakeConsumer(assigned=[0, 1], polls=[[
        message(0, 0, b"ok"), message(1, 0, b"skip"), message(0, 1, b"ok")]])
    made, producer = bridge(consumer=consumer, exit_when_idle=0.0)
    asyncio.run(made.run(threading.Event()))
    assert producer.named("init_transactions") == [(15.0,)]
    assert [c[0] for c in producer.named("produce")] == ["out", "out"]
    assert committed_offsets(producer) == [[(SOURCE, 0, 2), (SOURCE, 1, 1)]]
    assert producer.named("commit_transaction") == [(60.0,)]
    assert made.progress.totals == {"converted": 2, "dead-lettered": 0, "skipped": 1}
    assert consumer.closes == 1 and "idle for 0 s: exiting" in capsys.readouterr().err


def test_idle_means_read_to_the_end_not_a_slow_first_fetch() -> None:
    """Empty polls while a partition has messages left (its position below its high
    watermark: a slow first fetch after a restart) do not count as idle."""
    consumer = FakeConsumer(assigned=[0, 1], polls=[[], [], [message(0, 0, b"ok")]])
    made, producer = bridge(consumer=consumer, exit_when_idle=0.0)
    asyncio.run(made.run(threading.Event()))
    assert [c[0] for c in producer.named("produce")] == ["out"]
    assert committed_offsets(producer) == [[(SOURCE, 0, 1)]]


def test_idle_waits_for_a_partition_assigned_elsewhere_to_be_committed_to_its_end() -> None:
    """Partition 1 is not this copy's (a killed copy's session has not expired yet) and has
    5 messages the group has not committed: not idle until the group commits them."""

    class Elsewhere(FakeConsumer):
        def consume(self, num_messages: int, timeout: float) -> list[Any]:
            self.polled = getattr(self, "polled", 0) + 1
            if self.polled == 4:  # the other copy commits partition 1 to its end
                self.group_offsets[1] = 5
            return super().consume(num_messages, timeout)

    consumer = Elsewhere(assigned=[0], highs={1: 5}, polls=[[message(0, 0, b"ok")]])
    made, _producer = bridge(consumer=consumer, exit_when_idle=0.0)
    asyncio.run(made.run(threading.Event()))
    assert consumer.polled == 4


def test_a_held_partition_is_retried_then_its_first_message_dead_lettered() -> None:
    clock = Clock(100.0)
    converter = FakeConverter()
    made, producer = bridge(converter, clock=clock, dead_letter_topic="dlt",
                            pending_timeout=2.0)
    fresh = [record(0, 0), record(0, 1, b"pending"), record(0, 2)]
    assert asyncio.run(made._process(fresh)) == 1  # offset 0 committed, 1 and 2 held
    assert made.queues.held_since == {0: (1, 100.0)} and made.queues.pending == 2
    assert asyncio.run(made._process([])) == 0  # converted once more: still held
    assert asyncio.run(made._process([])) == 0  # unchanged: not converted again
    assert len(converter.calls) == 2
    clock.now = 102.0
    assert asyncio.run(made._process([])) == 2  # overdue: 1 set aside, 2 converted
    made._finish()
    assert converter.calls[-1] == [b"ok"]
    assert committed_offsets(producer) == [[(SOURCE, 0, 1)], [(SOURCE, 0, 3)]]
    [dead] = [c for c in producer.named("produce") if c[0] == "dlt"]
    assert dead[1]["value"] == b"pending" and (
        "flatavro.reason", "its table schema did not arrive within --pending-timeout 2 s"
    ) in dead[1]["headers"]
    assert made.queues.pending == 0 and made.progress.totals["dead-lettered"] == 1


def test_a_partition_held_too_long_without_a_dead_letter_topic_stops_the_bridge() -> None:
    clock = Clock(100.0)
    made, _producer = bridge(clock=clock, pending_timeout=2.0)
    asyncio.run(made._process([record(0, 4, b"pending")]))
    clock.now = 102.5
    with pytest.raises(BridgeStopped, match=r"^partition 0 offset 4: its table schema did not "
                                            r"arrive within --pending-timeout 2 s \(pass "
                                            r"--dead-letter-topic to set such messages "
                                            r"aside\)$"):
        asyncio.run(made._process([]))


def test_a_bad_message_stops_after_committing_what_came_before_it() -> None:
    made, producer = bridge()
    fresh = [record(0, 0), record(0, 1), record(0, 2, b"bad"), record(0, 3), record(1, 0)]
    with pytest.raises(BridgeStopped, match=r"^partition 0 offset 2: bad value; everything "
                                            r"before it is committed"):
        asyncio.run(made._process(fresh))
    assert committed_offsets(producer) == [[(SOURCE, 0, 2), (SOURCE, 1, 1)]]
    assert producer.named("commit_transaction") and made.transaction.in_flight is None


def test_a_stop_names_the_last_bad_message_found_while_cutting_back() -> None:
    class Later(FakeConverter):
        """``late`` is unconvertible only in a batch without a ``bad`` one (found later)."""

        async def attempt(self, protocol: Any, request: Any
                          ) -> Converted | Unconvertible:
            values = [v for _, v in request.messages]
            self.calls.append(values)
            if b"bad" not in values and b"late" in values:
                return Unconvertible(tuple(MessageProblem(i, InvalidInputError("late one"))
                                           for i, v in enumerate(values) if v == b"late"))
            return answer([b"ok" if v == b"late" else v for v in values])

    converter = Later()
    made, producer = bridge(converter)
    with pytest.raises(BridgeStopped, match=r"^partition 0 offset 1: late one;"):
        asyncio.run(made._process([record(0, 0), record(0, 1, b"late"), record(0, 2),
                                   record(0, 3, b"bad")]))
    assert converter.calls == [[b"ok", b"late", b"ok", b"bad"], [b"ok", b"late", b"ok"],
                               [b"ok"]]
    assert committed_offsets(producer) == [[(SOURCE, 0, 1)]]


def test_bad_messages_go_to_the_dead_letter_topic_with_a_dead_letter_topic() -> None:
    made, producer = bridge(dead_letter_topic="dlt")
    assert asyncio.run(made._process([record(1, 5, b"bad"), record(1, 6)])) == 2
    made._finish()
    assert [c[0] for c in producer.named("produce")] == ["out", "dlt"]
    assert committed_offsets(producer) == [[(SOURCE, 1, 7)]]


def test_revoked_partitions_finish_the_commit_in_flight_and_are_forgotten() -> None:
    made, producer = bridge(dead_letter_topic="dlt")
    asyncio.run(made._process([record(0, 0), record(0, 1, b"pending"), record(1, 0)]))
    assert made.transaction.in_flight is not None
    made._revoked([TopicPartition(SOURCE, 0)])
    assert made.transaction.in_flight is None and made.progress.totals["converted"] == 2
    assert made.queues.pending == 0 and made.queues.held_since == {}


def test_an_aborted_transaction_is_read_again_from_the_committed_offsets(
        capsys: pytest.CaptureFixture[str]) -> None:
    """A commit failing under a broker restart: the transaction is aborted, the consumer
    leaves the group and a new one joins (it starts at the committed offsets), and the
    messages read again are committed once."""
    stop = threading.Event()

    again = [message(0, 5, b"ok")]
    consumer = Draining(stop, assigned=[0, 1], polls=[again, [], again, []])
    producer = FakeProducer(fail={"commit_transaction": kafka_exception(KafkaError._STATE)})
    made = Bridge(options(), FakeConverter(), clock=Clock(),
                  clients=clients(FakeAdmin({SOURCE: 2, "out": 2}), consumer, producer))
    asyncio.run(made.run(stop))
    assert (consumer.joins, consumer.closes) == (2, 2)  # joined again; left, and at the end
    assert len(producer.named("abort_transaction")) == 1
    assert committed_offsets(producer) == [[(SOURCE, 0, 6)], [(SOURCE, 0, 6)]]
    assert len(producer.named("commit_transaction")) == 2
    assert made.progress.totals["converted"] == 1
    assert ("a transaction failed and was aborted (Local: Erroneous state): nothing of its "
            "batch is visible; converting its messages again from the last committed offsets"
            in capsys.readouterr().err)


def test_lost_partitions_are_read_again_by_a_new_consumer(
        capsys: pytest.CaptureFixture[str]) -> None:
    """The session expired (a broker restarting): the poll that reports the lost partitions
    is not converted (librdkafka may have fetched it for partitions no longer owned); the
    consumer leaves the group, a new one joins and what it reads is committed once."""
    stop = threading.Event()

    class Losing(Draining):
        def consume(self, num_messages: int, timeout: float) -> list[Any]:
            if self.joins == 1:
                self.on_lost(self, [TopicPartition(SOURCE, 0)])
            return super().consume(num_messages, timeout)

    stale, again = [message(0, 5, b"ok")], [message(0, 5, b"ok")]
    consumer, converter = Losing(stop, assigned=[0], polls=[stale, again, []]), FakeConverter()
    producer = FakeProducer()
    made = Bridge(options(), converter, clock=Clock(),
                  clients=clients(FakeAdmin({SOURCE: 2, "out": 2}), consumer, producer))
    asyncio.run(made.run(stop))
    assert (consumer.joins, consumer.closes) == (2, 2)
    assert converter.calls == [[b"ok"]] and len(producer.named("produce")) == 1
    assert committed_offsets(producer) == [[(SOURCE, 0, 6)]]
    assert ("the consumer group took this copy's partitions (its session expired): leaving "
            "the consumer group and joining it again with a new consumer, from the committed "
            "offsets" in capsys.readouterr().err)


def test_a_join_that_does_not_end_within_the_broker_timeout_is_made_again(
        capsys: pytest.CaptureFixture[str]) -> None:
    """No assignment (not even an empty one) --broker-timeout after joining the group: the
    coordinator is out of librdkafka's reach; a new consumer joins, and converts."""
    stop, clock = threading.Event(), Clock()

    class Silent(Draining):
        def subscribe(self, topics: list[str], **callbacks: Any) -> None:
            if self.joins == 0:
                self.joins += 1  # joined, but the assignment never comes
            else:
                super().subscribe(topics, **callbacks)

        def consume(self, num_messages: int, timeout: float) -> list[Any]:
            clock.now += 4.0
            return super().consume(num_messages, timeout) if self.joins > 1 else []

    consumer = Silent(stop, assigned=[0], polls=[[message(0, 5, b"ok")], []])
    producer = FakeProducer()
    made = Bridge(options(broker_timeout=10.0), FakeConverter(), clock=clock,
                  clients=clients(FakeAdmin({SOURCE: 2, "out": 2}), consumer, producer))
    asyncio.run(made.run(stop))
    assert (consumer.joins, consumer.closes) == (2, 2)
    assert committed_offsets(producer) == [[(SOURCE, 0, 6)]]
    assert ("joining the consumer group did not end within --broker-timeout 10 s: leaving "
            "the consumer group and joining it again" in capsys.readouterr().err)


def test_a_transactional_call_that_never_returns_gives_up_its_producer_and_goes_on(
        capsys: pytest.CaptureFixture[str]) -> None:
    """librdkafka#5456/#5511: send_offsets_to_transaction never returns. It is given up 2 s
    after its timeout with its producer (no abort is tried on it: a call is still running in
    it); a new producer of the same transactional id starts transactions, a new consumer
    joins the group from the committed offsets and the batch is committed once through the
    new producer."""
    stop, release = threading.Event(), threading.Event()

    class Stuck(FakeProducer):
        def send_offsets_to_transaction(self, offsets: list[TopicPartition], metadata: Any,
                                        timeout: float) -> None:
            super().send_offsets_to_transaction(offsets, metadata, timeout)
            release.wait()

    again = [message(0, 5, b"ok")]
    consumer = Draining(stop, assigned=[0], polls=[again, [], again, []])
    stuck, fresh = Stuck(), FakeProducer()
    renewed = clients(FakeAdmin({SOURCE: 2, "out": 2}), consumer, stuck)
    renewed.renew = lambda: fresh
    made = Bridge(options(broker_timeout=1.0), FakeConverter(), clock=Clock(), clients=renewed)
    try:
        asyncio.run(made.run(stop))
    finally:
        release.set()
    assert stuck.named("abort_transaction") == [] and stuck.named("commit_transaction") == []
    assert [c[0] for c in fresh.calls] == ["init_transactions", "begin_transaction", "produce",
                                           "send_offsets_to_transaction", "commit_transaction"]
    assert consumer.joins == 2
    assert committed_offsets(fresh) == [[(SOURCE, 0, 6)]]
    assert made.progress.totals["converted"] == 1 and made.transaction.given_up == [stuck]
    err = capsys.readouterr().err
    assert ("a transaction failed and was aborted (send_offsets_to_transaction did not return "
            "within 1 s (librdkafka#5456); the producer is given up); starting a new "
            "transactional producer (the same transactional id: the broker ends the open "
            "transaction first)") in err
    assert "converting its messages again from the last committed offsets" in err
