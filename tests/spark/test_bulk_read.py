"""The bulk-read job end to end: rows encoded by the service, produced to a real broker, read
back by a real Spark session with the real spark-avro jar."""

from __future__ import annotations

import base64
import os
import struct
import subprocess
import sys
from collections.abc import Iterator
from decimal import Context, Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import Producer
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T
from pyspark.testing import assertDataFrameEqual

from service.api.app import create_app
from service.api.settings import Settings
from service.core.domain import bit_bytes
from service.core.framing import frame, unframe
from service.core.mysql_types import MySQLType, TypeFamily
from service.core.table import Column
from spark_jobs.errors import JobError
from spark_jobs.jobs.bulk_read import run
from spark_jobs.settings.config import JobConfig, Mode, OutputFormat
from spark_jobs.settings.tables import PathTemplate, Topics
from tests.core.test_values import EDGE_DDL, EDGE_ROW, EDGE_TABLE, MIN_ROW
from tests.support.delta import read_delta
from tests.support.harness import ServedApp
from tests.support.parts import Broker, FlatavroRegistry

NULL_ROW = {c.name: None for c in EDGE_TABLE.columns} | {"id": 2}
LOW_ROW = dict(MIN_ROW, id=3)
LOCKED_KEY = "spark-s3cr3t"


@pytest.fixture
def service(tmp_path: Path) -> Iterator[httpx.Client]:
    settings = Settings(registry_db_path=str(tmp_path / "r.sqlite"), log_level="WARNING")
    app = ServedApp(create_app(settings), health_path="/healthz", lifespan="on").start()
    with httpx.Client(base_url=app.url, timeout=30) as http:
        yield http
    app.stop()


def register(http: httpx.Client, ddl: str, topic: str) -> None:
    done = http.post("/v1/tables/register", json={"ddl": ddl, "topic": topic})
    assert done.status_code == 200, done.text


def encode(http: httpx.Client, topic: str, records: list[dict[str, Any]]
           ) -> list[tuple[bytes | None, bytes | None]]:
    done = http.post(f"/v1/topics/{topic}/encode", json={"records": records})
    assert done.status_code == 200, done.text
    return [(None if m["key"] is None else base64.b64decode(m["key"]),
             None if m["value"] is None else base64.b64decode(m["value"]))
            for m in done.json()["messages"]]


def produce(broker: Broker, topic: str, messages: list[tuple[bytes | None, bytes | None]]
            ) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    for key, value in messages:
        producer.produce(topic, key=key, value=value, partition=0)
    assert producer.flush(30) == 0


def job(tmp_path: Path, broker: Broker, service: httpx.Client, topic: str,
        **changes: Any) -> JobConfig:
    return JobConfig(topic=topic, output=str(tmp_path / "out"),
                     bootstrap_servers=broker.bootstrap, service_url=str(service.base_url),
                     **changes)


def spark_value(column: Column, plain: Any) -> Any:
    """What Spark's from_avro gives for a plain-JSON value of the column (written per type,
    not computed by the code under test)."""
    if plain is None:
        return None
    family, col_type = column.type.family, column.type
    if family is TypeFamily.INTEGER and col_type.base is MySQLType.BIGINT and col_type.unsigned:
        return plain - (1 << 64) if plain >= 1 << 63 else plain  # long mode: the bit pattern
    if family is TypeFamily.FLOAT:
        return struct.unpack("<f", struct.pack("<f", plain))[0]
    if family is TypeFamily.DECIMAL and col_type.precision > 38:  # Spark's limit: Avro bytes
        unscaled = int(Decimal(plain).scaleb(col_type.scale, context=Context(prec=100)))
        return bytearray(unscaled.to_bytes((unscaled.bit_length() + 8) // 8, "big",
                                           signed=True))
    if family is TypeFamily.DECIMAL:
        return Decimal(plain)
    if family is TypeFamily.BLOB:
        return bytearray(base64.b64decode(plain))
    if family is TypeFamily.BIT:
        return bytearray(bit_bytes(int.from_bytes(base64.b64decode(plain), "big")))
    return plain


def expected_rows(rows: list[tuple[dict[str, Any], str]]) -> list[tuple[Any, ...]]:
    return [tuple(spark_value(c, row.get(c.name)) for c in EDGE_TABLE.columns) + (op,)
            for row, op in rows]


def read_output(spark: SparkSession, path: str, *drop: str) -> DataFrame:
    return spark.read.parquet(path).drop(*drop)


