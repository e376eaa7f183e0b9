"""Every protocol through the bridge, crashes and scaling: two tables over the source
partitions (inserts, updates including a key change, deletes) become exactly the messages the
converter gives for the same input, once each — also after SIGKILLs at random moments and with
two bridges in one group; Simple DML before its BOOTSTRAP is held, or dead-lettered."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import cramjam
import orjson
import pytest
from confluent_kafka import (
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)

from service.cdc.catalog import Protocol
from service.codec.convert import ConvertInput
from service.core.ddl import table_from_ddl
from service.core.options import SchemaOptions
from service.core.table import Table
from service.usecases.runtime import Runtime
from service.usecases.settings import RuntimeSettings
from tests.bridge.test_bridge import by_key, create_topic, read_committed
from tests.cdc.builders import (
    Change,
    canal_messages,
    debezium_ddl,
    debezium_messages,
    open_protocol_message,
    simple_messages,
)
from tests.support.harness import free_port
from tests.support.object_store import ObjectStore
from tests.support.parts import ROOT, Broker

DDL = {"items": "CREATE TABLE shop.items (id INT PRIMARY KEY, name VARCHAR(20))",
       "users": "CREATE TABLE shop.users (uid BIGINT PRIMARY KEY, email VARCHAR(64))"}
ITEMS, USERS = table_from_ddl(DDL["items"]), table_from_ddl(DDL["users"])
RULE = "tidb_{schema}_{table}"
Raw = tuple[bytes | None, bytes | None]


def table_changes(table: Table, count: int, start: int = 0) -> list[Change]:
    """Inserts, then updates of every third row (one changes the key), then deletes."""
    key, value = table.columns[0].name, table.columns[1].name
    ts = 430_000_000_000_000_000 + start
    changes: list[Change] = [("insert", {key: n, value: f"v{n}"}, None, ts + n)
                             for n in range(start, start + count)]
    changes += [("update", {key: n, value: f"u{n}"}, {key: n, value: f"v{n}"}, ts + count + n)
                for n in range(start, start + count, 3)]
    changes.append(("update", {key: start + 10_000, value: "moved"},
                    {key: start + 1, value: f"v{start + 1}"}, ts + 3 * count))
    changes += [("delete", None, {key: n, value: f"v{n}"}, ts + 4 * count + n)
                for n in range(start + 2, start + count, 5)]
    return changes


def encoded(protocol: Protocol, table: Table, changes: list[Change]) -> list[Raw]:
    """The messages a changefeed of `protocol` writes for the changes (Kafka key, value)."""
    if protocol is Protocol.CANAL_JSON:
        return [(None, m.encode()) for m in canal_messages(table, changes)]
    if protocol is Protocol.SIMPLE:
        return [(None, m.encode()) for m in simple_messages(table, changes)]
    if protocol is Protocol.DEBEZIUM:  # the table's CREATE TABLE event first, in every partition
        return [(k.encode(), v.encode()) for k, v in [
            debezium_ddl(table, DDL[table.table], changes[0][3] - 1),
            *debezium_messages(table, changes)]]
    key, value = open_protocol_message(table, changes)
    return [(base64.b64decode(key), base64.b64decode(value))]


def source_messages(protocol: Protocol, partitions: int, per_table: int
                    ) -> dict[int, list[Raw]]:
    out: dict[int, list[Raw]] = defaultdict(list)
    for partition in range(partitions):
        for table in (ITEMS, USERS):
            out[partition] += encoded(protocol, table,
                                      table_changes(table, per_table, partition * 100_000))
    return out


def produce(broker: Broker, topic: str, by_partition: dict[int, list[Raw]]) -> None:
    # Idempotent: a retry after a broker restart must not write a source message twice.
    producer = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True})
    for partition, messages in by_partition.items():
        for key, value in messages:
            producer.produce(topic, key=key, value=value, partition=partition)
    assert producer.flush(30) == 0


def registered(registry: Path, rule: str = RULE) -> None:
    async def register() -> None:
        runtime = Runtime.start(RuntimeSettings(registry_db_path=str(registry)))
        try:
            for table in (ITEMS, USERS):
                await runtime.register_table(table, SchemaOptions(), topic_rule=rule)
        finally:
            await runtime.stop()

    asyncio.run(register())


def expected(protocol: Protocol, registry: Path | RuntimeSettings,
             by_partition: dict[int, list[Raw]], rule: str = RULE) -> dict[str, list[Raw]]:
    """The converter's messages for the same input (`registry`: the embedded registry's
    file, or the settings of another registry)."""
    settings = registry if isinstance(registry, RuntimeSettings) else RuntimeSettings(
        registry_db_path=str(registry))

    async def convert() -> dict[str, list[Raw]]:
        runtime = Runtime.start(settings)
        out: dict[str, list[Raw]] = defaultdict(list)
        try:
            for partition in sorted(by_partition):
                done = await runtime.converter.convert_raw(protocol, ConvertInput(
                    by_partition[partition], "raw", rule, False, SchemaOptions()))
                assert not done.pending
                for m in done.messages:
                    out[m.schemas.topic].append((m.key, m.value))
        finally:
            await runtime.stop()
        return out

    return asyncio.run(convert())


def command(protocol: Protocol, broker: Broker, source: str, registry: Path, group: str,
            instance: str, *extra: str, rule: str = RULE) -> list[str]:
    return [sys.executable, "-m", "service.cli.main", "bridge", "--protocol", protocol.value,
            "--source-topic", source, "--bootstrap-servers", broker.bootstrap,
            "--registry-file", str(registry), "--create-topics", "--group-id", group,
            "--instance-id", instance, "--topic", rule, *extra]


@contextmanager
def running(cmd: list[str], **popen: Any) -> Iterator[subprocess.Popen[Any]]:
    """A bridge process that never outlives its test: killed at exit if still running (a
    failed assertion or a timed-out wait would otherwise leave it converting in the
    background of every later test and benchmark)."""
    process = subprocess.Popen(cmd, cwd=ROOT, **popen)
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(30)


def exactly_once(broker: Broker, want: dict[str, list[Raw]], *, context: str = "") -> None:
    for topic, wanted in want.items():
        got = [m for _, m in read_committed(broker, topic)]
        assert len(got) == len(wanted), (f"{topic}: {len(got)} messages, want {len(wanted)}"
                                         f"\n{context}")
        assert by_key(got) == by_key(wanted), f"{topic}\n{context}"


@pytest.mark.parametrize("protocol", list(Protocol), ids=[p.value for p in Protocol])
def test_each_protocol_through_the_bridge(protocol: Protocol, kafka: Broker,
                                          tmp_path: Path) -> None:
    source, registry = f"src_{protocol.name.lower()}", tmp_path / "r.sqlite"
    rule = f"{protocol.name.lower()}_{{schema}}_{{table}}"
    registered(registry, rule)
    create_topic(kafka, source)
    messages = source_messages(protocol, 3, 20)
    produce(kafka, source, messages)
    done = subprocess.run(command(protocol, kafka, source, registry, "g", "one",
                                  "--exit-when-idle", "3", rule=rule),
                          cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    want = expected(protocol, registry, messages, rule)
    assert len(want) == 2
    exactly_once(kafka, want)


def claim_checked(messages: dict[int, list[Raw]], storage: Path,
                  writer: str = "file:///writer/claims") -> dict[int, list[Raw]]:
    """The same Canal-JSON messages as a changefeed with large-message-handle-compression=lz4
    and claim-check writes them (golden/large_message shows TiCDC's own): every value
    lz4-compressed (the frame format), every seventh stored whole in `storage` as TiCDC's
    ``{"key", "value"}`` JSON, its Kafka message the handle key and the location (`writer`'s
    path: the object is found by its base name)."""
    out: dict[int, list[Raw]] = {}
    for partition, raws in messages.items():
        out[partition] = []
        for n, (key, value) in enumerate(raws):
            assert value is not None
            if n % 7 == 3:
                name = f"{partition}-{n}.json"
                (storage / name).write_bytes(orjson.dumps(
                    {"key": None, "value": base64.b64encode(cramjam.lz4.compress(value))
                     .decode()}))
                document = orjson.loads(value)
                keys = document["pkNames"]
                for part in ("data", "old", "mysqlType", "sqlType"):
                    if isinstance(document[part], list):
                        document[part] = [{k: row[k] for k in keys} for row in document[part]]
                    elif isinstance(document[part], dict):
                        document[part] = {k: document[part][k] for k in keys}
                document["_tidb"]["claimCheckLocation"] = f"{writer}/{name}"
                value = orjson.dumps(document)
            out[partition].append((key, bytes(cramjam.lz4.compress(value))))
    return out


def on_s3(store: ObjectStore, storage: Path, bucket: str) -> str:
    """The claim-check objects of `storage` uploaded to `bucket` of `store` (under the prefix
    ``claims``, as TiCDC's ``s3://bucket/claims`` writes them): the storage URI, endpoint in
    TiDB's query option, credentials left to the AWS variables (`store.env()`)."""
    import boto3

    store.bucket(bucket)
    client = boto3.session.Session().client(
        "s3", endpoint_url=store.endpoint, region_name="us-east-1",
        aws_access_key_id=store.access_key, aws_secret_access_key=store.secret_key)
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda f: client.put_object(Bucket=bucket, Key=f"claims/{f.name}",
                                                  Body=f.read_bytes()), storage.iterdir()))
    return f"s3://{bucket}/claims?endpoint={store.endpoint}&force-path-style=true"


