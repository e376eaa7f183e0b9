"""`flatavro bridge` against a transactional pass-through of the same messages, and 2 and 3
bridge processes in one group against 1; several rounds (--rounds), each figure a median with
its range. A real broker.

Method. A broker (deploy/kafka/kafka.sh) starts on free loopback ports. N Canal-JSON messages
(default 200,000) of the 20-column benchmark table (bench_row_codec), as a TiCDC changefeed
with ``content-compatible=true`` and the TiDB extension writes them (``mysqlType`` with type
parameters, JDBC ``sqlType`` codes, every value a string, ENUM as its index, an UPDATE's
``old`` holding the whole old row), are produced to a 3-partition topic by key (id % 3): 80%
inserts of new keys, 15% updates and 5% deletes of live keys. Each measured run reads that
topic in a fresh consumer group and writes fresh target topics; runs: (a) a pass-through in a
child process, written here with confluent-kafka and the bridge's transactional settings
(read_committed consumer, idempotent transactional producer with linger.ms=5, 1,000 messages
per poll, produce + send_offsets_to_transaction + commit_transaction per batch, no
conversion); (b) one ``flatavro bridge`` process (embedded registry file, ``--register
--create-topics --exit-when-idle 3``); (c) two and three bridge processes in one group;
(d) in a child process, no Kafka, the bridge's conversion step (`ConversionStep`, a fresh embedded
registry) on the same messages, 1,000 at a time: the bridge converts every message, so its rate
is the bridge's ceiling, and 1 / (1/pass + 1/conversion) what copying and converting one after
the other would give. A smaller topic goes through (a) and (b) first, untimed, and the measured
topic through (a) three times, to warm the broker (its rate rose by half over the first
rounds without it).
Timing: this process polls the group's committed offsets every 20 ms from the moment the
children start; a run ends when they reach the source's end offsets, so the idle wait before
``--exit-when-idle`` exits is never counted. The compared rate runs from the first committed
batch to the end (steady state: a bridge runs for days, its ~1 s start-up -- interpreter,
imports, registry, transactions, group join -- once); the wall rate with start-up is printed
too. Correctness: each target topic, read with isolation.level=read_committed, must hold one
message per row change and one tombstone per delete, else exit 1.

Claim-checks (``--claim-checks``; make bench runs it): a broker and SeaweedFS (S3 on
loopback, deploy/s3/seaweedfs.sh) start; N / 5 of the same messages (40,000 by default), every
100th row's TEXT note 1 MB, go to two 3-partition topics: ``whole`` as they are (a topic that
takes their 1-2 MB) and ``claimed`` as TiCDC's claim-check writes them (the object, TiCDC's
``{"key", "value"}`` JSON, on S3; the message the handle key and the location). One bridge
converts each topic in turn (after one untimed run on ``whole``), reading the objects from
``s3://bucket/claims?endpoint=...`` and writing the 1 MB rows to target topics that take them
(``--kafka-config`` message.max.bytes): the steady rate of claimed over whole, each round,
target >= 0.8. ``--conversion-only --claim-check-storage s3`` compares the conversion step alone
with the objects on SeaweedFS (``file``, the default: in a local directory).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import datetime
import multiprocessing
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench.bench_row_codec import DDL, rows
from bench.figures import spread
from bench.kafka_broker import broker
from bench.object_store import S3, seaweedfs, upload
from service.bridge.conversion import Conversion, ConversionStep
from service.bridge.options import BridgeOptions
from service.bridge.source import SourceRecord
from service.cdc.catalog import Protocol
from service.cdc.large_message import LargeMessages
from service.usecases.runtime import Runtime
from service.usecases.settings import RuntimeSettings

ROOT = Path(__file__).resolve().parents[1]
PARTITIONS, BATCH, IDLE, WARM_UP, WARM_PASSES, POLL_SECONDS = 3, 1_000, 3, 10_000, 3, 0.02
COPIES = (1, 2, 3)  # bridge processes in one group, over the PARTITIONS partitions
INSERTS, UPDATES = 0.80, 0.15  # the rest: deletes
BASE_ROWS, UPDATED = rows(), {"note": "updated", "qty": 12}
STATES = {"new": "1", "paid": "2", "sent": "3"}  # TiCDC writes an ENUM as its 1-based index
# bench_row_codec.DDL as TiCDC's Canal-JSON encoder spells it (content-compatible=true):
# mysqlType from the column's type description, sqlType the JDBC type code.
COLUMNS = {
    "id": ("bigint(20)", -5), "customer_id": ("bigint(20)", -5), "sku": ("varchar(64)", 12),
    "qty": ("int(11)", 4), "price": ("decimal(12,2)", 3), "tax": ("decimal(10,4)", 3),
    "created": ("datetime(3)", 93), "state": ("enum('new','paid','sent')", 4),
    "note": ("text", 2005), "flags": ("tinyint(3) unsigned", -6), "weight": ("double", 8),
    "ratio": ("float", 7), "region": ("char(2)", 1), "code": ("varchar(16)", 12),
    "a1": ("int(11)", 4), "a2": ("int(11)", 4), "a3": ("bigint(20)", -5),
    "a4": ("smallint(6)", 5), "b1": ("varchar(32)", 12), "b2": ("varchar(32)", 12)}
MYSQL_TYPES = {name: spelled for name, (spelled, _) in COLUMNS.items()}
SQL_TYPES = {name: code for name, (_, code) in COLUMNS.items()}
FIRST_TS = 400_000_000_000_000_000


# -- the source topic ----------------------------------------------------------------------

def plan(count: int, seed: int = 13) -> list[tuple[str, int]]:
    """`count` changes: inserts of new keys, updates and deletes of live keys."""
    rng, changes, live = random.Random(seed), [], []
    for _ in range(count):
        draw = rng.random()
        if draw < INSERTS or not live:
            live.append(len(changes))
            changes.append(("INSERT", live[-1]))
        elif draw < INSERTS + UPDATES:
            changes.append(("UPDATE", rng.choice(live)))
        else:
            at = rng.randrange(len(live))
            live[at], live[-1] = live[-1], live[at]
            changes.append(("DELETE", live.pop()))
    return changes


def canal_row(row_id: int, updated: bool) -> dict[str, str | None]:
    """The row as Canal-JSON ``data`` holds it: every value a string, ENUM as its index."""
    row = BASE_ROWS[row_id % len(BASE_ROWS)] | {"id": row_id} | (UPDATED if updated else {})
    text = {name: None if value is None else str(value) for name, value in row.items()}
    return text | {"state": STATES[str(row["state"])]}


def canal(kind: str, row_id: int, ts: int) -> bytes:
    """One Canal-JSON message of one row change (an UPDATE sets note and qty)."""
    row = canal_row(row_id, kind == "UPDATE")
    return orjson.dumps({
        "id": 0, "database": "bench", "table": "orders", "pkNames": ["id"], "isDdl": False,
        "type": kind, "es": ts >> 18, "ts": (ts >> 18) + 3, "sql": "", "sqlType": SQL_TYPES,
        "mysqlType": MYSQL_TYPES, "data": [row],
        "old": [canal_row(row_id, False)] if kind == "UPDATE" else None,
        "_tidb": {"commitTs": ts}})


# The same table as TiCDC's Debezium encoder writes it (tidb_type on, old values on): each
# column's field schema, and its CREATE TABLE event (tableChanges: DECIMAL scale, DATETIME fsp).
_DBZ_TYPES = {  # column -> (Debezium type, name, tidb_type, typeName, length, scale)
    "id": ("int64", None, "bigint", "BIGINT", None, None),
    "customer_id": ("int64", None, "bigint", "BIGINT", None, None),
    "sku": ("string", None, "varchar", "VARCHAR", 64, None),
    "qty": ("int32", None, "int", "INT", None, None),
    "price": ("double", None, "decimal", "DECIMAL", 12, 2.0),
    "tax": ("double", None, "decimal", "DECIMAL", 10, 4.0),
    "created": ("int64", "io.debezium.time.Timestamp", "datetime", "DATETIME", 3, None),
    "state": ("string", "io.debezium.data.Enum", "enum", "ENUM", 1, None),
    "note": ("string", None, "text", "TEXT", None, None),
    "flags": ("int16", None, "tinyint unsigned", "TINYINT UNSIGNED", None, None),
    "weight": ("double", None, "double", "DOUBLE", None, None),
    "ratio": ("float", None, "float", "FLOAT", None, None),
    "region": ("string", None, "char", "CHAR", 2, None),
    "code": ("string", None, "varchar", "VARCHAR", 16, None),
    "a1": ("int32", None, "int", "INT", None, None),
    "a2": ("int32", None, "int", "INT", None, None),
    "a3": ("int64", None, "bigint", "BIGINT", None, None),
    "a4": ("int16", None, "smallint", "SMALLINT", None, None),
    "b1": ("string", None, "varchar", "VARCHAR", 32, None),
    "b2": ("string", None, "varchar", "VARCHAR", 32, None)}
_NOT_NULL = {"id", "customer_id", "sku", "qty", "price"}
_DBZ_FIELDS = [{"tidb_type": tidb, "type": kind, "optional": name not in _NOT_NULL, "field": name,
                **({"name": named, "version": 1} if named else {}),
                **({"parameters": {"allowed": "new,paid,sent"}} if tidb == "enum" else {})}
               for name, (kind, named, tidb, _, _, _) in _DBZ_TYPES.items()]
_DBZ_SCHEMA = {"type": "struct", "optional": False, "name": "default.bench.orders.Envelope",
               "version": 1, "fields": [
                   {"type": "struct", "optional": True, "name": "default.bench.orders.Value",
                    "field": image, "fields": _DBZ_FIELDS} for image in ("before", "after")]}
_DBZ_KEY_SCHEMA = {"type": "struct", "name": "default.bench.orders.Key", "optional": False,
                   "fields": _DBZ_FIELDS[:1]}
_DBZ_OPS = {"INSERT": "c", "UPDATE": "u", "DELETE": "d"}
_EPOCH = datetime.datetime(1970, 1, 1)


def _dbz_source(ts: int) -> dict[str, Any]:
    return {"version": "2.4.0.Final", "connector": "TiCDC", "name": "default",
            "ts_ms": ts >> 18, "snapshot": "false", "db": "bench", "table": "orders",
            "server_id": 0, "gtid": None, "file": "", "pos": 0, "row": 0, "thread": 0,
            "query": None, "commit_ts": ts, "cluster_id": "default"}


def debezium_ddl(ts: int) -> tuple[bytes, bytes]:
    """The table's CREATE TABLE event (key, value) as TiCDC's Debezium encoder writes it."""
    columns = [{"name": name, "typeName": type_name, "length": length, "scale": scale,
                "optional": name not in _NOT_NULL, "position": at + 1,
                "enumValues": ["'new'", "'paid'", "'sent'"] if type_name == "ENUM" else None}
               for at, (name, (_, _, _, type_name, length, scale)) in enumerate(_DBZ_TYPES.items())]
    value = {"payload": {"source": _dbz_source(ts), "ts_ms": (ts >> 18) + 3,
                         "databaseName": "bench", "schemaName": None, "ddl": DDL,
                         "tableChanges": [{"type": "CREATE", "id": '"bench"."orders"', "table": {
                             "primaryKeyColumnNames": ["id"], "columns": columns}}]}}
    return orjson.dumps({"payload": {"databaseName": "bench"}}), orjson.dumps(value)


def _dbz_row(row_id: int, updated: bool) -> dict[str, Any]:
    row = BASE_ROWS[row_id % len(BASE_ROWS)] | {"id": row_id} | (UPDATED if updated else {})
    created = datetime.datetime.fromisoformat(str(row["created"]))
    return row | {"price": float(str(row["price"])), "tax": float(str(row["tax"])),
                  "created": (created - _EPOCH) // datetime.timedelta(milliseconds=1)}


def debezium(kind: str, row_id: int, ts: int) -> tuple[bytes, bytes]:
    """One Debezium message (key, value) of the row change `canal` writes."""
    value = {"payload": {"source": _dbz_source(ts), "ts_ms": (ts >> 18) + 3,
                         "transaction": None, "op": _DBZ_OPS[kind],
                         "before": _dbz_row(row_id, False) if kind != "INSERT" else None,
                         "after": _dbz_row(row_id, kind == "UPDATE") if kind != "DELETE"
                         else None},
             "schema": _DBZ_SCHEMA}
    key = {"payload": {"id": row_id}, "schema": _DBZ_KEY_SCHEMA}
    return orjson.dumps(key), orjson.dumps(value)


def create_topic(bootstrap: str, topic: str, config: dict[str, str] | None = None) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    for future in admin.create_topics([NewTopic(topic, PARTITIONS, 1,
                                                config=config or {})]).values():
        future.result(30)


def produce(producer: Producer, topic: str, value: bytes | None, key: bytes | None = None,
            **where: Any) -> None:
    while True:
        try:
            producer.produce(topic, key=key, value=value, **where)
            return
        except BufferError:  # the local queue is full: let deliveries drain it
            producer.poll(0.05)


def fill_source(bootstrap: str, topic: str, changes: list[tuple[str, int]]) -> None:
    create_topic(bootstrap, topic)
    failed = []
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50,
                         "batch.size": 1_000_000, "queue.buffering.max.messages": 500_000,
                         "on_delivery": lambda error, _m: error and failed.append(error)})
    for n, (kind, row_id) in enumerate(changes):
        produce(producer, topic, canal(kind, row_id, FIRST_TS + n),
                partition=row_id % PARTITIONS)
    if producer.flush(120) or failed:
        sys.exit(f"{len(failed)} source message(s) of {topic} were not delivered")


# -- the pass-through (a child process) ----------------------------------------------------

def pass_through(bootstrap: str, source: str, target: str, group: str) -> None:
    """Copy `source` to `target` (same partition) batch by batch, exactly once, with the
    bridge's client settings and no conversion, until the parent stops this process."""
    common = {"bootstrap.servers": bootstrap, "log_level": 2}
    consumer = Consumer({**common, "group.id": group, "enable.auto.commit": False,
                         "isolation.level": "read_committed", "auto.offset.reset": "earliest",
                         "enable.partition.eof": False, "session.timeout.ms": 10000})
    producer = Producer({**common, "enable.idempotence": True, "linger.ms": 5,
                         "transactional.id": f"bench-pass.{group}",
                         "partitioner": "murmur2_random"})
    producer.init_transactions(30)
    consumer.subscribe([source])
    while True:
        fresh = [m for m in consumer.consume(BATCH, 0.5) if m.error() is None]
        if fresh:
            commit_copy(producer, consumer, fresh, source, target)