def test_all_types_nulls_and_deletes_end_to_end(spark: SparkSession, kafka: Broker,
                                                service: httpx.Client, tmp_path: Path) -> None:
    topic = "e2e_edge"
    register(service, EDGE_DDL, topic)
    messages = encode(service, topic, [
        {"op": "insert", "row": EDGE_ROW}, {"op": "insert", "row": NULL_ROW},
        {"op": "insert", "row": LOW_ROW}, {"op": "delete", "row": {"id": 3}}])
    produce(kafka, topic, messages)
    run(spark, job(tmp_path, kafka, service, topic))
    actual = read_output(spark, str(tmp_path / "out"), "_partition", "_timestamp")
    schema = {f.name: f.dataType for f in actual.schema.fields}
    assert schema["dec_neg"] == T.DecimalType(10, 2) and schema["bu"] == T.LongType()
    assert schema["dec_big"] == T.BinaryType()  # 65 digits: wider than Spark's decimals
    assert schema["bin"] == T.BinaryType() and schema["f"] == T.FloatType()
    source = [(EDGE_ROW, "upsert"), (NULL_ROW, "upsert"), (LOW_ROW, "upsert"),
              ({"id": 3}, "delete")]
    expected = spark.createDataFrame(
        [r + (o,) for r, o in zip(expected_rows(source), range(4), strict=True)],
        schema=actual.select(*[c.name for c in EDGE_TABLE.columns], "_op", "_offset").schema)
    assertDataFrameEqual(actual.select(*expected.columns), expected)
    # The same bytes through the service's /v1/decode give the same values.
    decoded = service.post("/v1/decode", json={"messages": [
        {"key": base64.b64encode(k).decode() if k else None,
         "value": base64.b64encode(v).decode() if v else None} for k, v in messages]}).json()
    by_service = [((m["value"] or m["key"]), "delete" if m["value"] is None else "upsert")
                  for m in decoded["messages"]]
    assert expected_rows(by_service) == expected_rows(source)


def test_schema_evolution_reads_into_the_latest_version(spark: SparkSession, kafka: Broker,
                                                        service: httpx.Client,
                                                        tmp_path: Path) -> None:
    topic = "e2e_items"
    register(service, "CREATE TABLE shop.items (id INT PRIMARY KEY, name VARCHAR(20))", topic)
    first = encode(service, topic, [{"op": "insert", "row": {"id": 1, "name": "a"}}])
    register(service, "CREATE TABLE shop.items (id INT PRIMARY KEY, name VARCHAR(20), "
                      "qty INT NOT NULL DEFAULT 7)", topic)
    second = encode(service, topic, [{"op": "insert", "row": {"id": 2, "name": "b", "qty": 3}}])
    assert unframe(first[0][1]).schema_id != unframe(second[0][1]).schema_id
    produce(kafka, topic, first + second)
    run(spark, job(tmp_path, kafka, service, topic))
    actual = read_output(spark, str(tmp_path / "out"), "_partition", "_offset", "_timestamp")
    expected = spark.createDataFrame([(1, "a", 7, "upsert"), (2, "b", 3, "upsert")],
                                     "id int, name string, qty int, _op string")
    assertDataFrameEqual(actual, expected)


def test_bad_frames_fail_or_go_to_the_dead_letter_output(spark: SparkSession, kafka: Broker,
                                                         service: httpx.Client,
                                                         tmp_path: Path) -> None:
    topic = "e2e_frames"
    register(service, "CREATE TABLE shop.f (id INT PRIMARY KEY, name VARCHAR(20))", topic)
    [(key, value)] = encode(service, topic, [{"op": "insert", "row": {"id": 1, "name": "a"}}])
    assert key is not None and value is not None
    body, schema_id = unframe(value).body, unframe(value).schema_id
    produce(kafka, topic, [(key, value), (key, b"\x01" + value[1:]), (key, frame(999, body)),
                           (key, frame(schema_id, b"\xff\xff\xff"))])
    with pytest.raises(JobError, match="offset 1: value: wrong magic byte 0x01"):
        run(spark, job(tmp_path, kafka, service, topic))
    assert not (tmp_path / "out").exists()
    run(spark, job(tmp_path, kafka, service, topic, mode=Mode.PERMISSIVE,
                   dead_letter=str(tmp_path / "dead")))
    good = read_output(spark, str(tmp_path / "out"), "_partition", "_offset", "_timestamp")
    assertDataFrameEqual(good, spark.createDataFrame([(1, "a", "upsert")],
                                                     "id int, name string, _op string"))
    dead = spark.read.parquet(str(tmp_path / "dead")).select("offset", "reason")
    reasons = {r["offset"]: r["reason"] for r in dead.collect()}
    assert reasons[1] == "value: wrong magic byte 0x01 at offset 0"
    assert reasons[2].startswith("value: unknown schema id 999")
    assert reasons[3] == "the body does not decode with its writer schema"


