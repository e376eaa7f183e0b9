"""`KafkaHealth`: fatal errors, consumer errors logged once, a lost broker probed after
``broker_timeout``."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, Message

from service.bridge.errors import BridgeError
from service.bridge.health import KafkaHealth
from service.bridge.source import SourceRecord
from tests.bridge.unit.fakes import Clock, FakeAdmin, options


def test_a_fatal_error_stops_the_bridge_naming_the_redacted_settings() -> None:
    health = KafkaHealth(options(kafka={"sasl.password": "hunter2"}))
    health.raise_fatal()  # nothing yet
    health.on_error(KafkaError(KafkaError.SASL_AUTHENTICATION_FAILED))
    with pytest.raises(BridgeError, match=r"^Kafka: .* \(settings: \{'sasl.password': "
                                          r"'\*+'\}\)$") as caught:
        health.raise_fatal()
    assert "hunter2" not in str(caught.value)


def test_all_brokers_down_is_logged_once_and_probed_after_the_timeout(
        capsys: pytest.CaptureFixture[str]) -> None:
    clock, admin = Clock(100.0), FakeAdmin(down=True)
    health = KafkaHealth(options(broker_timeout=8.0), clock=clock)
    health.on_error(KafkaError(KafkaError._ALL_BROKERS_DOWN))
    clock.now = 103.0
    health.on_error(KafkaError(KafkaError._ALL_BROKERS_DOWN))
    assert health.down_since == 100.0
    assert capsys.readouterr().err.count("lost the Kafka broker at broker:9092") == 1
    clock.now = 107.9
    health.check(admin)  # not yet: no probe
    clock.now = 108.0
    with pytest.raises(BridgeError, match=r"^lost the Kafka broker at broker:9092: no answer "
                                          r"for 8 s \(.*\); everything converted so far is "
                                          r"committed"):
        health.check(admin)
    admin.down = False
    health.check(admin)
    assert health.down_since is None
    assert "answers again" in capsys.readouterr().err


def test_messages_arriving_mean_the_broker_answers() -> None:
    health = KafkaHealth(options(), clock=Clock())
    health.on_error(KafkaError(KafkaError._ALL_BROKERS_DOWN))
    health.heard()
    assert health.down_since is None


def test_consumed_errors_are_logged_once_per_kind_and_fatal_ones_stop(
        capsys: pytest.CaptureFixture[str]) -> None:
    health = KafkaHealth(options())
    transient = Message(error=KafkaError(KafkaError._TRANSPORT))
    good = Message(topic="src", partition=1, offset=5, key=None, value=b"v")
    assert health.records([transient, good, transient]) == [
        SourceRecord("src", 1, 5, None, b"v")]
    assert capsys.readouterr().err.count("bridge: consumer:") == 1
    fatal = Message(topic="src", partition=2, error=KafkaError(
        KafkaError.TOPIC_AUTHORIZATION_FAILED))
    with pytest.raises(BridgeError, match=r"^Kafka: .*\(topic src, partition 2\)$"):
        health.records([fatal])
    assert health.fatal is not None