def commit_copy(producer: Producer, consumer: Consumer, fresh: list[Message], source: str,
                target: str) -> None:
    """One transaction: the batch's messages as they are, and its source offsets."""
    producer.begin_transaction()
    offsets: dict[int, int] = {}
    for message in fresh:
        produce(producer, target, message.value(), message.key(),
                partition=message.partition())
        offsets[message.partition()] = message.offset() + 1
    producer.send_offsets_to_transaction(
        [TopicPartition(source, p, o) for p, o in sorted(offsets.items())],
        consumer.consumer_group_metadata(), 30)
    producer.commit_transaction(60)


# -- a measured run ------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Timing:
    """When the children started, first committed and committed everything (perf_counter)."""

    messages: int
    start: float
    first: float
    first_count: int
    end: float

    @property
    def steady(self) -> float:
        return (self.messages - self.first_count) / max(self.end - self.first, POLL_SECONDS)

    @property
    def wall(self) -> float:
        return self.messages / (self.end - self.start)


def committed_total(watcher: Consumer, source: str) -> int | None:
    """The group's committed offsets summed; None while its coordinator is not ready."""
    try:
        parts = watcher.committed([TopicPartition(source, p) for p in range(PARTITIONS)], 10)
    except KafkaException as exc:
        if exc.args[0].code() not in (KafkaError.NOT_COORDINATOR, KafkaError._TIMED_OUT,
                                      KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
                                      KafkaError.COORDINATOR_NOT_AVAILABLE):
            raise
        return None
    return sum(max(tp.offset, 0) for tp in parts)


