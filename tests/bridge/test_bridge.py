"""`flatavro bridge` against a real KRaft broker: Canal-JSON changes of two tables over 3
partitions become the flat-avro messages the converter gives for the same input, each exactly
once, in key order; a bad message stops the bridge or goes to the dead-letter topic."""

from __future__ import annotations

import asyncio
import base64
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from service.cdc.catalog import Protocol
from service.cli.main import main
from service.codec.convert import ConvertInput
from service.core.options import SchemaOptions
from service.registry.canonical import stored_form
from service.registry.embedded.registry import EmbeddedRegistry
from service.usecases.runtime import Runtime
from service.usecases.settings import RuntimeSettings
from tests.cdc.test_ddl_follow import (
    ADD_NOTE,
    ADD_QTY,
    CREATE,
    TS,
    TYPES_2,
    TYPES_3,
    ddl,
    insert,
)
from tests.cdc.test_ddl_follow import TYPES as ITEM_TYPES
from tests.cdc.test_ticdc_ddl_topics import canal_topic, open_topic
from tests.core.test_ticdc_ground_truth import GOLDEN
from tests.support.parts import Broker

PARTITIONS = 3
TYPES = {"items": {"id": "int", "name": "varchar(20)"},
         "users": {"uid": "bigint", "email": "varchar(64)"}}
KEYS = {"items": "id", "users": "uid"}

Raw = tuple[bytes | None, bytes | None]


def canal(table: str, kind: str, row: dict[str, Any], ts: int,
          old: dict[str, Any] | None = None) -> bytes:
    types = TYPES[table]
    message = {"id": 0, "database": "shop", "table": table, "pkNames": [KEYS[table]],
               "isDdl": False, "type": kind, "es": ts >> 18, "ts": 0, "sql": "",
               "sqlType": {c: 4 for c in types}, "mysqlType": types,
               "data": [{k: None if v is None else str(v) for k, v in row.items()}],
               "old": [{k: None if v is None else str(v) for k, v in old.items()}] if old
               else None, "_tidb": {"commitTs": ts}}
    return json.dumps(message).encode()


def changes() -> dict[int, list[bytes]]:
    """Per source partition, in order: inserts, updates (one changing the key), deletes."""
    ts = 400_000_000_000_000_000
    out: dict[int, list[bytes]] = defaultdict(list)
    for n in range(30):
        table = "items" if n % 2 else "users"
        key = KEYS[table]
        value = "name" if table == "items" else "email"
        out[n % PARTITIONS].append(canal(table, "INSERT", {key: n, value: f"v{n}"}, ts + n))
    for n in range(0, 30, 3):
        table = "items" if n % 2 else "users"
        key, value = KEYS[table], "name" if table == "items" else "email"
        out[n % PARTITIONS].append(canal(table, "UPDATE", {key: n, value: f"u{n}"}, ts + 100 + n,
                                         old={key: n, value: f"v{n}"}))
    out[1].append(canal("items", "UPDATE", {"id": 1001, "name": "moved"}, ts + 200,
                        old={"id": 1, "name": "v1"}))  # a key change
    for n in range(0, 30, 5):
        table = "items" if n % 2 else "users"
        key, value = KEYS[table], "name" if table == "items" else "email"
        out[n % PARTITIONS].append(canal(table, "DELETE", {key: n, value: f"x{n}"},
                                         ts + 300 + n))
    return out


def create_topic(broker: Broker, topic: str, partitions: int = PARTITIONS) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for future in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        future.result(30)


def produce(broker: Broker, topic: str, by_partition: dict[int, list[bytes]]) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for partition, values in by_partition.items():
        for value in values:
            producer.produce(topic, value=value, partition=partition)
    assert producer.flush(30) == 0


_TRANSIENT = frozenset({KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN,
                        KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE})


