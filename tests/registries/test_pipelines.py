"""The pipelines with each external registry: `flatavro bridge --register` turns a Canal-JSON
topic into flat-avro on a real broker, confluent-kafka's deserializer reads every message
through the registry, and the Spark jobs (`bulk_read`, `stream`) resolve their schemas from
it with ``--registry-url`` and write the table's latest state."""

from __future__ import annotations

import json
from collections import defaultdict
from decimal import Decimal
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext

from service.cli.main import main
from spark_jobs.jobs import bulk_read, stream
from spark_jobs.settings.config import JobConfig, StreamConfig, Trigger
from tests.bridge.test_bridge import read_committed
from tests.support.parts import Broker, ExternalRegistry
from tests.support.registries import Names

TYPES = {"id": "int", "name": "varchar(20)", "price": "decimal(8,2)"}


def canal(database: str, kind: str, row: dict[str, Any], ts: int,
          old: dict[str, Any] | None = None) -> bytes:
    def text(values: dict[str, Any]) -> dict[str, Any]:
        return {k: None if v is None else str(v) for k, v in values.items()}

    return json.dumps({
        "id": 0, "database": database, "table": "items", "pkNames": ["id"], "isDdl": False,
        "type": kind, "es": ts >> 18, "ts": 0, "sql": "", "sqlType": {c: 4 for c in TYPES},
        "mysqlType": TYPES, "data": [text(row)], "old": [text(old)] if old else None,
        "_tidb": {"commitTs": ts}}).encode()


def source_changes(database: str) -> dict[int, list[bytes]]:
    """Per source partition (id % 3): 6 inserts, 2 updates, 1 delete."""
    ts = 400_000_000_000_000_000
    out: dict[int, list[bytes]] = defaultdict(list)
    for n in range(1, 7):
        out[n % 3].append(canal(database, "INSERT", {"id": n, "name": f"n{n}",
                                                     "price": f"{n}.10"}, ts + n))
    out[2].append(canal(database, "UPDATE", {"id": 2, "name": "two", "price": "2.20"}, ts + 10,
                        old={"id": 2, "name": "n2", "price": "2.10"}))
    out[5 % 3].append(canal(database, "UPDATE", {"id": 5, "name": None, "price": None}, ts + 11,
                            old={"id": 5, "name": "n5", "price": "5.10"}))
    out[0].append(canal(database, "DELETE", {"id": 3, "name": "n3", "price": "3.10"}, ts + 12))
    return out


LATEST = {1: ("n1", Decimal("1.10")), 2: ("two", Decimal("2.20")), 4: ("n4", Decimal("4.10")),
          5: (None, None), 6: ("n6", Decimal("6.10"))}


def test_bridge_then_spark_jobs_with_the_registry(
        kafka: Broker, spark: Any, registry: ExternalRegistry, names: Names,
        tmp_path: Path) -> None:
    source, target = f"canal_{names.schema}", f"tidb_{names.schema}_items"
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    for future in admin.create_topics([NewTopic(source, 3, 1)]).values():
        future.result(30)
    producer = Producer({"bootstrap.servers": kafka.bootstrap})
    for partition, values in source_changes(names.schema).items():
        for value in values:
            producer.produce(source, value=value, partition=partition)
    assert producer.flush(30) == 0

    assert main(["bridge", "--protocol", "canal-json", "--source-topic", source,
                 "--bootstrap-servers", kafka.bootstrap, "--registry-url", registry.url,
                 "--register", "--create-topics", "--exit-when-idle", "3",
                 "--group-id", f"g-{names.schema}", "--instance-id", "t"]) == 0

    # confluent-kafka's own deserializer reads every message through the registry.
    deserializer = AvroDeserializer(SchemaRegistryClient({"url": registry.url}))
    state: dict[int, tuple[Any, Any] | None] = {}
    messages = [m for _, m in read_committed(kafka, target)]
    assert len(messages) == 9
    for key, value in messages:
        row_key = deserializer(key, SerializationContext(target, MessageField.KEY))
        row = None if value is None else deserializer(
            value, SerializationContext(target, MessageField.VALUE))
        state[row_key["id"]] = None if row is None else (row["name"], row["price"])
    assert {k: v for k, v in state.items() if v is not None} == LATEST

    # The Spark jobs resolve the schemas from the same registry.
    bulk_read.run(spark, JobConfig(topic=target, output=str(tmp_path / "bulk"),
                                   bootstrap_servers=kafka.bootstrap,
                                   registry_url=registry.url, materialize=True))
    bulk = spark.read.parquet(str(tmp_path / "bulk"))
    assert sorted((r["id"], r["name"], r["price"]) for r in bulk.collect()) == \
        sorted((k, *v) for k, v in LATEST.items())
    config = StreamConfig(topic=target, bootstrap_servers=kafka.bootstrap,
                          registry_url=registry.url, table_path=str(tmp_path / "table"),
                          checkpoint=str(tmp_path / "checkpoint"),
                          trigger=Trigger(available_now=True))
    stream.run(spark, config)
    table = spark.read.format("delta").load(config.table_path)
    assert sorted((r["id"], r["name"], r["price"]) for r in table.collect()) == \
        sorted((k, *v) for k, v in LATEST.items())