def watch(bootstrap: str, group: str, source: str, messages: int, start: float,
          alive: Callable[[], bool]) -> Timing:
    """Poll the group's committed offsets until they reach the source's end.

    `alive()` is False once a child has failed."""
    # read_uncommitted: a read_committed consumer asks for stable offsets, which the broker
    # refuses while any transaction of the group is open -- with several copies committing
    # all the time, the watcher then saw nothing for seconds and the steady rate was wrong.
    watcher = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                        "enable.auto.commit": False, "isolation.level": "read_uncommitted"})
    first, first_count, done = 0.0, 0, 0
    try:
        while True:
            done, now = committed_total(watcher, source) or done, time.perf_counter()
            if done and not first_count:
                first, first_count = now, done
            if done >= messages:
                return Timing(messages, start, first, first_count, now)
            if not alive() or now - start > 1800:
                sys.exit(f"group {group} stopped at {done:,} of {messages:,} messages")
            time.sleep(POLL_SECONDS)
    finally:
        watcher.close()


def run_pass_through(bootstrap: str, source: str, run: str, messages: int) -> Timing:
    create_topic(bootstrap, f"{run}_copy")
    child = multiprocessing.get_context("spawn").Process(
        target=pass_through, args=(bootstrap, source, f"{run}_copy", run), daemon=True)
    start = time.perf_counter()
    child.start()
    try:
        return watch(bootstrap, run, source, messages, start, child.is_alive)
    finally:
        child.terminate()
        child.join(30)


