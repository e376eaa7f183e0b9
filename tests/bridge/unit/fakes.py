"""Small stand-ins for the bridge's unit tests: confluent_kafka's Producer, Consumer and
AdminClient as far as the bridge uses them, a scripted `Converter`, and a settable clock."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from service.bridge.clients import KafkaClients
from service.bridge.options import BridgeOptions
from service.bridge.source import SourceRecord
from service.cdc.catalog import Protocol
from service.cdc.events import EventKind, Pending
from service.codec.convert import (
    Converted,
    ConvertInput,
    MessageProblem,
    Output,
    Skipped,
    Unconvertible,
)
from service.core.errors import InvalidInputError

SOURCE = "src"


def options(**overrides: Any) -> BridgeOptions:
    """Bridge options for a Canal-JSON source topic `src` (no broker is contacted)."""
    values: dict[str, Any] = {"protocol": Protocol.CANAL_JSON, "source_topic": SOURCE,
                              "bootstrap_servers": "broker:9092", "group_id": "g",
                              "instance_id": "one", "progress_seconds": 5.0}
    return BridgeOptions(**{**values, **overrides})


def record(partition: int, offset: int, value: bytes = b"ok",
           key: bytes | None = None) -> SourceRecord:
    """A source record of topic `src`."""
    return SourceRecord(SOURCE, partition, offset, key, value)


class Clock:
    """A clock the test moves."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def kafka_exception(code: int = KafkaError._TRANSPORT) -> KafkaException:
    """A KafkaException as librdkafka raises it."""
    return KafkaException(KafkaError(code))


@dataclass
class FakeProducer:
    """Records every call; `fail` maps a method name to the exception it raises once."""

    calls: list[tuple[Any, ...]] = field(default_factory=list)
    fail: dict[str, BaseException] = field(default_factory=dict)

    def _call(self, name: str, *args: Any) -> None:
        self.calls.append((name, *args))
        if name in self.fail:
            raise self.fail.pop(name)

    def init_transactions(self, timeout: float) -> None:
        self._call("init_transactions", timeout)

    def begin_transaction(self) -> None:
        self._call("begin_transaction")

    def produce(self, topic: str, **kwargs: Any) -> None:
        self._call("produce", topic, kwargs)

    def poll(self, timeout: float) -> int:
        self._call("poll", timeout)
        return 0

    def send_offsets_to_transaction(self, offsets: list[TopicPartition], metadata: Any,
                                    timeout: float) -> None:
        self._call("send_offsets_to_transaction",
                   [(tp.topic, tp.partition, tp.offset) for tp in offsets], metadata, timeout)

    def commit_transaction(self, timeout: float) -> None:
        self._call("commit_transaction", timeout)

    def abort_transaction(self, timeout: float) -> None:
        self._call("abort_transaction", timeout)

    def named(self, name: str) -> list[tuple[Any, ...]]:
        """The calls of one method, without its name."""
        return [c[1:] for c in self.calls if c[0] == name]