KILL_VARIANTS = {"plain": 0, "claim-check-lz4": 1, "claim-check-s3": 2}


@pytest.mark.parametrize("variant", list(KILL_VARIANTS))
def test_sigkill_at_random_moments_then_restart(kafka: Broker, tmp_path: Path, variant: str,
                                                request: pytest.FixtureRequest) -> None:
    """Killed three times, then run to the end: every row once. With claim-checks (in a
    directory, or on S3: a real SeaweedFS) and compression the output equals what the whole,
    plain messages give."""
    seed = int(os.environ.get("FLATAVRO_KILL_SEED", random.randrange(1 << 30)))
    print(f"seed {seed} (FLATAVRO_KILL_SEED={seed} repeats these kill moments)")
    rng = random.Random(seed)
    run = KILL_VARIANTS[variant]
    source, registry = f"src_kill_{run}", tmp_path / "r.sqlite"
    rule = f"kill{run}_{{schema}}_{{table}}"
    registered(registry, rule)
    create_topic(kafka, source)
    messages = source_messages(Protocol.CANAL_JSON, 3, 800)
    storage = tmp_path / "claims"
    storage.mkdir()
    env, uri = None, f"file://{storage}"
    if variant == "claim-check-s3":
        store: ObjectStore = request.getfixturevalue("object_store")
        produce(kafka, source, claim_checked(messages, storage, "s3://kill-claims/claims"))
        uri, env = on_s3(store, storage, "kill-claims"), store.env()
        shutil.rmtree(storage)  # read from S3 alone
    else:
        produce(kafka, source, claim_checked(messages, storage) if run else messages)
    cmd = command(Protocol.CANAL_JSON, kafka, source, registry, f"kill{run}", "one",
                  "--batch-size", "20", *(["--large-message-handle-compression", "lz4",
                                           "--claim-check-storage-uri", uri]
                                          if run else []), rule=rule)
    total, committed = sum(len(m) for m in messages.values()), [0]
    for attempt in range(3):
        with (tmp_path / f"{attempt}.log").open("w") as log, \
                running(cmd, stderr=log, env=env) as process:
            target = rule.format(schema="shop", table="items")
            deadline, written = time.monotonic() + 120, produced(kafka, target)
            while produced(kafka, target) <= written:  # until this run produces
                assert time.monotonic() < deadline and process.poll() is None, \
                    (tmp_path / f"{attempt}.log").read_text()[-3000:]
                time.sleep(0.1)
            time.sleep(rng.uniform(0, 1.5))
            process.send_signal(signal.SIGKILL)
            process.wait(30)
        committed.append(committed_offsets(kafka, f"kill{run}", source))
    print(f"committed source offsets after each kill: {committed} of {total}")
    assert all(0 < c < total for c in committed[1:]), "a kill missed the middle of the run"
    done = subprocess.run([*cmd, "--exit-when-idle", "3"], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, check=False, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    exactly_once(kafka, expected(Protocol.CANAL_JSON, registry, messages, rule),
                 context=f"the last run said:\n{done.stderr[-3000:]}")


def test_a_claim_check_storage_that_does_not_answer_stops_the_bridge(kafka: Broker,
                                                                    tmp_path: Path) -> None:
    """Not the messages' fault: no dead letters, nothing committed, one line naming the
    object and the endpoint after the attempts, without the URI's secret."""
    source, registry, rule = "src_s3_down", tmp_path / "r.sqlite", "s3down_{schema}_{table}"
    registered(registry, rule)
    create_topic(kafka, source, 1)
    storage = tmp_path / "claims"
    storage.mkdir()
    produce(kafka, source, claim_checked(source_messages(Protocol.CANAL_JSON, 1, 10), storage,
                                         "s3://claims/feed"))
    down = f"http://127.0.0.1:{free_port()}"
    uri = f"s3://claims/feed?endpoint={down}&access-key=AKIA5D&secret-access-key=n3ver/+shown"
    done = subprocess.run(
        command(Protocol.CANAL_JSON, kafka, source, registry, "s3down", "one",
                "--large-message-handle-compression", "lz4", "--claim-check-storage-uri", uri,
                "--dead-letter-topic", "s3down_dlt", "--exit-when-idle", "3", rule=rule),
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
        env={k: v for k, v in os.environ.items() if not k.startswith("AWS_")})
    assert done.returncode == 2, done.stderr[-3000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("flatavro: error [bridge_failed]: the batch from partition 0 offset 0 "
                           "cannot be converted: claim-check object 's3://claims/feed/0-3.json' "
                           "cannot be read from s3://claims/feed/0-3.json at "
                           f"{down} after 3 attempts: "), last
    assert "n3ver" not in done.stderr and "AKIA5D" not in done.stderr
    assert committed_offsets(kafka, "s3down", source) == 0


def produced(broker: Broker, topic: str) -> int:
    """How many records `topic` holds, committed or not (0 before it exists, and while a
    partition the bridge just created has no leader yet: nothing can be in it)."""
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "watermarks"})
    try:
        metadata = consumer.list_topics(topic, 10).topics[topic]
        if metadata.error is not None or any(
                p.leader < 0 for p in metadata.partitions.values()):
            return 0
        try:
            return sum(consumer.get_watermark_offsets(TopicPartition(topic, p), 10)[1]
                       for p in metadata.partitions)
        except KafkaException as exc:
            if exc.args[0].code() in (KafkaError.NOT_LEADER_FOR_PARTITION,
                                      KafkaError.LEADER_NOT_AVAILABLE):
                return 0
            raise
    finally:
        consumer.close()