def test_a_body_that_does_not_decode_stops_failfast(spark: SparkSession, kafka: Broker,
                                                    service: httpx.Client,
                                                    tmp_path: Path) -> None:
    """A known schema id before a body its writer schema cannot read: failfast names the
    message (from_avro itself runs in PERMISSIVE mode; its null is the signal)."""
    topic = "e2e_body"
    register(service, "CREATE TABLE shop.g (id INT PRIMARY KEY, name VARCHAR(20))", topic)
    [(key, value)] = encode(service, topic, [{"op": "insert", "row": {"id": 1, "name": "a"}}])
    assert value is not None
    produce(kafka, topic, [(key, value), (key, frame(unframe(value).schema_id, b"\xff\xff"))])
    with pytest.raises(JobError) as caught:
        run(spark, job(tmp_path, kafka, service, topic))
    assert str(caught.value) == (
        "message at partition 0 offset 1: the body does not decode with its writer schema "
        "(--mode permissive --dead-letter PATH sets bad messages aside)")
    assert not (tmp_path / "out").exists()


def test_materialize_keeps_the_latest_state(spark: SparkSession, kafka: Broker,
                                            service: httpx.Client, tmp_path: Path) -> None:
    topic = "e2e_state"
    register(service, "CREATE TABLE shop.s (id INT PRIMARY KEY, name VARCHAR(20))", topic)
    produce(kafka, topic, encode(service, topic, [
        {"op": "insert", "row": {"id": 1, "name": "a"}},
        {"op": "insert", "row": {"id": 2, "name": "b"}},
        {"op": "update", "row": {"id": 1, "name": "a2"}},
        {"op": "delete", "row": {"id": 2}},
        {"op": "insert", "row": {"id": 3, "name": "c"}},
        {"op": "update", "row": {"id": 4, "name": "d"}, "old_row": {"id": 3, "name": "c"}}]))
    run(spark, job(tmp_path, kafka, service, topic, materialize=True))
    expected = spark.createDataFrame([(1, "a2"), (4, "d")], "id int, name string")
    assertDataFrameEqual(read_output(spark, str(tmp_path / "out")), expected)


def test_materialize_writes_a_delta_table(spark: SparkSession, kafka: Broker,
                                          service: httpx.Client, tmp_path: Path) -> None:
    """--format delta: the same latest state as a standard Delta table, read back by Spark
    and by delta-rs; a re-run with --overwrite replaces it with the same rows."""
    topic = "e2e_delta"
    register(service, "CREATE TABLE shop.d (id INT PRIMARY KEY, name VARCHAR(20))", topic)
    produce(kafka, topic, encode(service, topic, [
        {"op": "insert", "row": {"id": 1, "name": "a"}},
        {"op": "insert", "row": {"id": 2, "name": "b"}},
        {"op": "update", "row": {"id": 1, "name": "a2"}},
        {"op": "delete", "row": {"id": 2}}]))
    out = str(tmp_path / "out")
    for overwrite in (False, True):
        run(spark, job(tmp_path, kafka, service, topic, materialize=True, overwrite=overwrite,
                       output_format=OutputFormat.DELTA))
        assertDataFrameEqual(spark.read.format("delta").load(out),
                             spark.createDataFrame([(1, "a2")], "id int, name string"))
        assert read_delta(out).to_pylist() == [{"id": 1, "name": "a2"}]
    assert not list(tmp_path.glob("out.tmp-*"))


def test_bad_input_is_one_error_and_no_output(spark: SparkSession, kafka: Broker,
                                              service: httpx.Client, tmp_path: Path) -> None:
    topic = "e2e_bad"
    register(service, "CREATE TABLE shop.b (id INT PRIMARY KEY)", topic)
    produce(kafka, topic, encode(service, topic, [{"op": "insert", "row": {"id": 1}}]))
    with pytest.raises(JobError, match="not registered"):
        run(spark, job(tmp_path, kafka, service, "no_such_topic"))
    with pytest.raises(JobError, match="cannot reach"):
        run(spark, JobConfig(topic=topic, output=str(tmp_path / "o"),
                             bootstrap_servers=kafka.bootstrap,
                             service_url="http://127.0.0.1:9"))
    with pytest.raises(JobError, match="does not answer"):
        run(spark, JobConfig(topic=topic, output=str(tmp_path / "o"),
                             bootstrap_servers="127.0.0.1:9", service_url=str(service.base_url)))
    run(spark, job(tmp_path, kafka, service, topic))
    with pytest.raises(JobError, match="exists; pass --overwrite"):
        run(spark, job(tmp_path, kafka, service, topic))
    run(spark, job(tmp_path, kafka, service, topic, overwrite=True))
    dump = tmp_path / "dump"
    (spark.read.format("kafka").option("kafka.bootstrap.servers", kafka.bootstrap)
     .option("subscribe", topic).load().drop("value").write.parquet(str(dump)))
    with pytest.raises(JobError, match="lacks column"):
        run(spark, JobConfig(topic=topic, output=str(tmp_path / "o2"), input=str(dump),
                             service_url=str(service.base_url)))
    assert not (tmp_path / "o2").exists() and not (tmp_path / "o").exists()