@dataclass
class FakeConsumer:
    """A consumer whose polls return scripted messages; it assigns every partition of
    `assigned` when subscribing and reports positions and high watermarks. It stands for
    the new consumers the bridge makes too (`clients`): `joins` counts the subscriptions,
    `closes` the times a consumer left the group."""

    polls: list[list[Any]] = field(default_factory=list)
    assigned: list[int] = field(default_factory=list)
    positions: dict[int, int] = field(default_factory=dict)
    highs: dict[int, int] = field(default_factory=dict)
    group_offsets: dict[int, int] = field(default_factory=dict)  # committed by the group
    joins: int = 0
    closes: int = 0

    def subscribe(self, topics: list[str], *, on_assign: Callable[..., None],
                  on_revoke: Callable[..., None], on_lost: Callable[..., None]) -> None:
        self.on_revoke, self.on_lost = on_revoke, on_lost
        self.joins += 1
        on_assign(self, [TopicPartition(topics[0], p) for p in self.assigned])

    def __post_init__(self) -> None:
        """A partition's high watermark, unless given: the end of its scripted messages."""
        for poll in self.polls:
            for message in poll:
                if message.error() is None:
                    self.highs[message.partition()] = max(
                        self.highs.get(message.partition(), 0), message.offset() + 1)
        for partition in self.assigned:
            self.highs.setdefault(partition, 0)

    def consume(self, num_messages: int, timeout: float) -> list[Any]:
        poll = self.polls.pop(0) if self.polls else []
        for message in poll:
            if message.error() is None:
                self.positions[message.partition()] = message.offset() + 1
        return poll

    def committed(self, partitions: list[TopicPartition], timeout: float
                  ) -> list[TopicPartition]:
        return [TopicPartition(tp.topic, tp.partition, self.group_offsets.get(tp.partition, -1001))
                for tp in partitions]

    def consumer_group_metadata(self) -> str:
        return "group-metadata"

    def assignment(self) -> list[TopicPartition]:
        return [TopicPartition(SOURCE, p) for p in self.assigned]

    def position(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        return [TopicPartition(tp.topic, tp.partition, self.positions.get(tp.partition, -1001))
                for tp in partitions]

    def get_watermark_offsets(self, tp: TopicPartition, timeout: float | None = None,
                              cached: bool = False) -> tuple[int, int]:
        return 0, self.highs.get(tp.partition, -1)

    def close(self) -> None:
        self.closes += 1


class FakeFuture:
    """A CreateTopics future: done, or failing with `error`."""

    def __init__(self, error: KafkaException | None = None) -> None:
        self.error = error

    def result(self, timeout: float) -> None:
        if self.error is not None:
            raise self.error


@dataclass
class FakeAdmin:
    """An admin client listing `topics` (name -> partitions); `down` makes it fail."""

    topics: dict[str, int] = field(default_factory=dict)
    down: bool = False
    created: list[tuple[str, int]] = field(default_factory=list)
    create_error: KafkaException | None = None

    def list_topics(self, timeout: float) -> Any:
        if self.down:
            raise kafka_exception(KafkaError._TRANSPORT)
        return SimpleNamespace(topics={
            name: SimpleNamespace(partitions=dict.fromkeys(range(count)), error=None)
            for name, count in self.topics.items()})

    def poll(self, timeout: float) -> int:
        return 0

    def create_topics(self, topics: list[Any]) -> dict[str, FakeFuture]:
        for topic in topics:
            self.created.append((topic.topic, topic.num_partitions))
            if self.create_error is None:
                self.topics[topic.topic] = topic.num_partitions
        return {t.topic: FakeFuture(self.create_error) for t in topics}


def clients(admin: FakeAdmin | None = None, consumer: FakeConsumer | None = None,
            producer: FakeProducer | None = None) -> KafkaClients:
    """Kafka clients made of fakes; a new consumer is the same fake (it goes on with its
    script)."""
    consumer = consumer or FakeConsumer()
    return KafkaClients(admin or FakeAdmin({SOURCE: 2}), consumer, producer or FakeProducer(),
                        renew_consumer=lambda: consumer)


def output(topic: str, source_index: int, key: bytes | None = b"k") -> Output:
    """A converted message to `topic` (only its topic is read of its schemas)."""
    schemas: Any = SimpleNamespace(topic=topic)
    return Output(schemas, 1, source_index, "insert", key, b"v%d" % source_index)


Script = Callable[[list[bytes | None]], Converted | Unconvertible]


class FakeConverter:
    """A converter that answers by the values it is given: ``ok`` converts into one
    message of topic ``out``, ``skip`` is a skipped DDL, ``pending`` is pending, ``bad`` is
    unconvertible ("bad value"), ``refused`` makes the registry refuse the batch and
    ``down`` makes the registry fail. `calls` lists the values of each call."""

    def __init__(self) -> None:
        self.calls: list[list[bytes | None]] = []

    async def attempt(self, protocol: Protocol, request: ConvertInput
                      ) -> Converted | Unconvertible:
        values = [value for _, value in request.messages]
        assert all(isinstance(v, bytes) for v in values) and request.encoding == "raw"
        self.calls.append(values)
        return answer(values)


def answer(values: list[bytes]) -> Converted | Unconvertible:
    """What `FakeConverter` answers for these values."""
    from service.registry.errors import IncompatibleSchemaError, RegistryUnavailableError

    if b"down" in values:
        raise RegistryUnavailableError("the registry is down")
    if b"refused" in values:
        raise IncompatibleSchemaError("name: VARCHAR -> INT is not BACKWARD compatible")
    problems = tuple(MessageProblem(i, InvalidInputError("bad value"))
                     for i, v in enumerate(values) if v == b"bad")
    if problems:
        return Unconvertible(problems)
    outputs = [output("out", i) for i, v in enumerate(values) if v == b"ok"]
    skipped = [Skipped(i, EventKind.DDL, "shop", "t", 1, "a DDL")
               for i, v in enumerate(values) if v == b"skip"]
    pending = [Pending(i, "shop", "t", 7, "unknown version")
               for i, v in enumerate(values) if v == b"pending"]
    return Converted(outputs, skipped, pending)