def bridge_command(bootstrap: str, source: str, run: str, registry: Path, copy: int,
                   *extra: str) -> list[str]:
    """The ``flatavro bridge`` command line of copy `copy` in group `run` (`extra`: more
    options)."""
    return [str(Path(sys.executable).parent / "flatavro"), "bridge", "--protocol",
            "canal-json", "--source-topic", source, "--bootstrap-servers", bootstrap,
            "--group-id", run, "--instance-id", f"copy{copy}", "--registry-file",
            str(registry), "--register", "--create-topics", "--exit-when-idle", str(IDLE),
            "--topic", f"{run}_{{schema}}_{{table}}", "--batch-size", str(BATCH), *extra]


def run_bridges(bootstrap: str, source: str, run: str, messages: int, copies: int,
                work: Path, extra: tuple[str, ...] = ()) -> Timing:
    """`copies` bridge processes in group `run` (`extra`: more options); waits for them to
    exit 0 when idle."""
    registry = work / f"{run}.sqlite"
    logs = [(work / f"{run}-{copy}.log").open("wb") for copy in range(copies)]
    start = time.perf_counter()
    children = [subprocess.Popen(bridge_command(bootstrap, source, run, registry, copy, *extra),
                                 stderr=log, env=dict(os.environ, FLATAVRO_LOG_LEVEL="WARNING"))
                for copy, log in enumerate(logs)]
    try:
        timing = watch(bootstrap, run, source, messages, start,
                       lambda: all(c.poll() in (None, 0) for c in children))
        codes = [c.wait(60) for c in children]
    finally:
        for child, log in zip(children, logs, strict=True):
            if child.poll() is None:
                child.terminate()
            log.close()
    if any(codes):
        for copy in range(copies):
            print((work / f"{run}-{copy}.log").read_text()[-2000:], file=sys.stderr)
        sys.exit(f"a bridge of {run} exited with {codes}")
    return timing


