"""Handle-key-only messages through the bridge with --upstream-tidb-dsn, against a real broker
and a real tidb-server: TiCDC's handle-key-only Canal-JSON messages (their commit ts rewritten
to the events run in TiDB) come out as the flat-avro their whole messages give, once each; a
TiDB that does not answer stops the bridge, nothing committed, no dead letter, the DSN's
password hidden."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition

from service.cdc.catalog import Protocol
from service.codec.convert import ConvertInput
from service.core.options import SchemaOptions
from service.usecases.runtime import Runtime
from service.usecases.settings import RuntimeSettings
from tests.bridge.test_bridge import create_topic, read_committed
from tests.cdc.test_handle_key_only import (
    KINDS,
    key_only_vector,
    lm_table,
    retimed,
    vector_bytes,
    whole_vector,
)
from tests.support.harness import free_port
from tests.support.parts import ROOT, Broker
from tests.support.tidb import UpstreamTiDB

__all__ = ["lm_table"]  # the fixture, used by name

Raw = tuple[bytes | None, bytes | None]


def _messages(commit_ts: dict[str, int]) -> tuple[list[Raw], list[Raw]]:
    """The handle-key-only Canal-JSON messages of the large row and their whole twins, with
    TiDB's commit ts."""
    key_only, whole = [], []
    for kind in KINDS:
        vector = key_only_vector("canal-json", kind)
        was, now = int(vector["commit_ts"]), commit_ts[kind]
        key_only.append((None, retimed(vector_bytes(vector, "value"), was=was, now=now)))
        whole.append((None, retimed(whole_vector("canal-json", kind)[1], was=was, now=now)))
    return key_only, whole


def _produce(broker: Broker, topic: str, messages: list[Raw]) -> None:
    create_topic(broker, topic, 1)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True})
    for key, value in messages:
        producer.produce(topic, key=key, value=value, partition=0)
    assert producer.flush(30) == 0


def _bridge(broker: Broker, source: str, registry: Path, *extra: str
            ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "service.cli.main", "bridge", "--protocol", "canal-json",
         "--source-topic", source, "--bootstrap-servers", broker.bootstrap,
         "--registry-file", str(registry), "--create-topics", "--register",
         "--enable-tidb-extension", "--group-id", f"g-{source}", "--instance-id", "one",
         "--topic", f"{source}_{{schema}}_{{table}}", "--exit-when-idle", "3", *extra],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)


def _converted(registry: Path, messages: list[Raw], rule: str) -> list[Raw]:
    async def convert() -> list[Raw]:
        runtime = Runtime.start(RuntimeSettings(registry_db_path=str(registry)))
        try:
            done = await runtime.converter.convert_raw(Protocol.CANAL_JSON, ConvertInput(
                messages, "raw", rule, False, SchemaOptions(enable_tidb_extension=True)))
            return [(m.key, m.value) for m in done.messages]
        finally:
            await runtime.stop()

    return asyncio.run(convert())


def test_the_bridge_reads_the_rows_from_tidb(kafka: Broker, upstream_tidb: UpstreamTiDB,
                                             lm_table: dict[str, int], tmp_path: Path) -> None:
    source, registry = "src_hko", tmp_path / "r.sqlite"
    key_only, whole = _messages(lm_table)
    _produce(kafka, source, key_only)
    done = _bridge(kafka, source, registry, "--upstream-tidb-dsn", upstream_tidb.dsn)
    assert done.returncode == 0, done.stderr[-3000:]
    got = [m for _, m in read_committed(kafka, f"{source}_lm_t")]
    assert got == _converted(registry, whole, f"{source}_{{schema}}_{{table}}")
    assert len(got) == 3


def test_a_tidb_that_does_not_answer_stops_the_bridge(kafka: Broker, tmp_path: Path,
                                                       lm_table: dict[str, int]) -> None:
    source, registry = "src_hko_down", tmp_path / "r.sqlite"
    _produce(kafka, source, _messages(lm_table)[0])
    dsn = f"cdc:n3ver-shown@tcp(127.0.0.1:{free_port()})/"
    done = _bridge(kafka, source, registry, "--upstream-tidb-dsn", dsn,
                   "--dead-letter-topic", f"{source}_dlt")
    assert done.returncode == 2, done.stderr[-3000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("flatavro: error [bridge_failed]: the batch from partition 0 offset "
                           "0 cannot be converted: upstream TiDB 'cdc:**********@tcp(127.0.0.1:"
                           ), last
    assert "did not answer after 3 attempts" in last and "n3ver" not in done.stderr
    consumer = Consumer({"bootstrap.servers": kafka.bootstrap, "group.id": f"g-{source}"})
    try:
        [offset] = consumer.committed([TopicPartition(source, 0)], timeout=30)
        topics = consumer.list_topics(timeout=10).topics
    finally:
        consumer.close()
    assert offset.offset < 0  # nothing committed
    dead_letter = f"{source}_dlt"
    assert dead_letter not in topics or not read_committed(kafka, dead_letter)
