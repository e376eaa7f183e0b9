"""The bulk-read job on a topic framed for AWS Glue's Schema Registry (``glue://``): the
service, registering in Glue (moto's server), writes Glue frames (``03 00 <version UUID>``);
the job resolves the topic's Glue schema versions on its driver and matches each message to its
writer by the 18-byte header, in Spark SQL, with a real broker and the real spark-avro jar."""

from __future__ import annotations

import subprocess
import sys
import uuid
import zlib
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
from pyspark.sql import SparkSession
from pyspark.testing import assertDataFrameEqual

from service.api.app import create_app
from service.api.settings import Settings
from service.core.framing import GLUE_HEADER_SIZE, frame
from spark_jobs.decoding.schemas import Framing, SubjectVersions, TopicVersions
from spark_jobs.decoding.transforms import ZLIB_GLUE_BODY, header_id
from spark_jobs.errors import JobError
from spark_jobs.jobs.bulk_read import run
from spark_jobs.settings.config import JobConfig, Mode
from tests.registry.test_glue_ticdc import MESSAGES, _replay, _ticdc_bytes
from tests.spark.test_bulk_read import encode, produce, register
from tests.support.delta import read_delta
from tests.support.glue import MotoGlue
from tests.support.harness import ServedApp
from tests.support.parts import Broker


@pytest.fixture(scope="module")
def moto() -> Iterator[MotoGlue]:
    server = MotoGlue()
    yield server
    server.stop()


@pytest.fixture
def glue_service(moto: MotoGlue, monkeypatch: pytest.MonkeyPatch
                 ) -> Iterator[tuple[httpx.Client, str]]:
    """A service registering in a new Glue registry, and the registry's URL; this process (the
    jobs' driver when a test calls `run`) has the AWS variables that reach moto."""
    for name, setting in moto.env().items():
        if name.startswith("AWS_"):
            monkeypatch.setenv(name, setting)
    url = moto.registry(f"spark-{uuid.uuid4().hex[:8]}")
    app = ServedApp(create_app(Settings(registry_url=url, log_level="WARNING")),
                    health_path="/healthz", lifespan="on").start()
    with httpx.Client(base_url=app.url, timeout=60) as http:
        yield http, url
    app.stop()


def test_glue_frames_read_into_the_latest_version_by_the_cli(
        kafka: Broker, glue_service: tuple[httpx.Client, str], moto: MotoGlue,
        tmp_path: Path) -> None:
    """Two Glue versions of the value (and the key's one): ``python -m spark_jobs.bulk_read
    --registry-url glue://...`` with the AWS variables in its environment reads each message
    with its writer version into the latest shape; --materialize --format delta, read back
    by delta-rs, is the source table's final state."""
    http, url = glue_service
    topic = "glue_items"
    register(http, "CREATE TABLE shop.items (id INT PRIMARY KEY, name VARCHAR(20))", topic)
    first = encode(http, topic, [{"op": "insert", "row": {"id": 1, "name": "a"}},
                                 {"op": "insert", "row": {"id": 2, "name": "b"}},
                                 {"op": "insert", "row": {"id": 3, "name": "c"}}])
    register(http, "CREATE TABLE shop.items (id INT PRIMARY KEY, name VARCHAR(20), "
                   "qty INT NOT NULL DEFAULT 7)", topic)
    second = encode(http, topic, [{"op": "insert", "row": {"id": 4, "name": "d", "qty": 3}},
                                  {"op": "update", "row": {"id": 2, "name": "b2", "qty": 5}},
                                  {"op": "delete", "row": {"id": 3}}])
    headers = {v[:GLUE_HEADER_SIZE] for _, v in first + second if v is not None}
    assert len(headers) == 2 and all(h[:2] == b"\x03\x00" for h in headers)  # 2 Glue versions
    produce(kafka, topic, first + second)
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "spark_jobs.bulk_read", "--bootstrap-servers", kafka.bootstrap,
         "--master", "local[1]", "--registry-url", url, "--topic", topic, "--output", str(out),
         "--format", "delta", "--materialize"],
        capture_output=True, text=True, timeout=300, check=False,
        env=moto.env())
    assert done.returncode == 0, done.stderr[-3000:]
    assert read_delta(out, order_by="id").to_pylist() == [
        {"id": 1, "name": "a", "qty": 7}, {"id": 2, "name": "b2", "qty": 5},
        {"id": 4, "name": "d", "qty": 3}]