def test_an_archived_dump_reads_like_the_topic(spark: SparkSession, kafka: Broker,
                                               service: httpx.Client, tmp_path: Path) -> None:
    topic = "e2e_dump"
    register(service, "CREATE TABLE shop.d (id INT PRIMARY KEY, v DECIMAL(5,2))", topic)
    produce(kafka, topic, encode(service, topic, [{"op": "insert", "row": {"id": 1, "v": "1.50"}}]))
    dump = str(tmp_path / "dump")
    (spark.read.format("kafka").option("kafka.bootstrap.servers", kafka.bootstrap)
     .option("subscribe", topic).load().write.parquet(dump))
    run(spark, JobConfig(topic=topic, output=str(tmp_path / "out"), input=dump,
                         service_url=str(service.base_url)))
    actual = read_output(spark, str(tmp_path / "out"), "_partition", "_offset", "_timestamp")
    assertDataFrameEqual(actual, spark.createDataFrame(
        [(1, Decimal("1.50"), "upsert")], "id int, v decimal(5,2), _op string"))


def test_main_straight_from_the_registry_and_one_line_errors(
        kafka: Broker, service: httpx.Client, tmp_path: Path) -> None:

    topic = "e2e_main"
    register(service, "CREATE TABLE shop.m (id INT PRIMARY KEY, name VARCHAR(9))", topic)
    produce(kafka, topic, encode(service, topic, [{"op": "insert", "row": {"id": 7, "name": "x"}}]))
    registry = f"{service.base_url}/registry"
    common = [sys.executable, "-m", "spark_jobs.bulk_read", "--bootstrap-servers",
              kafka.bootstrap, "--master", "local[1]"]
    done = subprocess.run([*common, "--registry-url", registry, "--topic", topic, "--output",
                           str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    env = {**os.environ, "FLATAVRO_REGISTRY_URL": registry}  # the registry from the settings
    failed = subprocess.run([*common, "--topic", "nope", "--output", str(tmp_path / "x")],
                            capture_output=True, text=True, timeout=300, check=False, env=env)
    assert failed.returncode == 2
    errors = [line for line in failed.stderr.splitlines() if line.startswith("bulk_read:")]
    assert errors == [f"bulk_read: error: subject nope-value is not registered at {registry} "
                      f"(unknown topic?)"]
    assert not (tmp_path / "x").exists()


def test_reads_a_service_that_protects_reads_with_its_key(
        spark: SparkSession, kafka: Broker, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """`flatavro serve` with FLATAVRO_API_KEYS and FLATAVRO_PROTECT_READS=true: the job reads
    its /registry with one of the keys (FLATAVRO_REGISTRY_BEARER_TOKEN, or the basic-auth
    password with --service-url); without it, the job stops naming those settings."""
    for name in list(os.environ):
        if name.upper().startswith("FLATAVRO_"):
            monkeypatch.delenv(name)
    (tmp_path / "locked").mkdir()
    locked = FlatavroRegistry(tmp_path / "locked", FLATAVRO_API_KEYS=LOCKED_KEY,
                              FLATAVRO_PROTECT_READS="true")
    try:
        topic = "e2e_locked"
        service_url = locked.url.removesuffix("/registry")
        with httpx.Client(base_url=service_url, timeout=30,
                          headers={"Authorization": f"Bearer {LOCKED_KEY}"}) as http:
            register(http, "CREATE TABLE shop.l (id INT PRIMARY KEY, name VARCHAR(9))", topic)
            produce(kafka, topic, encode(http, topic, [{"op": "insert",
                                                        "row": {"id": 1, "name": "x"}}]))
        config = JobConfig(topic=topic, output=str(tmp_path / "out"),
                           bootstrap_servers=kafka.bootstrap, registry_url=locked.url)
        with pytest.raises(JobError) as caught:
            run(spark, config)
        assert str(caught.value) == (
            f"the schema registry at {locked.url} refused access to subject {topic}-value "
            f"(401); credentials come from FLATAVRO_REGISTRY_USERNAME and "
            f"FLATAVRO_REGISTRY_PASSWORD, or FLATAVRO_REGISTRY_BEARER_TOKEN")
        assert not (tmp_path / "out").exists()
        expected = spark.createDataFrame([(1, "x", "upsert")], "id int, name string, _op string")
        monkeypatch.setenv("FLATAVRO_REGISTRY_BEARER_TOKEN", LOCKED_KEY)
        run(spark, config)
        assertDataFrameEqual(read_output(spark, config.output, "_partition", "_offset",
                                         "_timestamp"), expected)
        monkeypatch.delenv("FLATAVRO_REGISTRY_BEARER_TOKEN")
        monkeypatch.setenv("FLATAVRO_REGISTRY_USERNAME", "spark")
        monkeypatch.setenv("FLATAVRO_REGISTRY_PASSWORD", LOCKED_KEY)
        run(spark, JobConfig(topic=topic, output=config.output, overwrite=True,
                             bootstrap_servers=kafka.bootstrap, service_url=service_url))
        assertDataFrameEqual(read_output(spark, config.output, "_partition", "_offset",
                                         "_timestamp"), expected)
    finally:
        locked.stop()


def test_many_topics_each_into_its_output_and_a_failure_leaves_none(
        spark: SparkSession, kafka: Broker, service: httpx.Client, tmp_path: Path) -> None:
    tables = {"bulk_db_orders": "CREATE TABLE shop.orders (id INT PRIMARY KEY, v DECIMAL(5,2))",
              "bulk_db_log": "CREATE TABLE audit.log (at DATETIME, what VARCHAR(8))"}
    for topic, ddl in tables.items():
        register(service, ddl, topic)
    produce(kafka, "bulk_db_orders", encode(service, "bulk_db_orders", [
        {"op": "insert", "row": {"id": 1, "v": "1.50"}},
        {"op": "update", "row": {"id": 1, "v": "2.50"}},
        {"op": "insert", "row": {"id": 2, "v": "9.99"}}]))
    produce(kafka, "bulk_db_log", encode(service, "bulk_db_log", [
        {"op": "insert", "row": {"at": "2024-01-02 03:04:05", "what": "login"}}]))
    template = PathTemplate(str(tmp_path / "lake" / "{database}" / "{table}"))
    config = JobConfig(topic="", output=str(template), bootstrap_servers=kafka.bootstrap,
                       service_url=str(service.base_url), topics=Topics(pattern="bulk_db_.*"),
                       output_template=template, output_format=OutputFormat.DELTA)
    run(spark, config)
    orders = read_delta(tmp_path / "lake" / "shop" / "orders", order_by="_offset").to_pylist()
    assert [(r["id"], str(r["v"]), r["_op"]) for r in orders] == [
        (1, "1.50", "upsert"), (1, "2.50", "upsert"), (2, "9.99", "upsert")]
    log = read_delta(tmp_path / "lake" / "audit" / "log").to_pylist()
    assert [(r["at"], r["what"]) for r in log] == [("2024-01-02 03:04:05", "login")]

    # A dump of both topics, split by its topic column; --materialize, Parquet.
    dump = str(tmp_path / "dump")
    (spark.read.format("kafka").option("kafka.bootstrap.servers", kafka.bootstrap)
     .option("subscribePattern", "bulk_db_.*").load().write.parquet(dump))
    only = PathTemplate(str(tmp_path / "state" / "{topic}"))
    run(spark, JobConfig(topic="", output=str(only), input=dump,
                         service_url=str(service.base_url),
                         topics=Topics(names=("bulk_db_orders",)), output_template=only,
                         materialize=True))
    assert sorted(p.name for p in (tmp_path / "state").iterdir()) == ["bulk_db_orders"]
    state = read_output(spark, str(tmp_path / "state" / "bulk_db_orders"))
    assert sorted((r["id"], str(r["v"])) for r in state.collect()) == [(1, "2.50"), (2, "9.99")]

    # A bad frame in the second topic: failfast fails the job, and no output stays behind.
    produce(kafka, "bulk_db_orders", [(None, b"\x00\x00\x00\x7f\x01garbage")])
    again = JobConfig(**{**{f: getattr(config, f) for f in JobConfig.__slots__},
                         "output": str(tmp_path / "again" / "{topic}"),
                         "output_template": PathTemplate(str(tmp_path / "again" / "{topic}"))})
    with pytest.raises(JobError, match=r"topic bulk_db_orders .*partition 0 offset 3"):
        run(spark, again)
    assert not (tmp_path / "again").exists() or not any((tmp_path / "again").iterdir())