_COORDINATOR_MOVING = frozenset({
    KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    KafkaError.COORDINATOR_NOT_AVAILABLE, KafkaError._TIMED_OUT, KafkaError._TRANSPORT})


def committed_offsets(broker: Broker, group: str, topic: str) -> int:
    """The sum of the group's committed offsets of `topic` (a killed bridge's open transaction
    holds its pending commit until the restart aborts it: not counted). Asked by a consumer of
    the group that never joins it: librdkafka 2.16's AdminClient.list_consumer_group_offsets
    crashes the process (SIGSEGV in rd_kafka_cgrp_op) when the answer is a coordinator error,
    as while the offsets topic loads after a broker restart. Coordinator errors are asked
    again for up to 60 s."""
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group,
                         "isolation.level": "read_uncommitted", "enable.auto.commit": False,
                         "log_level": 0})
    deadline = time.monotonic() + 60
    try:
        partitions = consumer.list_topics(topic, 10).topics[topic].partitions
        while True:
            try:
                offsets = consumer.committed([TopicPartition(topic, p) for p in partitions], 30)
                return sum(max(tp.offset, 0) for tp in offsets)
            except KafkaException as exc:  # the coordinator loading or moving: ask again
                if exc.args[0].code() not in _COORDINATOR_MOVING or time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
    finally:
        consumer.close()


