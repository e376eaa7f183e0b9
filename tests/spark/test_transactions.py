"""Both jobs read only what Kafka transactions committed (``isolation.level=read_committed``).

The bridge writes each poll batch in one transaction; when it dies mid-transaction the broker
keeps the messages it had produced, and a ``read_uncommitted`` reader (the Java client's
default) reads them as well as their copies in the bridge's next transaction: a keyless
table would hold those rows twice. Here a real transactional producer aborts one
transaction and commits the next; the stream's table and the bulk read hold the committed
rows only, once each."""

from __future__ import annotations

from pathlib import Path

import httpx
from confluent_kafka import Producer
from pyspark.sql import SparkSession

from spark_jobs.jobs import bulk_read, stream
from tests.spark.test_bulk_read import encode, job, read_output, register, service  # noqa: F401
from tests.spark.test_stream import create_topic, table
from tests.spark.test_stream import stream as stream_config
from tests.support.parts import Broker


def rows(note: str, ids: range) -> list[dict[str, object]]:
    return [{"op": "insert", "row": {"id": i, "note": note}} for i in ids]


def test_an_aborted_transaction_is_in_neither_the_stream_nor_the_bulk_read(
        spark: SparkSession, kafka: Broker, service: httpx.Client,  # noqa: F811
        tmp_path: Path) -> None:
    topic = "txn_log"
    create_topic(kafka, topic, 1)
    register(service, "CREATE TABLE shop.log (id INT, note VARCHAR(20))", topic)
    producer = Producer({"bootstrap.servers": kafka.bootstrap, "linger.ms": 0,
                         "transactional.id": "flatavro-test-txn"})
    producer.init_transactions(30)
    for note, ids, commit in (("aborted", range(1, 4), False),
                              ("committed", range(4, 7), True)):
        producer.begin_transaction()
        for key, value in encode(service, topic, rows(note, ids)):
            producer.produce(topic, key=key, value=value, partition=0)
        assert producer.flush(30) == 0
        (producer.commit_transaction if commit else producer.abort_transaction)(30)
    want = [(i, "committed") for i in range(4, 7)]

    config = stream_config(tmp_path, kafka, service, topic)
    stream.run(spark, config)
    assert sorted(tuple(r) for r in table(spark, config).select("id", "note").collect()) == want

    bulk_read.run(spark, job(tmp_path, kafka, service, topic))
    got = read_output(spark, str(tmp_path / "out")).select("id", "note").collect()
    assert sorted(tuple(r) for r in got) == want