def convert_alone(changes: list[tuple[str, int]], registry: Path,
                  protocol: Protocol = Protocol.CANAL_JSON) -> float:
    """msg/s of the bridge's conversion step alone, no Kafka: the same
    messages as records of their partitions, BATCH at a time, through `ConversionStep` with
    the bridge's options and a fresh embedded registry (its schemas registered by an untimed
    first batch). Debezium: the same changes as TiCDC's Debezium encoder writes them, after
    the table's CREATE TABLE event (in the untimed first batch)."""
    def record(n: int, kind: str, row_id: int) -> SourceRecord:
        key, value = (debezium(kind, row_id, FIRST_TS + n) if protocol is Protocol.DEBEZIUM
                      else (None, canal(kind, row_id, FIRST_TS + n)))
        return SourceRecord("canal", row_id % PARTITIONS, n, key, value)

    records = [record(n, kind, row_id) for n, (kind, row_id) in enumerate(changes)]
    if protocol is Protocol.DEBEZIUM:
        records.insert(0, SourceRecord("canal", 0, -1, *debezium_ddl(FIRST_TS - 1)))
    return convert_records(records, registry, protocol=protocol)


def convert_apart(changes: list[tuple[str, int]], registry: Path,
                  protocol: Protocol = Protocol.CANAL_JSON) -> float:
    """`convert_alone` in a child process, as a bridge converts: this one holds every message
    of the benchmark, which slows Python's garbage collector (24-27k msg/s here, 28-29k in a
    process of its own)."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(convert_alone, (changes, registry, protocol))


BIG_NOTE = "n" * (1 << 20)  # a 1 MB TEXT value: the rows TiCDC would not send whole
CLAIM_EVERY = 100  # 1 % of the messages
CLAIM_BUCKET = "bench-claims"
BIG_BYTES = 16 << 20  # what the whole topic and the targets take: an UPDATE's 1 MB row twice


def claim_check_records(changes: list[tuple[str, int]], storage: Path | None,
                        writer: str = "file:///writer/claims") -> list[SourceRecord]:
    """The Canal-JSON messages with every `CLAIM_EVERY`th row's note 1 MB: sent whole
    (`storage` None), or as TiCDC's claim-check writes them (`storage`: the object, TiCDC's
    ``{"key", "value"}`` JSON, there; the Kafka message the handle key and the location in
    `writer`, the changefeed's claim-check-storage-uri)."""
    records = []
    for n, (kind, row_id) in enumerate(changes):
        value = canal(kind, row_id, FIRST_TS + n)
        if n % CLAIM_EVERY == CLAIM_EVERY // 2:
            document = orjson.loads(value)
            for row in document["data"] + (document["old"] or []):
                row["note"] = BIG_NOTE
            value = orjson.dumps(document)
            if storage is not None:
                name = f"{n}.json"
                (storage / name).write_bytes(orjson.dumps(
                    {"key": None, "value": base64.b64encode(value).decode()}))
                document["data"] = [{"id": r["id"]} for r in document["data"]]
                document["old"] = None if document["old"] is None else [
                    {"id": r["id"]} for r in document["old"]]
                document["_tidb"]["claimCheckLocation"] = f"{writer}/{name}"
                value = orjson.dumps(document)
        records.append(SourceRecord("canal", row_id % PARTITIONS, n, None, value))
    return records