def test_two_bridges_split_the_partitions_and_one_takes_over(kafka: Broker,
                                                             tmp_path: Path) -> None:
    source, registry, rule = "src_pair", tmp_path / "r.sqlite", "pair_{schema}_{table}"
    registered(registry, rule)
    create_topic(kafka, source, 4)
    messages = source_messages(Protocol.CANAL_JSON, 4, 300)
    produce(kafka, source, messages)
    logs = [tmp_path / "a.log", tmp_path / "b.log"]
    with ExitStack() as stack:
        bridges = [stack.enter_context(running(
            [*command(Protocol.CANAL_JSON, kafka, source, registry, "pair", name,
                      "--batch-size", "20", rule=rule),
             *(["--exit-when-idle", "6"] if name == "b" else [])],
            stderr=stack.enter_context(log.open("w"))))
            for name, log in zip("ab", logs, strict=True)]
        time.sleep(6)
        bridges[0].send_signal(signal.SIGTERM)  # a graceful stop: b takes its partitions over
        assert bridges[0].wait(60) == 0, logs[0].read_text()[-3000:]
        assert bridges[1].wait(300) == 0, logs[1].read_text()[-3000:]
    exactly_once(kafka, expected(Protocol.CANAL_JSON, registry, messages, rule))


def _simple_pending(table: Table) -> list[Raw]:
    """DML whose table version has not been seen, then the BOOTSTRAP, then more DML."""
    first = simple_messages(table, table_changes(table, 3))
    later = simple_messages(table, table_changes(table, 3, 50))
    return [(None, m.encode()) for m in [*first[1:], first[0], *later[1:]]]


