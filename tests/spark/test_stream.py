"""The streaming job end to end: changes encoded by the service, produced to a real broker over
3 partitions, applied by Structured Streaming (the real spark-sql-kafka and spark-avro jars) to
a real Delta table, read back by Spark and by delta-rs."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from deltalake import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.testing import assertDataFrameEqual

from service.core.framing import frame, unframe
from spark_jobs.errors import JobError
from spark_jobs.jobs.stream import run
from spark_jobs.settings.config import Mode, StreamConfig, Trigger
from tests.spark.test_bulk_read import encode, register, service  # noqa: F401  (fixture)
from tests.support.delta import read_delta
from tests.support.parts import Broker

PARTITIONS = 3
ITEMS_V1 = "CREATE TABLE shop.items (id INT PRIMARY KEY, name VARCHAR(20), price DECIMAL(8,2))"
ITEMS_V2 = ("CREATE TABLE shop.items (id INT PRIMARY KEY, name VARCHAR(20), price DECIMAL(8,2), "
            "qty INT NOT NULL DEFAULT 7)")
SCHEMA_V1 = "id int, name string, price decimal(8,2)"
SCHEMA_V2 = SCHEMA_V1 + ", qty int"

Message = tuple[bytes | None, bytes | None]


def create_topic(broker: Broker, topic: str, partitions: int = PARTITIONS) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for future in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        future.result(30)


def produce_by_key(broker: Broker, topic: str, messages: list[Message],
                   ids: list[int]) -> None:
    """Produce each message to partition id % 3, as a keyed producer keeps a key in one
    partition."""
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    for (key, value), row_id in zip(messages, ids, strict=True):
        producer.produce(topic, key=key, value=value, partition=row_id % PARTITIONS)
    assert producer.flush(30) == 0


def change(op: str, row_id: int, name: str | None = None, price: str | None = None,
           **more: Any) -> dict[str, Any]:
    row = {"id": row_id} if op == "delete" else dict({"id": row_id, "name": name,
                                                      "price": price}, **more)
    return {"op": op, "row": row}


def send(broker: Broker, http: httpx.Client, topic: str, changes: list[dict[str, Any]]) -> None:
    produce_by_key(broker, topic, encode(http, topic, changes), [c["row"]["id"] for c in changes])


def stream(tmp_path: Path, broker: Broker, http: httpx.Client, topic: str,
           **changes: Any) -> StreamConfig:
    return StreamConfig(**dict(dict(
        topic=topic, bootstrap_servers=broker.bootstrap, service_url=str(http.base_url),
        table_path=str(tmp_path / "table"), checkpoint=str(tmp_path / "checkpoint"),
        trigger=Trigger(available_now=True)), **changes))


def table(spark: SparkSession, config: StreamConfig) -> DataFrame:
    return spark.read.format("delta").load(config.table_path)


def rows(spark: SparkSession, data: list[tuple[Any, ...]], schema: str) -> DataFrame:
    from decimal import Decimal

    return spark.createDataFrame(
        [tuple(Decimal(v) if isinstance(v, str) and v[:1].isdigit() and "." in v else v
               for v in row) for row in data], schema)


def by_delta_rs(config: StreamConfig) -> list[tuple[Any, ...]]:
    return sorted(tuple(r.values()) for r in read_delta(config.table_path).to_pylist())


def test_inserts_updates_deletes_reinserts_over_three_partitions(
        spark: SparkSession, kafka: Broker, service: httpx.Client,  # noqa: F811
        tmp_path: Path) -> None:
    topic = "stream_items"
    create_topic(kafka, topic)
    register(service, ITEMS_V1, topic)
    send(kafka, service, topic, [
        change("insert", 1, "a", "1.00"), change("insert", 2, "b", "2.00"),
        change("insert", 3, "c", "3.00"), change("update", 1, "a2", "1.50"),
        change("update", 1, "a3", "1.75"), change("delete", 2),
        change("insert", 4, "d", None), change("update", 3, "c2", "3.30")])
    config = stream(tmp_path, kafka, service, topic)
    run(spark, config)
    expected_1 = [(1, "a3", "1.75"), (3, "c2", "3.30"), (4, "d", None)]
    assertDataFrameEqual(table(spark, config), rows(spark, expected_1, SCHEMA_V1))

    # Next micro-batches: re-insert the deleted key, delete and update the others.
    send(kafka, service, topic, [change("insert", 2, "b-again", "2.20"), change("delete", 4),
                                 change("update", 3, "c3", "3.33"), change("delete", 1),
                                 change("insert", 5, "e", "5.00")])
    run(spark, stream(tmp_path, kafka, service, topic, max_offsets_per_trigger=2))
    expected_2 = [(2, "b-again", "2.20"), (3, "c3", "3.33"), (5, "e", "5.00")]
    assertDataFrameEqual(table(spark, config), rows(spark, expected_2, SCHEMA_V1))
    assert by_delta_rs(config) == [tuple(r) for r in rows(spark, expected_2, SCHEMA_V1)
                                   .orderBy("id").collect()]

    # Nothing new: an available-now re-run commits nothing.
    version = DeltaTable(config.table_path).version()
    run(spark, config)
    assert DeltaTable(config.table_path).version() == version


def test_change_data_feed_turned_on_for_an_existing_table_starts_at_that_version(
        spark: SparkSession, kafka: Broker, service: httpx.Client,  # noqa: F811
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--change-data-feed` on a table the stream made without it: turned on once (a log
    line), and the feed holds the changes applied after that."""
    topic = "stream_feed"
    create_topic(kafka, topic)
    register(service, ITEMS_V1, topic)
    send(kafka, service, topic, [change("insert", 1, "a", "1.00")])
    config = stream(tmp_path, kafka, service, topic)
    run(spark, config)
    capsys.readouterr()
    send(kafka, service, topic, [change("update", 1, "a2", "1.10")])
    fed = stream(tmp_path, kafka, service, topic, change_data_feed=True)
    run(spark, fed)
    assert "Change Data Feed turned on (--change-data-feed)" in capsys.readouterr().err
    delta = DeltaTable(config.table_path)
    assert delta.metadata().configuration["delta.enableChangeDataFeed"] == "true"
    turned_on = [h["version"] for h in delta.history() if h["operation"] == "SET TBLPROPERTIES"]
    assert len(turned_on) == 1
    feed = pa.table(delta.load_cdf(starting_version=turned_on[0] + 1).read_all()).to_pylist()
    assert sorted((r["_change_type"], r["id"], r["name"]) for r in feed) == [
        ("update_postimage", 1, "a2"), ("update_preimage", 1, "a")]
    run(spark, fed)  # already on: said once
    assert "Change Data Feed turned on" not in capsys.readouterr().err