def test_bad_glue_frames_fail_or_go_to_the_dead_letter_output(
        spark: SparkSession, kafka: Broker, glue_service: tuple[httpx.Client, str],
        tmp_path: Path) -> None:
    """A version UUID Glue does not hold for the subject stops failfast naming the UUID, the
    partition and the offset; permissive sets it aside with the other bad frames: a Confluent
    frame, a zlib-compressed Glue body (from_avro cannot read one), a header cut short, a body
    its writer version does not read."""
    http, url = glue_service
    topic = "glue_frames"
    register(http, "CREATE TABLE shop.f (id INT PRIMARY KEY, name VARCHAR(20))", topic)
    [(key, value)] = encode(http, topic, [{"op": "insert", "row": {"id": 1, "name": "a"}}])
    assert key is not None and value is not None
    header, body = value[:GLUE_HEADER_SIZE], value[GLUE_HEADER_SIZE:]
    stranger = uuid.UUID("0d6f6c2e-9a8b-4c1d-8e2f-3a4b5c6d7e8f")
    produce(kafka, topic, [
        (key, value),
        (key, b"\x03\x00" + stranger.bytes + body),
        (key, frame(1, body)),
        (key, b"\x03\x05" + header[2:] + zlib.compress(body)),
        (key, value[:10]),
        (key, header + b"\xff\xff")])
    config = JobConfig(topic=topic, output=str(tmp_path / "out"),
                       bootstrap_servers=kafka.bootstrap, registry_url=url)
    with pytest.raises(JobError) as caught:
        run(spark, config)
    assert str(caught.value) == (
        f"message at partition 0 offset 1: value: unknown AWS Glue schema version {stranger} "
        f"(not a version of {topic}-value) (--mode permissive --dead-letter PATH sets bad "
        f"messages aside)")
    assert not (tmp_path / "out").exists()

    run(spark, JobConfig(topic=topic, output=str(tmp_path / "out"),
                         bootstrap_servers=kafka.bootstrap, registry_url=url,
                         mode=Mode.PERMISSIVE, dead_letter=str(tmp_path / "dead")))
    good = spark.read.parquet(str(tmp_path / "out")).drop("_partition", "_timestamp")
    assertDataFrameEqual(good, spark.createDataFrame([(1, "a", "upsert", 0)],
                                                     "id int, name string, _op string, "
                                                     "_offset long"))
    dead = spark.read.parquet(str(tmp_path / "dead"))
    assert {r["offset"]: r["reason"] for r in dead.collect()} == {
        1: f"value: unknown AWS Glue schema version {stranger} (not a version of "
           f"{topic}-value)",
        2: "value: wrong first byte 0x00 at offset 0, expected 0x03 (an AWS Glue frame)",
        3: f"value: {ZLIB_GLUE_BODY}",
        4: "value: shorter than the 18-byte AWS Glue header (10 bytes)",
        5: "the body does not decode with its writer schema"}
    assert {bytes(r["value"]) for r in dead.where("offset = 1").collect()} == {
        b"\x03\x00" + stranger.bytes + body}  # the raw message, as it came


def _plain(column: dict[str, Any]) -> Any:
    """A TiCDC event column's value as Spark reads it from TiCDC's Avro (strings in the
    event)."""
    value, kind = column["value"], column["tidb_type"]
    if value is None or kind.startswith("varchar") or kind.startswith("datetime"):
        return value
    return Decimal(value) if kind.startswith("decimal") else int(value)


def test_ticdc_own_glue_messages_read_back_as_its_events(
        spark: SparkSession, kafka: Broker, moto: MotoGlue, monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    """TiCDC's own Glue-framed messages (tiflow v9.0.0-beta.2.pre, tests/registry/golden/glue:
    a table altered between its events, with deletes), its registrations replayed into moto:
    the job reads each message as the event TiCDC encoded, through both value versions."""
    for name, setting in moto.env().items():
        if name.startswith("AWS_"):
            monkeypatch.setenv(name, setting)
    registry = f"spark-ticdc-{uuid.uuid4().hex[:6]}"
    versions = _replay(moto, "ext-on", registry)
    topic = "flatavro_glue_orders"
    sent = [m for m in MESSAGES["messages"] if m["run"] == "ext-on" and m["topic"] == topic]
    produce(kafka, topic, [(_ticdc_bytes(m["key"], versions), _ticdc_bytes(m["value"], versions))
                           for m in sent])
    run(spark, JobConfig(topic=topic, output=str(tmp_path / "out"),
                         bootstrap_servers=kafka.bootstrap,
                         registry_url=f"glue://{registry}?region={moto.region}"
                                      f"&endpoint={moto.endpoint}"))
    names = ["id", "name", "amount", "created", "note", "qty"]
    got = [tuple(r) for r in spark.read.parquet(str(tmp_path / "out")).orderBy("_offset")
           .select(*names, "_op").collect()]
    events = {e["event_id"]: e["event"] for e in MESSAGES["events"]}
    expected = []
    for message in sent:
        event = events[message["event_id"]]
        if message["event_kind"] == "delete":
            expected.append((int(event["pre_columns"][0]["value"]), *[None] * 5, "delete"))
        else:
            # Before ALTER TABLE ... ADD COLUMN qty INT NULL DEFAULT 7: the default, as Avro's
            # resolution into the latest version gives it.
            row = {"qty": 7} | {c["name"]: _plain(c) for c in event["columns"]}
            expected.append((*[row[n] for n in names], "upsert"))
    assert got == expected
    assert len({v for (s, _), v in versions.items() if s == f"{topic}-value"}) == 2


def test_writer_ids_of_glue_headers() -> None:
    """What the stream compares to tell a new writer (a version registered meanwhile): the
    UUID of a Glue header, the id of a Confluent one, each only under its own framing."""
    version = uuid.uuid4()
    glue = SubjectVersions("t-value", "{}", 1, {1: "{}"}, {1: version})
    confluent = SubjectVersions("t-value", "{}", 9, {9: "{}"})
    assert glue.header(1) == b"\x03\x00" + version.bytes and confluent.header(9) == frame(9, b"")
    assert TopicVersions("t", None, glue).framing is Framing.GLUE
    assert TopicVersions("t", None, confluent).framing is Framing.CONFLUENT
    assert glue.writer_ids() == {version} and confluent.writer_ids() == {9}
    assert header_id(glue.header(1), Framing.GLUE) == version
    assert header_id(b"\x03\x05" + version.bytes, Framing.GLUE) == version  # compressed too
    assert header_id(confluent.header(9)) == 9
    assert header_id(confluent.header(9), Framing.GLUE) is None
    assert header_id(glue.header(1)) is None
    assert header_id(b"\x00" + bytes(17), Framing.GLUE) is None
    assert glue.only(1) == glue and Framing.GLUE.header_size == GLUE_HEADER_SIZE
