"""--broker-timeout is what the bridge says and does: a retriable failure of the offset send or
the commit (a broker restarting) is retried within it, a target topic looked up mid-run waits
for it (not the 15 s start-up bound: the paper cut "retrying for 60 s, exits after 15 s"),
and every Kafka call goes through the watchdog."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import KafkaError, KafkaException

from service.bridge.clients import watched
from service.bridge.errors import BridgeError
from service.bridge.health import KafkaHealth
from service.bridge.metrics import BridgeMetrics
from service.bridge.topics import Topics
from service.bridge.transaction import Transaction
from service.bridge.watchdog import Watchdog
from tests.bridge.unit.fakes import FakeAdmin, FakeProducer, clients, options, output


def retriable() -> KafkaException:
    return KafkaException(KafkaError(KafkaError._TIMED_OUT, "coordinator gone",
                                     retriable=True))


def test_retriable_failures_of_offsets_and_commit_are_retried_within_the_timeout(
        capsys: pytest.CaptureFixture[str]) -> None:
    from service.bridge.batch import Batch

    producer = FakeProducer(fail={"send_offsets_to_transaction": retriable(),
                                  "commit_transaction": retriable()})
    opts = options(broker_timeout=20.0)
    tx = Transaction(opts, clients=clients(producer=producer), health=KafkaHealth(opts),
                     metrics=BridgeMetrics())
    batch = Batch()
    batch.outputs.append((output("a", 0), 0))
    batch.offsets[0] = 1
    tx.commit(batch, partitions={"a": 1})
    assert tx.finish() is batch
    assert len(producer.named("send_offsets_to_transaction")) == 2
    assert len(producer.named("commit_transaction")) == 2
    assert producer.named("abort_transaction") == []
    err = capsys.readouterr().err
    assert "send_offsets_to_transaction: coordinator gone; retrying for at most " in err
    assert "of --broker-timeout 20 s" in err
    tx.shutdown()


def test_a_failure_that_needs_an_abort_is_not_retried() -> None:
    from service.bridge.batch import Batch

    abortable = KafkaException(KafkaError(KafkaError._TIMED_OUT, "fenced", retriable=True,
                                          txn_requires_abort=True))
    producer = FakeProducer(fail={"send_offsets_to_transaction": abortable})
    opts = options(broker_timeout=20.0)
    tx = Transaction(opts, clients=clients(producer=producer), health=KafkaHealth(opts),
                     metrics=BridgeMetrics())
    batch = Batch()
    batch.offsets[0] = 1
    tx.commit(batch, partitions={})  # the offsets are added with the commit, in its thread
    with pytest.raises(BridgeError, match="a transaction failed and was aborted"):
        tx.finish()
    assert len(producer.named("send_offsets_to_transaction")) == 1
    assert producer.named("commit_transaction") == []
    tx.shutdown()


def test_a_target_topic_looked_up_mid_run_waits_the_broker_timeout_it_announced(
        capsys: pytest.CaptureFixture[str]) -> None:
    opts = options(broker_timeout=1.5, start_timeout=0.2, create_topics=True)
    health = KafkaHealth(opts)
    health.on_error(KafkaError(KafkaError._ALL_BROKERS_DOWN))
    assert "retrying for 1.5 s" in capsys.readouterr().err
    topics = Topics(opts, admin=FakeAdmin(down=True), health=health)
    began = time.monotonic()
    with pytest.raises(BridgeError, match=r"^the Kafka broker at broker:9092 does not answer "
                                          r"within --broker-timeout 1.5 s \("):
        topics.ensure("new_target")
    assert time.monotonic() - began >= 1.5  # not the 0.2 s of the start-up bound


def test_every_call_on_the_clients_is_watched_while_it_runs() -> None:
    from service.bridge.batch import Batch

    watchdog = Watchdog(20.0)
    seen: list[list[str]] = []

    class Recording(FakeProducer):
        def _call(self, name: str, *args: object) -> None:
            seen.append([label for label, _since in watchdog.calls.values()])
            super()._call(name, *args)

    made = watched(clients(producer=Recording()), watchdog)  # the admin's and the consumer's
    opts = options(broker_timeout=20.0)
    tx = Transaction(opts, clients=made, health=KafkaHealth(opts), metrics=BridgeMetrics(),
                     watchdog=watchdog)  # the producer's calls: watched by the transaction
    batch = Batch()
    batch.offsets[0] = 1
    tx.commit(batch, partitions={})
    tx.finish()
    tx.shutdown()
    assert seen == [["producer.begin_transaction"], ["producer.send_offsets_to_transaction"],
                    ["producer.commit_transaction"]]
    assert watchdog.calls == {}
