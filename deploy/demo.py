"""``make demo``: the end-to-end story on this machine.

Starts a KRaft broker and the service, registers a table from DDL, converts Canal-JSON
messages into flat-avro (``/v1/convert/canal-json``), produces them to Kafka, evolves the
table (ALTER ADD COLUMN with a default, registered as version 2), converts and produces more,
bulk-reads the topic with the Spark job (``--materialize``), prints the table, stops all.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from confluent_kafka import Producer

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from spark_jobs.bulk_read import run  # noqa: E402
from spark_jobs.config import JobConfig  # noqa: E402
from spark_jobs.session import build_session  # noqa: E402

TOPIC = "tidb_shop_orders"
DDL_V1 = ("CREATE TABLE shop.orders (id BIGINT PRIMARY KEY, sku VARCHAR(32) NOT NULL, "
          "price DECIMAL(10,2) NOT NULL, created DATETIME(3))")
DDL_V2 = DDL_V1[:-1] + ", qty INT NOT NULL DEFAULT 1)"
TYPES_V1 = {"id": "bigint", "sku": "varchar", "price": "decimal", "created": "datetime"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def canal(kind: str, row: dict[str, str | None], ts: int, old: dict[str, str | None] | None
          = None) -> dict[str, str]:
    types = dict(TYPES_V1, **({"qty": "int"} if "qty" in row else {}))
    message = {"id": 0, "database": "shop", "table": "orders", "pkNames": ["id"],
               "isDdl": False, "type": kind, "es": ts >> 18, "ts": 0, "sql": "",
               "sqlType": {}, "mysqlType": types, "data": [row],
               "old": [old] if old else None, "_tidb": {"commitTs": ts}}
    return {"value": json.dumps(message)}


def step(text: str) -> None:
    print(f"\n== {text}", flush=True)


def convert_and_produce(http: httpx.Client, producer: Producer,
                        messages: list[dict[str, str]]) -> None:
    done = http.post("/v1/convert/canal-json", json={"messages": messages})
    done.raise_for_status()
    for m in done.json()["messages"]:
        print(f"   {m['op']:<6} key id {m['key_schema_id']} value id {m['value_schema_id']} "
              f"from Canal-JSON message {m['source_index']}")
        producer.produce(TOPIC, key=base64.b64decode(m["key"]), value=None if m["value"]
                         is None else base64.b64decode(m["value"]), partition=0)
    assert producer.flush(30) == 0


def main() -> int:
    work = Path(tempfile.mkdtemp(prefix="flatavro-demo-"))
    kafka_sh = ROOT / "deploy" / "kafka" / "kafka.sh"
    port, service_port = free_port(), free_port()
    step(f"starting a KRaft broker on 127.0.0.1:{port}")
    subprocess.run([str(kafka_sh), "start", str(work / "kafka"), str(port), str(free_port())],
                   check=True, stdout=subprocess.DEVNULL)
    env = dict(os.environ, FLATAVRO_REGISTRY_DB_PATH=str(work / "registry.sqlite"),
               FLATAVRO_LOG_LEVEL="WARNING")
    service = subprocess.Popen([str(Path(sys.executable).parent / "flatavro"), "serve",
                                "--port", str(service_port)], env=env,
                               stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{service_port}"
        with httpx.Client(base_url=url, timeout=30) as http:
            for _ in range(100):
                try:
                    if http.get("/healthz").status_code == 200:
                        break
                except httpx.TransportError:
                    time.sleep(0.2)
            step(f"service on {url}; registering shop.orders (v1) from DDL")
            options = {"enable_tidb_extension": True}
            print("  ", http.post("/v1/tables/register", json={
                "ddl": DDL_V1, "options": options}).raise_for_status().json())
            producer = Producer({"bootstrap.servers": f"127.0.0.1:{port}", "log_level": 0})
            ts = 449_522_326_498_394_113
            step("converting Canal-JSON (3 inserts, an update, a delete) and producing")
            row = {"id": "1", "sku": "A-1", "price": "9.90", "created": "2024-03-11 08:51:01.461"}
            convert_and_produce(http, producer, [
                canal("INSERT", row, ts),
                canal("INSERT", dict(row, id="2", sku="B-2", price="19.00"), ts + 1),
                canal("INSERT", dict(row, id="3", sku="C-3", created=None), ts + 2),
                canal("UPDATE", dict(row, id="2", sku="B-2", price="17.50"), ts + 3,
                      old=dict(row, id="2", sku="B-2", price="19.00")),
                canal("DELETE", dict(row, id="3", sku="C-3", created=None), ts + 4)])
            step("ALTER TABLE shop.orders ADD COLUMN qty INT NOT NULL DEFAULT 1 (v2)")
            print("  ", http.post("/v1/tables/register", json={
                "ddl": DDL_V2, "options": options}).raise_for_status().json())
            step("converting and producing more messages, with qty")
            convert_and_produce(http, producer, [
                canal("INSERT", dict(row, id="4", sku="D-4", price="5.00", qty="5"), ts + 5),
                canal("UPDATE", dict(row, qty="3"), ts + 6, old=dict(row, qty="1"))])
            step("Spark: bulk_read --materialize (from_avro, each writer id into v2)")
            spark = build_session("flatavro-demo", "local[2]")
            spark.sparkContext.setLogLevel("ERROR")
            try:
                output = str(work / "orders")
                run(spark, JobConfig(topic=TOPIC, output=output,
                                     bootstrap_servers=f"127.0.0.1:{port}", service_url=url,
                                     materialize=True))
                table = spark.read.parquet(output).orderBy("id")
                table.select("id", "sku", "price", "created", "qty", "_tidb_op",
                             "_tidb_commit_ts").show(truncate=False)
                rows: list[Any] = table.collect()
            finally:
                spark.stop()
            assert [(r["id"], str(r["price"]), r["qty"]) for r in rows] == [
                (1, "9.90", 3), (2, "17.50", 1), (4, "5.00", 5)], rows
            step("the materialized table matches the changes; stopping")
    finally:
        service.terminate()
        service.wait(30)
        subprocess.run([str(kafka_sh), "stop", str(work / "kafka")], check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