def read_committed(broker: Broker, topic: str) -> list[tuple[int, Raw]]:
    """Every committed message of `topic`: (partition, (key, value)) in partition order."""
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "reader",
                         "isolation.level": "read_committed", "enable.partition.eof": True,
                         "enable.auto.commit": False})
    partitions = consumer.list_topics(topic, 10).topics[topic].partitions
    consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
    out, finished = [], set()
    while len(finished) < len(partitions):
        message = consumer.poll(10)
        assert message is not None, f"no end of partition from {topic}"
        error = message.error()
        if error is None:
            out.append((message.partition(), (message.key(), message.value())))
        elif error.code() == KafkaError._PARTITION_EOF:
            finished.add(message.partition())
        else:  # a broker under load: anything but the end must not end a partition's read
            assert error.retriable() or error.code() in _TRANSIENT, (
                f"reading {topic}: {error.str()} (partition {message.partition()})")
    consumer.close()
    return out


def expected(registry: Path, by_partition: dict[int, list[bytes]]) -> dict[str, list[Raw]]:
    """What the converter gives for each source partition's messages, by target topic."""
    async def convert() -> dict[str, list[Raw]]:
        runtime = Runtime.start(RuntimeSettings(registry_db_path=str(registry)))
        out: dict[str, list[Raw]] = defaultdict(list)
        try:
            for partition in sorted(by_partition):
                done = await runtime.converter.convert_raw(Protocol.CANAL_JSON, ConvertInput(
                    [(None, v) for v in by_partition[partition]], "raw",
                    "tidb_{schema}_{table}", False, SchemaOptions()))
                for m in done.messages:
                    out[m.schemas.topic].append((m.key, m.value))
        finally:
            await runtime.stop()
        return out

    return asyncio.run(convert())


def by_key(messages: list[Raw]) -> dict[bytes | None, list[bytes | None]]:
    grouped: dict[bytes | None, list[bytes | None]] = defaultdict(list)
    for key, value in messages:
        grouped[key].append(value)
    return dict(grouped)


def bridge(broker: Broker, source: str, registry: Path, *extra: str) -> int:
    return main(["bridge", "--protocol", "canal-json", "--source-topic", source,
                 "--bootstrap-servers", broker.bootstrap, "--registry-file", str(registry),
                 "--register", "--create-topics", "--exit-when-idle", "3",
                 "--instance-id", "test", *extra])


def test_canal_json_topic_becomes_flat_avro_topics_exactly_once(kafka: Broker,
                                                                 tmp_path: Path) -> None:
    source, registry = "canal_src", tmp_path / "r.sqlite"
    create_topic(kafka, source)
    messages = changes()
    produce(kafka, source, messages)
    assert bridge(kafka, source, registry, "--group-id", "g1") == 0
    want = expected(registry, messages)
    assert set(want) == {"tidb_shop_items", "tidb_shop_users"}
    for topic, wanted in want.items():
        got = read_committed(kafka, topic)
        assert len(got) == len(wanted)  # every change once
        assert by_key([m for _, m in got]) == by_key(wanted)  # in key order
        partition_of: dict[bytes | None, int] = {}
        for partition, (key, _) in got:  # one key, one target partition
            assert partition_of.setdefault(key, partition) == partition
    # A restart of the same group finds nothing new and writes nothing.
    assert bridge(kafka, source, registry, "--group-id", "g1") == 0
    assert sum(len(read_committed(kafka, t)) for t in want) == sum(len(w) for w in want.values())