def convert_records(records: list[SourceRecord], registry: Path, *,
                    protocol: Protocol = Protocol.CANAL_JSON,
                    large: LargeMessages | None = None) -> float:
    """msg/s of the conversion step on `records`, BATCH at a time, through `ConversionStep`
    with the bridge's options and a fresh embedded registry (its schemas registered by an
    untimed first batch)."""
    options = BridgeOptions(protocol=protocol, source_topic="canal",
                            bootstrap_servers="", group_id="", instance_id="",
                            topic_rule="alone_{schema}_{table}", register=True,
                            large_messages=large or LargeMessages())
    runtime = Runtime.start(RuntimeSettings(registry_db_path=str(registry)))
    step = ConversionStep(options, runtime.converter)

    async def convert_all() -> float:
        try:
            await step.convert(records[:BATCH], set_aside=False)
            start = time.perf_counter()
            for at in range(0, len(records), BATCH):
                done = await step.convert(records[at:at + BATCH], set_aside=False)
                assert isinstance(done, Conversion) and not done.bad
            return len(records) / (time.perf_counter() - start)
        finally:
            await runtime.stop()

    return asyncio.run(convert_all())


def compare_claim_checks(changes: list[tuple[str, int]], work: Path, rounds: int,
                         store: S3 | None = None) -> None:
    """The conversion step on a topic where 1 % of the messages are claim-checks of 1 MB
    rows (objects in a local directory, or on `store`: SeaweedFS's S3 on loopback) against
    the same topic sent whole, in turn."""
    storage = work / "claims"
    storage.mkdir()
    whole = claim_check_records(changes, None)
    if store is None:
        claimed = claim_check_records(changes, storage)
        uri, where = f"file://{storage}", "in a local directory"
    else:
        claimed = claim_check_records(changes, storage, f"s3://{CLAIM_BUCKET}/claims")
        upload(store, storage, CLAIM_BUCKET, "claims")
        shutil.rmtree(storage)
        uri, where = store.uri(CLAIM_BUCKET, "claims"), "on S3 (SeaweedFS, loopback)"
    large = LargeMessages(claim_check_storage_uri=uri)
    ratios = []
    for turn in range(rounds):
        sent_whole = convert_records(whole, work / f"w{turn}.sqlite")
        claim_checked = convert_records(claimed, work / f"k{turn}.sqlite", large=large)
        ratios.append(claim_checked / sent_whole)
        print(f"conversion, 1 % of {len(changes):,} messages 1 MB: sent whole {sent_whole:,.0f} "
              f"msg/s, as claim-checks {where} {claim_checked:,.0f} msg/s = "
              f"{claim_checked / sent_whole:.2f}")
    print(f"claim-checks {where} vs whole, median (range) of {rounds}: {spread(ratios)} "
          f"(target >= 0.8)")


def fill_records(bootstrap: str, topic: str, records: list[SourceRecord]) -> None:
    """`records` into a new `topic` (by their partitions) that takes messages of up to
    `BIG_BYTES`."""
    create_topic(bootstrap, topic, {"max.message.bytes": str(BIG_BYTES)})
    failed = []
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50,
                         "message.max.bytes": BIG_BYTES, "batch.size": 1_000_000,
                         "on_delivery": lambda error, _m: error and failed.append(error)})
    for record in records:
        produce(producer, topic, record.value, record.key, partition=record.partition)
    if producer.flush(300) or failed:
        sys.exit(f"{len(failed)} source message(s) of {topic} were not delivered")


