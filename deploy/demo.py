"""``make demo``: the end-to-end story on this machine.

Starts a KRaft broker and the service, registers a table from DDL, converts Canal-JSON
messages into flat-avro (``/v1/convert/canal-json``), produces them to Kafka, evolves the
table (ALTER ADD COLUMN with a default, registered as version 2), converts and produces more,
bulk-reads the topic with the Spark job (``--materialize``) and prints the table. Then it starts
the streaming job (``python -m spark_jobs.stream``, a micro-batch every second) into a Delta
table and, while it runs, produces more changes, evolves the table again (version 3), produces
changes of version 3, waits until the Delta table shows them, prints it (read with delta-rs),
and stops the stream (SIGTERM, exit 0) and everything else.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
from confluent_kafka import Producer
from deltalake import DeltaTable, QueryBuilder
from deltalake.exceptions import TableNotFoundError

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from spark_jobs.jobs.bulk_read import run  # noqa: E402
from spark_jobs.session import build_session  # noqa: E402
from spark_jobs.settings.config import JobConfig  # noqa: E402

TOPIC = "tidb_shop_orders"
DDL_V1 = ("CREATE TABLE shop.orders (id BIGINT PRIMARY KEY, sku VARCHAR(32) NOT NULL, "
          "price DECIMAL(10,2) NOT NULL, created DATETIME(3))")
DDL_V2 = DDL_V1[:-1] + ", qty INT NOT NULL DEFAULT 1)"
DDL_V3 = DDL_V2[:-1] + ", status VARCHAR(16) NOT NULL DEFAULT 'new')"
MYSQL_TYPES = {"id": "bigint", "sku": "varchar", "price": "decimal", "created": "datetime",
               "qty": "int", "status": "varchar"}
OPTIONS = {"enable_tidb_extension": True}
ROW = {"id": "1", "sku": "A-1", "price": "9.90", "created": "2024-03-11 08:51:01.461"}
STREAM_COLUMNS = ("id", "sku", "price", "qty", "status", "_tidb_op")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Commits:
    """Canal-JSON messages with increasing TiDB commit timestamps."""

    def __init__(self) -> None:
        self.ts = 449_522_326_498_394_113

    def __call__(self, kind: str, row: dict[str, str | None],
                 old: dict[str, str | None] | None = None) -> dict[str, str]:
        self.ts += 1
        message = {"id": 0, "database": "shop", "table": "orders", "pkNames": ["id"],
                   "isDdl": False, "type": kind, "es": self.ts >> 18, "ts": 0, "sql": "",
                   "sqlType": {}, "mysqlType": {c: MYSQL_TYPES[c] for c in row},
                   "data": [row], "old": [old] if old else None,
                   "_tidb": {"commitTs": self.ts}}
        return {"value": json.dumps(message)}


def step(text: str) -> None:
    print(f"\n== {text}", flush=True)


def register(http: httpx.Client, ddl: str) -> None:
    print("  ", http.post("/v1/tables/register", json={
        "ddl": ddl, "options": OPTIONS}).raise_for_status().json(), flush=True)


def convert_and_produce(http: httpx.Client, producer: Producer,
                        messages: list[dict[str, str]]) -> None:
    done = http.post("/v1/convert/canal-json", json={"messages": messages})
    done.raise_for_status()
    for m in done.json()["messages"]:
        print(f"   {m['op']:<6} key id {m['key_schema_id']} value id {m['value_schema_id']} "
              f"from Canal-JSON message {m['source_index']}", flush=True)
        producer.produce(TOPIC, key=base64.b64decode(m["key"]), value=None if m["value"]
                         is None else base64.b64decode(m["value"]), partition=0)
    assert producer.flush(30) == 0


def start_service(work: Path, port: int) -> subprocess.Popen[bytes]:
    env = dict(os.environ, FLATAVRO_REGISTRY_DB_PATH=str(work / "registry.sqlite"),
               FLATAVRO_LOG_LEVEL="WARNING")
    service = subprocess.Popen([str(Path(sys.executable).parent / "flatavro"), "serve",
                                "--port", str(port)], env=env, stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz").status_code == 200:
                return service
        except httpx.TransportError:
            time.sleep(0.2)
    service.terminate()
    raise SystemExit("demo: the service did not answer /healthz")


def batch_story(http: httpx.Client, producer: Producer, commits: Commits, work: Path,
                bootstrap: str) -> None:
    """The first part: v1 changes, ALTER (v2), v2 changes, a bulk read of the topic."""
    step("service up; registering shop.orders (v1) from DDL")
    register(http, DDL_V1)
    step("converting Canal-JSON (3 inserts, an update, a delete) and producing")
    convert_and_produce(http, producer, [
        commits("INSERT", ROW),
        commits("INSERT", dict(ROW, id="2", sku="B-2", price="19.00")),
        commits("INSERT", dict(ROW, id="3", sku="C-3", created=None)),
        commits("UPDATE", dict(ROW, id="2", sku="B-2", price="17.50"),
                old=dict(ROW, id="2", sku="B-2", price="19.00")),
        commits("DELETE", dict(ROW, id="3", sku="C-3", created=None))])
    step("ALTER TABLE shop.orders ADD COLUMN qty INT NOT NULL DEFAULT 1 (v2)")
    register(http, DDL_V2)
    step("converting and producing more messages, with qty")
    convert_and_produce(http, producer, [
        commits("INSERT", dict(ROW, id="4", sku="D-4", price="5.00", qty="5")),
        commits("UPDATE", dict(ROW, qty="3"), old=dict(ROW, qty="1"))])
    step("Spark: bulk_read --materialize (from_avro, each writer id into v2)")
    spark = build_session("flatavro-demo", "local[2]")
    spark.sparkContext.setLogLevel("ERROR")
    try:
        output = str(work / "orders")
        run(spark, JobConfig(topic=TOPIC, output=output, bootstrap_servers=bootstrap,
                             service_url=str(http.base_url), materialize=True))
        table = spark.read.parquet(output).orderBy("id")
        table.select("id", "sku", "price", "created", "qty", "_tidb_op",
                     "_tidb_commit_ts").show(truncate=False)
        rows: list[Any] = table.collect()
    finally:
        spark.stop()
    assert [(r["id"], str(r["price"]), r["qty"]) for r in rows] == [
        (1, "9.90", 3), (2, "17.50", 1), (4, "5.00", 5)], rows
    print("   the materialized table matches the changes")


class Stream:
    """``python -m spark_jobs.stream`` as a child process; its progress lines (``stream: ...``)
    are echoed as they come, the rest of its stderr (Spark's logging) is kept for errors."""

    def __init__(self, command: list[str]) -> None:
        print("   python " + " ".join(f'"{a}"' if " " in a else a for a in command[1:]),
              flush=True)
        self.batches = 0  # progress lines of applied batches echoed so far
        self.process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE, text=True)
        self.tail: deque[str] = deque(maxlen=40)
        self.reader = threading.Thread(target=self._echo, daemon=True)
        self.reader.start()

    def _echo(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.tail.append(line.rstrip())
            for part in line.split("\r"):  # Spark's progress bar rewrites its line with \r
                if "stream: " in part:
                    print("   " + part[part.index("stream: "):].rstrip(), flush=True)
                    if "stream: batch " in part:
                        self.batches += 1

    def wait_for(self, condition: Callable[[], bool], what: str, timeout: float = 240) -> None:
        """Poll `condition` until it holds and the batch that made it so has logged its line
        (the table changes just before); stop the demo if the stream exits or time runs out."""
        deadline, before = time.monotonic() + timeout, self.batches
        while not (condition() and self.batches > before):
            if self.process.poll() is not None:
                self.reader.join(5)
                raise SystemExit(f"demo: the stream exited with {self.process.returncode} "
                                 f"before {what}:\n" + "\n".join(self.tail))
            if time.monotonic() > deadline:
                raise SystemExit(f"demo: {what} did not happen within {timeout:.0f} s")
            time.sleep(0.5)
        print(f"   ({what})", flush=True)

    def stop(self) -> int:
        """SIGTERM, then the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(120)
        self.reader.join(5)
        return code


def delta_rows(path: Path) -> list[dict[str, Any]]:
    """The table's rows by id, read with delta-rs (none before the stream's first commit):
    through QueryBuilder, as `to_pyarrow_table()` may abort the interpreter at exit and
    refuses deletion vectors (docs/streaming.md)."""
    try:
        table = DeltaTable(str(path))
    except TableNotFoundError:  # no folder yet, or a log without its first commit
        return []
    rows = QueryBuilder().register("orders", table).execute("SELECT * FROM orders ORDER BY id")
    return pa.table(rows.read_all()).to_pylist()


def show(rows: list[dict[str, Any]]) -> None:
    cells = [[str(row.get(c)) for c in STREAM_COLUMNS] for row in rows]
    widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(STREAM_COLUMNS)]
    for line in [list(STREAM_COLUMNS), *cells]:
        print("   " + "  ".join(v.ljust(w) for v, w in zip(line, widths, strict=True)).rstrip())


def stream_story(http: httpx.Client, producer: Producer, commits: Commits, work: Path,
                 bootstrap: str) -> None:
    """The second part: the stream applies the topic, then a live change of schema."""
    table = work / "delta" / "orders"
    step("streaming the topic into a Delta table: python -m spark_jobs.stream")
    stream = Stream([sys.executable, "-m", "spark_jobs.stream", "--topic", TOPIC,
                     "--bootstrap-servers", bootstrap, "--service-url",
                     str(http.base_url).rstrip("/"),
                     "--table-path", str(table), "--checkpoint", str(work / "delta" / "ckpt"),
                     "--trigger", "processing-time=1 seconds", "--master", "local[2]"])
    try:
        stream.wait_for(lambda: [r["id"] for r in delta_rows(table)] == [1, 2, 4],
                        "the table holds what the topic held")
        step("while it runs: more changes of v2 (insert 5, update 2, delete 4)")
        convert_and_produce(http, producer, [
            commits("INSERT", dict(ROW, id="5", sku="E-5", price="7.25", qty="2")),
            commits("UPDATE", dict(ROW, id="2", sku="B-2", price="16.00", qty="4"),
                    old=dict(ROW, id="2", sku="B-2", price="17.50", qty="1")),
            commits("DELETE", dict(ROW, id="4", sku="D-4", price="5.00", qty="5"))])
        stream.wait_for(lambda: [r["id"] for r in delta_rows(table)] == [1, 2, 5],
                        "the table shows them")
        step("while it runs: ALTER TABLE shop.orders ADD COLUMN status VARCHAR(16) NOT NULL "
             "DEFAULT 'new' (v3)")
        register(http, DDL_V3)
        step("converting and producing changes of v3 (insert 6, update 1), with status")
        convert_and_produce(http, producer, [
            commits("INSERT", dict(ROW, id="6", sku="F-6", price="3.10", qty="1",
                                   status="paid")),
            commits("UPDATE", dict(ROW, qty="3", status="shipped"), old=dict(ROW, qty="3"))])
        stream.wait_for(lambda: [(r["id"], r.get("status")) for r in delta_rows(table)] == [
            (1, "shipped"), (2, "new"), (5, "new"), (6, "paid")],
            "the table has the column status, without a restart")
        step(f"the Delta table {table} (delta-rs): rows written before the ALTER show "
             f"status = new, the column's default")
        show(delta_rows(table))
        print("   its commits: " + ", ".join(
            f"{h['version']} {h['operation']}" for h in reversed(DeltaTable(str(table)).history()))
            + " (the WRITE is the evolution: the new column in one commit)")
    finally:
        step("stopping the stream (SIGTERM)")
        code = stream.stop()
    print(f"   the stream exited with {code}")
    if code != 0:
        raise SystemExit(f"demo: the stream exited with {code}:\n" + "\n".join(stream.tail))


def main() -> int:
    work = Path(tempfile.mkdtemp(prefix="flatavro-demo-"))
    kafka_sh = ROOT / "deploy" / "kafka" / "kafka.sh"
    port, service_port = free_port(), free_port()
    bootstrap = f"127.0.0.1:{port}"
    step(f"starting a KRaft broker on {bootstrap}")
    subprocess.run([str(kafka_sh), "start", str(work / "kafka"), str(port), str(free_port())],
                   check=True, stdout=subprocess.DEVNULL)
    service = None
    try:
        service = start_service(work, service_port)
        producer = Producer({"bootstrap.servers": bootstrap, "log_level": 0})
        commits = Commits()
        with httpx.Client(base_url=f"http://127.0.0.1:{service_port}", timeout=30) as http:
            batch_story(http, producer, commits, work, bootstrap)
            stream_story(http, producer, commits, work, bootstrap)
        step("done; stopping the service and the broker")
    finally:
        if service is not None:
            service.terminate()
            service.wait(30)
        subprocess.run([str(kafka_sh), "stop", str(work / "kafka")], check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