def test_simple_dml_before_its_bootstrap_is_held_then_converted(kafka: Broker,
                                                                tmp_path: Path) -> None:
    source, registry, rule = "src_simple_held", tmp_path / "r.sqlite", "held_{schema}_{table}"
    registered(registry, rule)
    create_topic(kafka, source, 1)
    messages = {0: _simple_pending(ITEMS)}
    produce(kafka, source, messages)
    done = subprocess.run(command(Protocol.SIMPLE, kafka, source, registry, "held", "one",
                                  "--exit-when-idle", "3", rule=rule), cwd=ROOT,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    # The converter, given the BOOTSTRAP first, gives the same messages.
    reordered = {0: [messages[0][len(table_changes(ITEMS, 3))], *messages[0]]}
    want = expected(Protocol.SIMPLE, registry, reordered, rule)
    assert list(want) == ["held_shop_items"]
    exactly_once(kafka, want)


def test_simple_dml_that_waits_too_long_is_dead_lettered(kafka: Broker,
                                                         tmp_path: Path) -> None:
    source, registry = "src_simple_late", tmp_path / "r.sqlite"
    registered(registry)
    create_topic(kafka, source, 1)
    orphan = simple_messages(USERS, table_changes(USERS, 1))[1]  # its BOOTSTRAP never comes
    produce(kafka, source, {0: [(None, orphan.encode())]})
    done = subprocess.run(command(Protocol.SIMPLE, kafka, source, registry, "late", "one",
                                  "--pending-timeout", "2", "--exit-when-idle", "1",
                                  "--dead-letter-topic", "late_dlt"),
                          cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    dead = read_committed(kafka, "late_dlt")
    assert [m[1][1] for m in dead] == [orphan.encode()]
    without = subprocess.run(command(Protocol.SIMPLE, kafka, source, registry, "late2", "one",
                                     "--pending-timeout", "2", "--exit-when-idle", "1"),
                             cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert without.returncode == 2
    assert "partition 0 offset 0: its table schema did not arrive within --pending-timeout 2 s" \
        in without.stderr


def test_broker_down_or_unknown_topic_is_one_line_and_exit_2(kafka: Broker,
                                                             tmp_path: Path) -> None:
    registry = tmp_path / "r.sqlite"
    down = Broker.__new__(Broker)
    down.bootstrap = f"127.0.0.1:{free_port()}"
    started = time.monotonic()
    done = subprocess.run(command(Protocol.CANAL_JSON, down, "x", registry, "g", "one"),
                          cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2 and time.monotonic() - started < 60
    assert done.stderr.strip().splitlines()[-1].startswith(
        f"flatavro: error [bridge_failed]: the Kafka broker at {down.bootstrap} does not answer")
    missing = subprocess.run(command(Protocol.CANAL_JSON, kafka, "no_such_src", registry, "g",
                                     "one"), cwd=ROOT, capture_output=True, text=True,
                             timeout=120, check=False)
    assert missing.returncode == 2
    assert missing.stderr.strip().splitlines()[-1] == (
        f"flatavro: error [bridge_failed]: the source topic no_such_src does not exist at "
        f"{kafka.bootstrap}")


def test_simple_avro_from_ticdc_bridges_to_the_bytes_of_its_json_twin(
        kafka: Broker, tmp_path: Path) -> None:
    """TiCDC v8.3.0's own Simple-protocol messages (tests/cdc/golden/simple_avro: the same
    statements written with encoding-format avro and json) through two bridges: the flat-avro
    topics hold the same bytes, message for message."""
    golden = ROOT / "tests" / "cdc" / "golden" / "simple_avro"
    outputs = {}
    for encoding in ("avro", "json"):
        lines = [json.loads(line) for line in
                 (golden / f"types.{encoding}.ndjson").read_text().splitlines()]
        values = [base64.b64decode(m["value"]) if encoding == "avro" else m["value"].encode()
                  for m in lines]
        source = f"simple_{encoding}"
        create_topic(kafka, source, 1)
        produce(kafka, source, {0: [(None, v) for v in values]})
        registry = tmp_path / f"{encoding}.sqlite"
        done = subprocess.run(
            command(Protocol.SIMPLE, kafka, source, registry, f"g-{encoding}", "t",
                    "--register", "--exit-when-idle", "3", rule=f"simple_out_{encoding}"),
            capture_output=True, text=True, timeout=180, check=False)
        assert done.returncode == 0, done.stderr[-2000:]
        outputs[encoding] = [m for _, m in read_committed(kafka, f"simple_out_{encoding}")]
    assert outputs["avro"] and outputs["avro"] == outputs["json"]