def measure_claim_checks(bootstrap: str, store: S3, work: Path, count: int,
                         rounds: int) -> bool:
    """The bridge (one process, a real broker) on a topic where 1 % of the messages are
    claim-checks of 1 MB rows (TiCDC's objects on SeaweedFS's S3) against the same topic sent
    whole (its 1-2 MB messages in a topic that takes them), in turn, `rounds` times: the
    steady rates and their ratio. Both write their 1 MB rows to target topics that take
    them (``--kafka-config``: message.max.bytes)."""
    changes = plan(count)
    deletes = sum(1 for kind, _ in changes if kind == "DELETE")
    storage = work / "claims"
    storage.mkdir()
    whole = claim_check_records(changes, None)
    claimed = claim_check_records(changes, storage, f"s3://{CLAIM_BUCKET}/claims")
    started = time.perf_counter()
    upload(store, storage, CLAIM_BUCKET, "claims")
    objects = sorted(storage.iterdir())
    print(f"{len(objects):,} claim-check objects of "
          f"{sum(f.stat().st_size for f in objects) / len(objects) / 1e6:.2f} MB on S3 in "
          f"{time.perf_counter() - started:.1f} s")
    shutil.rmtree(storage)
    fill_records(bootstrap, "whole", whole)
    fill_records(bootstrap, "claimed", claimed)
    config = work / "big.properties"
    config.write_text(f"message.max.bytes={BIG_BYTES}\n")
    options = {"whole": ("--kafka-config", str(config)),
               "claimed": ("--kafka-config", str(config), "--claim-check-storage-uri",
                           store.uri(CLAIM_BUCKET, "claims"))}
    print(f"produced {count:,} Canal-JSON messages, 1 % with a 1 MB row: topic whole "
          f"(sent whole) and topic claimed (claim-checks)")

    def bridge(source: str, run: str) -> Timing:
        create_topic(bootstrap, f"{run}_bench_orders", {"max.message.bytes": str(BIG_BYTES)})
        return run_bridges(bootstrap, source, run, count, 1, work, options[source])

    bridge("whole", "warm_whole")  # untimed: the broker's JIT and page cache
    ratios, targets = [], ["warm_whole_bench_orders"]
    for turn in range(1, rounds + 1):
        timings = {}
        for source in ("whole", "claimed") if turn % 2 else ("claimed", "whole"):
            timings[source] = bridge(source, f"r{turn}{source}")
            report(f"round {turn}, bridge, {source}", timings[source])
            targets.append(f"r{turn}{source}_bench_orders")
        ratios.append(timings["claimed"].steady / timings["whole"].steady)
        print(f"round {turn}: claim-checks on S3 vs whole = {ratios[-1]:.2f}")
    print(f"bridge, claim-checks on S3 vs sent whole (1 % of {count:,} messages 1 MB), median "
          f"(range) of {rounds}: {spread(ratios)} (target >= 0.8)")
    print("targets (read_committed):")
    return all([check(bootstrap, topic, count, deletes) for topic in targets])


def compare_protocols(changes: list[tuple[str, int]], work: Path, rounds: int) -> None:
    """The conversion step on the same changes written in Debezium and in Canal-JSON, each in
    a child process, `rounds` times in turn: the Debezium rate over the Canal-JSON one."""
    ratios = []
    for turn in range(rounds):
        canal_rate = convert_apart(changes, work / f"c{turn}.sqlite", Protocol.CANAL_JSON)
        dbz_rate = convert_apart(changes, work / f"d{turn}.sqlite", Protocol.DEBEZIUM)
        ratios.append(dbz_rate / canal_rate)
        print(f"conversion alone, same rows: Canal-JSON {canal_rate:,.0f} msg/s, Debezium "
              f"{dbz_rate:,.0f} msg/s = {dbz_rate / canal_rate:.2f}")
    print(f"Debezium vs Canal-JSON conversion, median (range) of {rounds}: {spread(ratios)}")


# -- results -------------------------------------------------------------------------------

