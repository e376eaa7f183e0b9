"""`Topics`: the start-up checks of the source and dead-letter topics, target topics made
when asked to."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from service.bridge.errors import BridgeError
from service.bridge.health import KafkaHealth
from service.bridge.topics import Topics
from tests.bridge.unit.fakes import FakeAdmin, FakeFuture, kafka_exception, options


def topics(admin: FakeAdmin, **overrides: object) -> Topics:
    opts = options(**overrides)
    return Topics(opts, admin=admin, health=KafkaHealth(opts))


def test_the_source_topic_must_exist() -> None:
    with pytest.raises(BridgeError, match=r"^the source topic src does not exist at "
                                          r"broker:9092$"):
        topics(FakeAdmin({"other": 1})).start()


def test_a_broker_that_does_not_answer_stops_the_start() -> None:
    with pytest.raises(BridgeError, match=r"^the Kafka broker at broker:9092 does not answer "
                                          r"within 0.2 s"):
        topics(FakeAdmin(down=True), start_timeout=0.2).start()


def test_a_missing_target_topic_is_refused_or_created_like_the_source(
        capsys: pytest.CaptureFixture[str]) -> None:
    admin = FakeAdmin({"src": 3, "there": 1})
    refusing = topics(admin)
    refusing.start()
    assert refusing.ensure("there") == 1
    with pytest.raises(BridgeError, match=r"^the target topic new does not exist at "
                                          r"broker:9092: create it, or pass --create-topics$"):
        refusing.ensure("new")
    creating = topics(admin, create_topics=True, dead_letter_topic="dlt")
    creating.start()
    assert admin.created == [("dlt", 3)]
    assert creating.ensure("new") == 3 and creating.ensure("new") == 3
    assert admin.created == [("dlt", 3), ("new", 3)]
    assert "created topic new with 3 partition(s)" in capsys.readouterr().err


def test_a_topic_made_meanwhile_is_fine_and_another_failure_is_named() -> None:
    admin = FakeAdmin({"src": 2}, create_error=kafka_exception(KafkaError.TOPIC_ALREADY_EXISTS))
    made = topics(admin, create_topics=True)
    made.start()
    assert made.ensure("raced") == 2
    admin.create_error = kafka_exception(KafkaError.POLICY_VIOLATION)
    with pytest.raises(BridgeError, match=r"^cannot create topic other: "):
        made.ensure("other")


def test_a_target_topic_a_restarting_broker_cannot_place_yet_is_asked_again() -> None:
    """KRaft answers "All brokers are currently fenced" (INVALID_REPLICATION_FACTOR) while
    the only broker restarts: created again each second within --broker-timeout."""
    fenced = KafkaException(KafkaError(KafkaError.INVALID_REPLICATION_FACTOR,
                                       "All brokers are currently fenced."))
    admin = FakeAdmin({"src": 2}, create_error=fenced)
    opts = options(broker_timeout=1.5, create_topics=True)
    topics = Topics(opts, admin=admin, health=KafkaHealth(opts))
    topics.start()
    with pytest.raises(BridgeError, match="^cannot create topic out: All brokers are currently"):
        topics.ensure("out")
    assert len(admin.created) >= 2


def test_a_creation_without_an_answer_is_asked_again_then_named() -> None:
    """A broker under load or restarting does not answer CreateTopics in time: asked again
    (the topic may exist by then) within --broker-timeout, then one line naming it."""
    from concurrent.futures import TimeoutError as FutureTimeout

    class Silent(FakeFuture):
        def result(self, timeout: float) -> None:
            raise FutureTimeout

    @dataclass
    class SilentOnce(FakeAdmin):
        silent: bool = False  # every creation unanswered, not only the first

        def create_topics(self, topics: list[Any]) -> dict[str, FakeFuture]:
            made = super().create_topics(topics)
            silent = len(self.created) == 1 or self.silent
            return {name: Silent() if silent else future for name, future in made.items()}

    admin = SilentOnce({"src": 2})
    made = topics(admin, create_topics=True, broker_timeout=1.5)
    made.start()
    assert made.ensure("out") == 2 and [t for t, _ in admin.created] == ["out", "out"]
    admin.silent = True
    with pytest.raises(BridgeError, match=r"^cannot create topic late: the broker did not "
                                          r"answer within --broker-timeout 1.5 s$"):
        made.ensure("late")


@pytest.mark.parametrize("code", [KafkaError._DESTROY_BROKER, KafkaError._ALL_BROKERS_DOWN,
                                  KafkaError._TRANSPORT])
def test_a_creation_cut_by_a_broker_going_away_is_asked_again(code: int) -> None:
    """A cluster node killed while it handled CreateTopics ("Broker handle destroyed without
    termination", seen in a test run): asked again, and the topic made."""
    @dataclass
    class FailingOnce(FakeAdmin):
        def create_topics(self, topics: list[Any]) -> dict[str, FakeFuture]:
            self.create_error = kafka_exception(code) if not self.created else None
            return super().create_topics(topics)

    admin = FailingOnce({"src": 2})
    made = topics(admin, create_topics=True, broker_timeout=5.0)
    made.start()
    assert made.ensure("out") == 2 and [t for t, _ in admin.created] == ["out", "out"]
