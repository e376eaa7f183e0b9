"""`Transaction`: begin, produce outputs and dead letters, add offsets, commit in the
background or abort, against a fake producer."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException

from service.bridge.batch import Batch
from service.bridge.clients import KafkaClients
from service.bridge.errors import BridgeError
from service.bridge.health import KafkaHealth
from service.bridge.metrics import BridgeMetrics
from service.bridge.transaction import DEAD_LETTER_HEADERS, Transaction
from tests.bridge.unit.fakes import FakeProducer, clients, kafka_exception, options, output, record


def transaction(producer: FakeProducer, **overrides: object) -> tuple[Transaction, KafkaHealth]:
    opts = options(dead_letter_topic="dlt", broker_timeout=8.0, **overrides)
    health = KafkaHealth(opts)
    return Transaction(opts, clients=clients(producer=producer), health=health,
                       metrics=BridgeMetrics()), health


def a_batch() -> Batch:
    batch = Batch()
    batch.outputs += [(output("a", 0), 1), (output("a", 1, key=None), 5)]
    batch.dead.append((record(1, 7, b"{not json", key=b"k"), "not JSON"))
    batch.offsets.update({1: 8, 0: 3})
    batch.sources = 3
    return batch


def test_a_batch_is_produced_with_its_offsets_and_committed_in_the_background() -> None:
    producer = FakeProducer()
    tx, _health = transaction(producer)
    batch = a_batch()
    tx.commit(batch, partitions={"a": 3})
    assert tx.finish() is batch and tx.finish() is None
    assert [c[0] for c in producer.calls] == [
        "begin_transaction", "produce", "produce", "produce", "send_offsets_to_transaction",
        "commit_transaction"]
    assert producer.named("produce") == [
        ("a", {"key": b"k", "value": b"v0"}),
        ("a", {"key": None, "value": b"v1", "partition": 2}),  # keyless: source 5 % 3
        ("dlt", {"key": b"k", "value": b"{not json", "headers": list(zip(
            DEAD_LETTER_HEADERS, ("not JSON", "src", "1", "7"), strict=True))})]
    assert producer.named("send_offsets_to_transaction") == [
        ([("src", 0, 3), ("src", 1, 8)], "group-metadata", 8.0)]
    assert producer.named("commit_transaction") == [(8.0,)]
    tx.shutdown()


def test_a_full_local_queue_is_drained_then_produced_again() -> None:
    producer = FakeProducer(fail={"produce": BufferError()})
    tx, _health = transaction(producer)
    tx.commit(a_batch(), partitions={"a": 3})
    tx.finish()
    assert [c[0] for c in producer.calls][:4] == ["begin_transaction", "produce", "poll",
                                                  "produce"]
    assert len(producer.named("produce")) == 4
    tx.shutdown()


def test_a_failed_offset_commit_aborts_the_transaction() -> None:
    producer = FakeProducer(fail={"send_offsets_to_transaction": kafka_exception()})
    tx, _health = transaction(producer)
    tx.commit(a_batch(), partitions={"a": 3})  # the offsets are added with the commit
    with pytest.raises(BridgeError, match=r"^a transaction failed and was aborted \(.*\): "
                                          r"nothing of its batch is visible"):
        tx.finish()
    assert producer.named("commit_transaction") == []
    assert producer.named("abort_transaction") == [(8.0,)]
    assert tx.in_flight is None and tx.metrics.registry.get_sample_value(
        "flatavro_bridge_transaction_aborts_total") == 1
    tx.shutdown()


def test_a_failed_commit_aborts_when_finished_and_a_fatal_error_is_named() -> None:
    producer = FakeProducer(fail={"commit_transaction": kafka_exception(),
                                  "abort_transaction": kafka_exception()})
    tx, health = transaction(producer, kafka={"sasl.password": "secret"})
    tx.commit(a_batch(), partitions={"a": 3})
    health.on_error(KafkaError(KafkaError._FENCED, fatal=True))
    with pytest.raises(BridgeError, match=r"^Kafka: .* \(settings: \{'sasl.password': "
                                          r"'\*+'\}\)$"):
        tx.finish()
    assert producer.named("abort_transaction") == [(8.0,)]
    tx.shutdown()


def test_a_fenced_producer_stops_and_starts_no_new_one() -> None:
    """A newer copy with the same --instance-id fenced this one (a fatal error, before
    error_cb has told the health): a new producer would fence that copy in turn."""
    fenced = KafkaException(KafkaError(KafkaError._FENCED, fatal=True))
    producer = FakeProducer(fail={"send_offsets_to_transaction": fenced,
                                  "abort_transaction": fenced})
    renewed: list[FakeProducer] = []
    opts = options(dead_letter_topic="dlt", broker_timeout=8.0)
    made = clients(producer=producer)
    tx = Transaction(opts, clients=KafkaClients(made.admin, made.consumer, producer,
                                                renew=lambda: renewed.append(FakeProducer())),
                     health=KafkaHealth(opts), metrics=BridgeMetrics())
    tx.commit(a_batch(), partitions={"a": 3})
    with pytest.raises(BridgeError, match=r"^a transaction failed and was aborted \(.*\); "
                                          r"the abort failed too \(.*, _FENCED\): nothing of "
                                          r"its batch is visible; restart the bridge"):
        tx.finish()
    assert renewed == []
    tx.shutdown()


def test_transactions_that_cannot_start_stop_the_bridge() -> None:
    producer = FakeProducer(fail={"init_transactions": kafka_exception()})
    tx, _health = transaction(producer, start_timeout=2.0)
    with pytest.raises(BridgeError, match=r"^cannot start Kafka transactions at broker:9092: "
                                          r".*\(the bridge needs Kafka >= 2.5"):
        tx.init()
    assert producer.named("init_transactions") == [(2.0,)]
    tx.shutdown()