def test_a_bad_message_stops_after_committing_what_came_before(
        kafka: Broker, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source, registry = "canal_bad", tmp_path / "r.sqlite"
    create_topic(kafka, source, 1)
    good = [canal("users", "INSERT", {"uid": n, "email": f"e{n}"}, 1 << 60) for n in range(3)]
    produce(kafka, source, {0: [*good, b"{not json", *good]})
    assert bridge(kafka, source, registry, "--group-id", "g2", "--topic", "bad_out") == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "partition 0 offset 3:" in err and "everything before it is committed" in err
    assert len(read_committed(kafka, "bad_out")) == 3

    assert bridge(kafka, source, registry, "--group-id", "g2", "--topic", "bad_out",
                  "--dead-letter-topic", "bad_dlt") == 0
    assert len(read_committed(kafka, "bad_out")) == 6
    consumer = Consumer({"bootstrap.servers": kafka.bootstrap, "group.id": "dlt-reader",
                         "isolation.level": "read_committed", "auto.offset.reset": "earliest"})
    consumer.subscribe(["bad_dlt"])
    message = None
    for _ in range(30):
        message = consumer.poll(1)
        if message is not None and not message.error():
            break
    consumer.close()
    assert message is not None and message.value() == b"{not json"
    headers = {k: v.decode() for k, v in message.headers()}
    assert headers["flatavro.source.topic"] == source
    assert (headers["flatavro.source.partition"], headers["flatavro.source.offset"]) == ("0", "3")
    assert "JSON" in headers["flatavro.reason"] or "json" in headers["flatavro.reason"]


def test_a_topic_with_its_ddl_evolves_without_a_stop(kafka: Broker, tmp_path: Path) -> None:
    """CREATE TABLE, rows, ADD COLUMN qty NOT NULL DEFAULT 7, rows, ADD COLUMN note NULL
    DEFAULT 'x', rows: each DDL broadcast to every partition as TiCDC's Canal-JSON does, rows
    by key; the bridge registers the three versions the DDL defines and converts every row."""
    source, registry = "canal_ddl", tmp_path / "r.sqlite"
    create_topic(kafka, source)
    by_partition, rows = _ddl_topic([(0, True), (1, True), (2, True)])
    produce(kafka, source, by_partition)
    assert bridge(kafka, source, registry, "--group-id", "g-ddl", "--topic", "ddl_out") == 0
    got = read_committed(kafka, "ddl_out")
    assert len(got) == rows
    ids = sorted({int.from_bytes(value[1:5], "big") for _, (_, value) in got if value})
    assert len(ids) == 3  # three value schema versions, each row under its own
    assert _versions(registry, "ddl_out-value") == [1, 2, 3]


def _ddl_topic(steps: list[tuple[int, bool]]) -> tuple[dict[int, list[bytes]], int]:
    """A Canal-JSON topic of the DDL test's table: for each (step, with_ddl), the step's
    statement broadcast to every partition (if `with_ddl`), then 9 rows of its shape; and how
    many rows it holds. Steps: 0 CREATE TABLE, 1 ADD COLUMN qty, 2 ADD COLUMN note."""
    shapes = [(CREATE, ITEM_TYPES), (ADD_QTY, TYPES_2), (ADD_NOTE, TYPES_3)]
    by_partition: dict[int, list[bytes]] = defaultdict(list)
    rows = 0
    for step, with_ddl in steps:
        statement, types = shapes[step]
        ts = TS + step * 1000
        if with_ddl:
            for partition in range(PARTITIONS):
                by_partition[partition].append(ddl(statement, ts)["value"].encode())
        for n in range(9):
            row = {"id": step * 100 + n, "name": f"r{n}", "qty": n, "note": "z"}
            value = insert({c: row[c] for c in types}, types, ts + 1 + n)["value"]
            by_partition[n % PARTITIONS].append(value.encode())
            rows += 1
    return by_partition, rows


def _versions(registry: Path, subject: str) -> list[int]:
    async def versions() -> list[int]:
        embedded = EmbeddedRegistry(registry)
        try:
            return await embedded.versions(subject)
        finally:
            embedded.close()

    return asyncio.run(versions())


def test_a_bridge_started_after_the_alter_derives_the_versions_without_a_stop(
        kafka: Broker, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A first bridge saw the CREATE TABLE and v1's rows; a new one starts at the rows after
    the first ALTER, never seeing it: rows with `qty` register a version derived from them
    (qty nullable, said in the log), the next ALTER is not followed (its table is unknown to
    this bridge) and its rows derive the next version; every row converts, no stop."""
    registry = tmp_path / "r.sqlite"
    first, first_rows = _ddl_topic([(0, True)])
    create_topic(kafka, "canal_late_v1")
    produce(kafka, "canal_late_v1", first)
    assert bridge(kafka, "canal_late_v1", registry, "--group-id", "g-late1",
                  "--topic", "late_out") == 0
    assert _versions(registry, "late_out-value") == [1]
    later, later_rows = _ddl_topic([(1, False), (2, True)])
    create_topic(kafka, "canal_late")
    produce(kafka, "canal_late", later)
    capsys.readouterr()
    assert bridge(kafka, "canal_late", registry, "--group-id", "g-late",
                  "--topic", "late_out") == 0
    log = capsys.readouterr().err
    assert "derived from the rows, no DDL seen: new column(s) `qty`" in log
    assert "new column(s) `note`" in log
    assert len(read_committed(kafka, "late_out")) == first_rows + later_rows
    assert _versions(registry, "late_out-value") == [1, 2, 3]


def test_an_open_protocol_topic_with_its_ddl_registers_ticdcs_versions(
        kafka: Broker, tmp_path: Path) -> None:
    """The ground truth's CREATE TABLE, two ALTERs and a row after each as Open Protocol
    messages (each DDL event broadcast to every partition, as TiCDC does) through `flatavro
    bridge --register`: every row converted, and the three value versions, as stored, are what
    TiCDC v8.3.0 registered."""
    source, registry = "open_ddl", tmp_path / "r.sqlite"
    create_topic(kafka, source)
    producer = Producer({"bootstrap.servers": kafka.bootstrap})
    for key, value in open_topic():
        assert key is not None and value is not None
        is_ddl = b'"t": 2' in base64.b64decode(key)
        for partition in (range(PARTITIONS) if is_ddl else [0]):
            producer.produce(source, key=base64.b64decode(key), value=base64.b64decode(value),
                             partition=partition)
    assert producer.flush(30) == 0
    assert main(["bridge", "--protocol", "open-protocol", "--source-topic", source,
                 "--bootstrap-servers", kafka.bootstrap, "--registry-file", str(registry),
                 "--register", "--create-topics", "--exit-when-idle", "3",
                 "--instance-id", "test", "--group-id", "g-open-ddl",
                 "--topic", "open_ddl_out"]) == 0
    assert len(read_committed(kafka, "open_ddl_out")) == 3
    assert _stored(registry, "open_ddl_out-value") == [
        stored_form((GOLDEN / f"{case}.ext-off_decimal-precise_bigint-long.value.avsc")
                    .read_text(encoding="utf-8")).text
        for case in ("items_v1", "items_v2", "items_v3")]


def _stored(registry: Path, subject: str) -> list[str]:
    async def stored() -> list[str]:
        embedded = EmbeddedRegistry(registry)
        try:
            return [(await embedded.get_version(subject, v)).schema
                    for v in await embedded.versions(subject)]
        finally:
            embedded.close()

    return asyncio.run(stored())


@pytest.mark.parametrize("label", ["ext-off_decimal-precise_bigint-long",
                                   "ext-on_decimal-string_bigint-string"])
def test_the_versions_a_bridge_registers_are_ticdcs(kafka: Broker, tmp_path: Path,
                                                     label: str) -> None:
    """The ground truth's statements (CREATE TABLE, ADD COLUMN qty NOT NULL DEFAULT 7, ADD
    COLUMN note ... AFTER id) and rows as a Canal-JSON topic through `flatavro bridge
    --register`: each value version, as stored, is what TiCDC v8.3.0 registered."""
    source, registry = f"canal_gt_{label.replace('-', '_')}", tmp_path / "r.sqlite"
    create_topic(kafka, source, 1)
    produce(kafka, source, {0: [value.encode() for _, value in canal_topic() if value]})
    options = dict(part.split("-", 1) for part in label.split("_"))
    flags = [*(["--enable-tidb-extension"] if options["ext"] == "on" else []),
             "--decimal-handling-mode", options["decimal"],
             "--bigint-unsigned-handling-mode", options["bigint"]]
    assert bridge(kafka, source, registry, "--group-id", f"g-{source}", "--topic",
                  f"{source}_out", *flags) == 0
    assert len(read_committed(kafka, f"{source}_out")) == 3

    async def stored() -> list[str]:
        embedded = EmbeddedRegistry(registry)
        try:
            return [(await embedded.get_version(f"{source}_out-value", v)).schema
                    for v in (1, 2, 3)]
        finally:
            embedded.close()

    assert asyncio.run(stored()) == [
        stored_form((GOLDEN / f"{case}.{label}.value.avsc").read_text(encoding="utf-8")).text
        for case in ("items_v1", "items_v2", "items_v3")]