def test_a_version_registered_while_the_stream_runs(
        spark: SparkSession, kafka: Broker, service: httpx.Client,  # noqa: F811
        tmp_path: Path) -> None:
    topic = "stream_live"
    create_topic(kafka, topic)
    register(service, ITEMS_V1, topic)
    send(kafka, service, topic, [change("insert", 1, "a", "1.00"),
                                 change("insert", 2, "b", "2.00")])
    config = stream(tmp_path, kafka, service, topic, trigger=Trigger(seconds=1))
    with running(spark, config) as wait_for:
        wait_for(lambda: table(spark, config).count() == 2)
        register(service, ITEMS_V2, topic)  # ALTER TABLE ... ADD COLUMN qty ... DEFAULT 7
        send(kafka, service, topic, [change("insert", 3, "c", "3.00", qty=30),
                                     change("update", 1, "a2", "1.10", qty=10)])
        wait_for(lambda: "qty" in table(spark, config).columns
                 and table(spark, config).count() == 3)
    expected = [(1, "a2", "1.10", 10), (2, "b", "2.00", 7), (3, "c", "3.00", 30)]
    assertDataFrameEqual(table(spark, config), rows(spark, expected, SCHEMA_V2))


class running:
    """Run a processing-time stream in a thread; yields a `wait_for(condition)`."""

    def __init__(self, spark: SparkSession, config: StreamConfig) -> None:
        self.stop = threading.Event()
        self.errors: list[BaseException] = []

        def target() -> None:
            try:
                run(spark, config, stop=self.stop)
            except BaseException as exc:  # reported by wait_for and on exit
                self.errors.append(exc)

        self.thread = threading.Thread(target=target, daemon=True)

    def wait_for(self, condition: Callable[[], bool], timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.errors:
                raise self.errors[0]
            try:
                if condition():
                    return
            except Exception:  # the table may not exist yet
                pass
            time.sleep(0.5)
        raise AssertionError("the stream did not get there in time")

    def __enter__(self) -> Callable[[Callable[[], bool]], None]:
        self.thread.start()
        return self.wait_for

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(120)
        if self.errors:
            raise self.errors[0]


def test_keyless_topics_are_appended_with_op(
        spark: SparkSession, kafka: Broker, service: httpx.Client,  # noqa: F811
        tmp_path: Path) -> None:
    topic = "stream_log"
    create_topic(kafka, topic)
    register(service, "CREATE TABLE shop.log (id INT, note VARCHAR(20))", topic)
    messages = encode(service, topic, [{"op": "insert", "row": {"id": 1, "note": "x"}},
                                       {"op": "insert", "row": {"id": 1, "note": "x"}},
                                       {"op": "delete", "row": {"id": 1, "note": "x"}}])
    produce_by_key(kafka, topic, messages, [0, 0, 0])
    config = stream(tmp_path, kafka, service, topic)
    run(spark, config)
    got = table(spark, config).orderBy("_offset").select("id", "note", "_op", "_partition",
                                                         "_offset").collect()
    # A keyless table's DELETE is a null key and a null value (docs/flat-avro.md): the log
    # records that a delete happened, with no row.
    assert [tuple(r) for r in got] == [(1, "x", "upsert", 0, 0), (1, "x", "upsert", 0, 1),
                                       (None, None, "delete", 0, 2)]


def test_bad_frames_stop_or_go_to_the_dead_letter_table(
        spark: SparkSession, kafka: Broker, service: httpx.Client,  # noqa: F811
        tmp_path: Path) -> None:
    topic = "stream_bad"
    create_topic(kafka, topic, 1)
    register(service, ITEMS_V1, topic)
    good = encode(service, topic, [change("insert", 1, "a", "1.00")])[0]
    unknown = (good[0], frame(999, b"\x02"))
    wrong_magic = (good[0], b"\x01" + (good[1] or b"")[1:])
    undecodable = (good[0], frame(unframe(good[1] or b"").schema_id, b"\xff\xff"))
    produce_by_key(kafka, topic, [good, unknown, wrong_magic, undecodable], [0, 0, 0, 0])
    with pytest.raises(JobError, match="partition 0 offset 1: value: unknown schema id 999"):
        run(spark, stream(tmp_path, kafka, service, topic))
    config = stream(tmp_path, kafka, service, topic, mode=Mode.PERMISSIVE,
                    dead_letter=str(tmp_path / "dead"))
    run(spark, config)  # the same checkpoint: the failed batch was not committed
    assertDataFrameEqual(table(spark, config), rows(spark, [(1, "a", "1.00")], SCHEMA_V1))
    dead = spark.read.format("delta").load(str(tmp_path / "dead")).orderBy("offset")
    assert [(r.offset, r.reason) for r in dead.collect()] == [
        (1, "value: unknown schema id 999 (not a version of stream_bad-value)"),
        (2, "value: wrong magic byte 0x01 at offset 0"),
        (3, "the body does not decode with its writer schema")]

    # Failfast names a body that does not decode as it names a bad frame.
    topic = "stream_bad_body"
    create_topic(kafka, topic, 1)
    register(service, ITEMS_V1, topic)
    good = encode(service, topic, [change("insert", 1, "a", "1.00")])[0]
    undecodable = (good[0], frame(unframe(good[1] or b"").schema_id, b"\xff\xff"))
    produce_by_key(kafka, topic, [good, undecodable], [0, 0])
    with pytest.raises(JobError) as caught:
        run(spark, stream(tmp_path / "body", kafka, service, topic))
    assert str(caught.value) == (
        "message at partition 0 offset 1: the body does not decode with its writer schema "
        "(--mode permissive --dead-letter PATH sets bad messages aside)")