def read_target(bootstrap: str, topic: str) -> tuple[int, int]:
    """(messages, tombstones) committed in `topic`."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-reader",
                         "isolation.level": "read_committed", "enable.partition.eof": True,
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    count = tombstones = 0
    finished: set[int] = set()
    while len(finished) < PARTITIONS:
        for message in consumer.consume(10_000, 10):
            error = message.error()
            if error is None:
                count += 1
                tombstones += message.value() is None
            elif error.code() == KafkaError._PARTITION_EOF:
                finished.add(message.partition())
            else:
                sys.exit(f"reading {topic}: {error.str()}")
    consumer.close()
    return count, tombstones


def check(bootstrap: str, topic: str, messages: int, deletes: int) -> bool:
    count, tombstones = read_target(bootstrap, topic)
    ok = count == messages and tombstones == deletes
    print(f"  {topic}: {count:,} messages ({tombstones:,} tombstones), expected {messages:,} "
          f"({deletes:,}): {'ok' if ok else 'WRONG'}")
    return ok


def report(name: str, timing: Timing) -> None:
    steady, wall = timing.end - timing.first, timing.end - timing.start
    print(f"{name:<28} {timing.steady:>8,.0f} msg/s steady ({steady:.1f} s from the first "
          f"commit); {timing.wall:,.0f} msg/s wall ({wall:.1f} s, start-up to the first commit "
          f"{timing.first - timing.start:.1f} s)")


def measure(bootstrap: str, work: Path, count: int, rounds: int) -> bool:
    warm = plan(WARM_UP)
    fill_source(bootstrap, "warmup", warm)
    run_pass_through(bootstrap, "warmup", "warm_pass", len(warm))
    run_bridges(bootstrap, "warmup", "warm_bridge", len(warm), 1, work)
    changes = plan(count)
    kinds = {k: sum(1 for kind, _ in changes if kind == k) for k in ("INSERT", "UPDATE", "DELETE")}
    deletes, size = kinds["DELETE"], sum(len(canal(k, i, 0)) for k, i in changes[:BATCH]) / BATCH
    started = time.perf_counter()
    fill_source(bootstrap, "canal", changes)
    print(f"produced {count:,} Canal-JSON messages ({kinds['INSERT']:,} inserts, "
          f"{kinds['UPDATE']:,} updates, {deletes:,} deletes; {size:,.0f} bytes each) over "
          f"{PARTITIONS} partitions in {time.perf_counter() - started:.1f} s")
    # The broker speeds up over its first full reads of the topic (its JIT, the page cache):
    # untimed pass-throughs first, or the first rounds' raw figure is low (with one, the first
    # round's was still half the next ones').
    for warm_run in range(WARM_PASSES):
        run_pass_through(bootstrap, "canal", f"warm_full{warm_run}", count)
    ratios: dict[str, list[float]] = {"bridge/pass": [], "2/1": [], "3/1": [], "bound": [],
                                   "ceiling": []}
    targets = []
    for turn in range(1, rounds + 1):
        print(f"round {turn} of {rounds}:")
        copy = run_pass_through(bootstrap, "canal", f"pass{turn}", count)
        report("transactional pass-through", copy)
        steady = {}
        for copies in COPIES:
            run = f"r{turn}bridge{copies}"
            timing = run_bridges(bootstrap, "canal", run, count, copies, work)
            report(f"{copies} bridge{'s, one group' if copies > 1 else ''}", timing)
            steady[copies] = timing.steady
            targets.append(f"{run}_bench_orders")
        alone = convert_apart(changes, work / f"alone{turn}.sqlite")
        bound = 1 / (1 / copy.steady + 1 / alone)
        print(f"{'conversion alone (no Kafka)':<28} {alone:>8,.0f} msg/s = "
              f"{alone / copy.steady:.2f} of the copy (the bridge converts every message: its "
              f"ceiling); copy + convert one after the other: {bound:,.0f} msg/s = "
              f"{bound / copy.steady:.2f} of the copy")
        ratios["bound"].append(bound / copy.steady)
        ratios["ceiling"].append(alone / copy.steady)
        ratios["bridge/pass"].append(steady[1] / copy.steady)
        ratios["2/1"].append(steady[2] / steady[1])
        ratios["3/1"].append(steady[3] / steady[1])
        targets.append(f"pass{turn}_copy")
    print(f"bridge vs transactional pass-through, median (range) of {rounds} round(s): "
          f"{spread(ratios['bridge/pass'])} (target >= 0.7); the conversion alone: "
          f"{spread(ratios['ceiling'])}; copying and converting one after the other: "
          f"{spread(ratios['bound'])} (1 / (1/pass + 1/conversion))")
    print(f"2 bridges vs 1: {spread(ratios['2/1'])}; 3 bridges vs 1: {spread(ratios['3/1'])} "
          f"({os.cpu_count()} cores: the copies share them with the broker and each other)")
    print("targets (read_committed):")
    return all([check(bootstrap, topic, count, 0 if topic.endswith("_copy") else deletes)
                for topic in targets])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--conversion-only", action="store_true",
                        help="only the conversion step: Debezium vs Canal-JSON, and 1 %% "
                             "claim-checks vs the same messages whole (no Kafka)")
    parser.add_argument("--claim-check-storage", choices=["file", "s3"], default="file",
                        help="with --conversion-only: the claim-check objects in a local "
                             "directory, or on S3 (SeaweedFS on loopback; then the claim-check "
                             "comparison alone)")
    parser.add_argument("--claim-checks", action="store_true",
                        help="only the bridge (a real broker) on a topic where 1 %% of the "
                             "messages are claim-checks of 1 MB rows on S3 (SeaweedFS) vs the "
                             "same topic sent whole (--messages / 5 messages)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="flatavro-bench-bridge-"))
    if args.conversion_only:
        try:
            if args.claim_check_storage == "s3":
                with seaweedfs(work / "s3") as store:
                    compare_claim_checks(plan(args.messages // 4), work, args.rounds, store)
            else:
                compare_protocols(plan(args.messages), work, args.rounds)
                compare_claim_checks(plan(args.messages // 4), work, args.rounds)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return
    try:
        if args.claim_checks:
            with broker(work / "kafka") as bootstrap, seaweedfs(work / "s3") as store:
                ok = measure_claim_checks(bootstrap, store, work, args.messages // 5,
                                          args.rounds)
        else:
            with broker(work / "kafka") as bootstrap:
                ok = measure(bootstrap, work, args.messages, args.rounds)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
