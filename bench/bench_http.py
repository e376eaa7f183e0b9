"""The service over a real socket against fastavro in-process, with every figure a ratio.

One run, one uvicorn worker (``flatavro serve`` in a child process, so the load generator does
not share its interpreter), the benchmark table of ``bench_row_codec`` (20 columns, two
DECIMALs, one DATETIME) registered first. Measures: batch encode and batch decode records/s
over HTTP vs fastavro's schemaless writer/reader on the same 1,000 records; registry calls made
by the measured requests (from ``/metrics``); single-record encode p99 vs ``/healthz`` p99 at
32 concurrent clients (alternating rounds, samples pooled); the server's RSS after 1,000,000
records vs after 10,000; last, batch encode records/s of ``flatavro serve --workers 2`` vs that
one worker (both on the same SQLite file, the same load of concurrent connections).
Run: ``python -m bench.bench_http``.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import gc
import io
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import fastavro
import httpx
import orjson
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from bench.bench_row_codec import BATCH, DDL, ROUNDS, rows
from bench.figures import summary
from service.core.ddl import table_from_ddl
from service.core.options import SchemaOptions
from service.core.schema import generate_schemas
from service.core.values import RowCodec

CLIENTS = 32
LATENCY_REQUESTS = 3_200  # per endpoint and round, after a warm-up of CLIENTS * WARM_UP
LATENCY_ROUNDS = 5  # alternating encode / healthz rounds, their samples pooled
WARM_UP = 10
MEMORY_RECORDS = 1_000_000
HEADER = 5  # Confluent framing: magic byte + 4-byte schema id
TOPIC_CACHE_SECONDS = 30.0  # the service's default
WORKERS = 2
WORKER_CLIENTS = 8  # concurrent connections, a new one per request so every worker takes some
WORKER_BATCHES = 3  # 1,000-record encode requests per connection and round
WORKER_ROUNDS = 5
JSON = {"content-type": "application/json"}


class Figure(NamedTuple):
    name: str
    line: str
    value: float
    target: str
    ok: bool


def ratio(name: str, line: str, value: float, target: str) -> Figure:
    limit = float(target.split()[1])
    return Figure(name, line, value, target, value >= limit if ">" in target else value <= limit)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def process_server(db_path: str, workers: int = 1) -> Iterator[tuple[str, int]]:
    """``flatavro serve`` in a child process; yields its URL and pid."""
    port = free_port()
    env = dict(os.environ, FLATAVRO_REGISTRY_DB_PATH=db_path, FLATAVRO_LOG_LEVEL="WARNING",
               FLATAVRO_TOPIC_CACHE_SECONDS=str(TOPIC_CACHE_SECONDS))
    child = subprocess.Popen([sys.executable, "-m", "service.cli.main", "serve",
                              "--host", "127.0.0.1", "--port", str(port),
                              "--workers", str(workers)], env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 15
        while True:
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(url + "/healthz", timeout=0.5).status_code == 200:
                    break
            if time.monotonic() > deadline or child.poll() is not None:
                raise RuntimeError("the server process did not answer /healthz within 15 s")
            time.sleep(0.05)
        yield url, child.pid
    finally:
        child.terminate()
        child.wait(timeout=10)


def register(client: httpx.Client) -> str:
    """Register the benchmark table; returns the encode path of its topic."""
    response = client.post("/v1/tables/register", json={"ddl": DDL})
    response.raise_for_status()
    return f"/v1/topics/{response.json()['topic']}/encode"


def post(client: httpx.Client, path: str, body: bytes) -> bytes:
    response = client.post(path, content=body, headers=JSON)
    if response.status_code != 200:
        raise RuntimeError(f"POST {path}: {response.status_code} {response.text[:300]}")
    return response.content


def registry_calls(client: httpx.Client) -> float:
    """The sum of ``flatavro_registry_calls_total`` over its labels."""
    return sum(float(line.rsplit(" ", 1)[1]) for line in client.get("/metrics").text.splitlines()
               if line.startswith("flatavro_registry_calls_total"))


def encode_body(plain: list[dict[str, Any]]) -> bytes:
    return orjson.dumps({"records": [{"op": "insert", "row": r} for r in plain]})


def interleaved_best_rates(first: Callable[[], None], second: Callable[[], None], *,
                           records: int = BATCH, rounds: int = ROUNDS) -> tuple[float, float]:
    """Best records/s of each, their rounds alternating so both meet the same machine noise."""
    best = [float("inf"), float("inf")]
    for _ in range(rounds):
        for slot, work in enumerate((first, second)):
            start = time.perf_counter()
            work()
            best[slot] = min(best[slot], time.perf_counter() - start)
    return records / best[0], records / best[1]


def throughput(name: str, http: Callable[[], None], raw: Callable[[], None],
               raw_name: str) -> Figure:
    http_rate, raw_rate = interleaved_best_rates(http, raw)
    return ratio(f"batch {name} http/raw", f"{name} over HTTP: {http_rate:,.0f} records/s; "
                 f"fastavro {raw_name}: {raw_rate:,.0f} records/s", http_rate / raw_rate, ">= 0.8")


def batch_figures(client: httpx.Client, encode_path: str) -> list[Figure]:
    """Batch encode and decode over HTTP vs fastavro on the same 1,000 records.

    The same work on both sides: each record is a key and a value, so fastavro writes (reads)
    both the key and the value body of every record.
    """
    table = table_from_ddl(DDL)
    pair = generate_schemas(table)
    assert pair.key_schema is not None
    schemas = (fastavro.parse_schema(pair.key_schema), fastavro.parse_schema(pair.value_schema))
    codecs = (RowCodec.for_key(table, SchemaOptions()), RowCodec.for_value(table, SchemaOptions()))
    plain = rows()
    datums = [(codecs[0].to_datum(r), codecs[1].to_datum(r)) for r in plain]  # type: ignore[union-attr]
    batch = encode_body(plain)
    messages = orjson.loads(post(client, encode_path, batch))["messages"]
    assert len(messages) == BATCH
    decode_body = orjson.dumps({"messages": [{"key": m["key"], "value": m["value"]}
                                             for m in messages]})
    bodies = [(base64.b64decode(m["key"])[HEADER:], base64.b64decode(m["value"])[HEADER:])
              for m in messages]
    post(client, "/v1/decode", decode_body)  # warm the schema-id cache

    def write_raw() -> None:
        for key, value in datums:
            fastavro.schemaless_writer(io.BytesIO(), schemas[0], key)
            fastavro.schemaless_writer(io.BytesIO(), schemas[1], value)

    def read_raw() -> None:
        for key, value in bodies:
            fastavro.schemaless_reader(io.BytesIO(key), schemas[0], None)
            fastavro.schemaless_reader(io.BytesIO(value), schemas[1], None)

    peer_lines(client, encode_path, pair, datums, messages, batch, decode_body)
    return [
        throughput("encode", lambda: post(client, encode_path, batch), write_raw,
                   "schemaless_writer (key + value)"),
        throughput("decode", lambda: post(client, "/v1/decode", decode_body), read_raw,
                   "schemaless_reader (key + value)"),
    ]


def peer_lines(client: httpx.Client, encode_path: str, pair: Any, datums: list[Any],
               messages: list[dict[str, Any]], batch: bytes, decode_body: bytes) -> None:
    """The service over HTTP vs the peer a Python pipeline would otherwise pick:
    confluent-kafka's AvroSerializer / AvroDeserializer in-process on the same records, key and
    value, their schema ids from the service's embedded registry (fetched once, then cached
    by the client). Printed for context; no target."""
    registry = SchemaRegistryClient({"url": str(client.base_url).rstrip("/") + "/registry"})
    topic = encode_path.split("/")[3]
    conf = {"auto.register.schemas": False, "use.latest.version": True}
    serializers = [(AvroSerializer(registry, json.dumps(schema), conf=conf),
                    SerializationContext(topic, field))
                   for schema, field in ((pair.key_schema, MessageField.KEY),
                                         (pair.value_schema, MessageField.VALUE))]
    deserializer = AvroDeserializer(registry)
    contexts = [SerializationContext(topic, f) for f in (MessageField.KEY, MessageField.VALUE)]
    framed = [(base64.b64decode(m["key"]), base64.b64decode(m["value"])) for m in messages]

    def serialize() -> None:
        for key, value in datums:
            for (serializer, context), datum in zip(serializers, (key, value), strict=True):
                serializer(datum, context)

    def deserialize() -> None:
        for parts in framed:
            for context, raw in zip(contexts, parts, strict=True):
                deserializer(raw, context)

    serialize()  # the ids and parsed schemas are cached from here on
    deserialize()
    for name, ours, peer, peer_name in (
            ("encode", lambda: post(client, encode_path, batch), serialize, "AvroSerializer"),
            ("decode", lambda: post(client, "/v1/decode", decode_body), deserialize,
             "AvroDeserializer")):
        http_rate, peer_rate = interleaved_best_rates(ours, peer)
        print(f"peer: {name} over HTTP: {http_rate:,.0f} records/s; confluent-kafka "
              f"{peer_name} in-process (key + value): {peer_rate:,.0f} records/s; "
              f"{http_rate / peer_rate:.1f}x (no target)", flush=True)


async def latencies(port: int, request: bytes) -> list[float]:
    """Seconds of LATENCY_REQUESTS requests from CLIENTS concurrent connections.

    A minimal HTTP/1.1 client on raw asyncio streams: an httpx client costs more CPU per
    request than the server does and would measure itself instead of the server.
    """
    async def one_client(count: int, out: list[float]) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        for _ in range(count):
            start = time.perf_counter()
            writer.write(request)
            await read_answer(reader)
            out.append(time.perf_counter() - start)
        writer.close()

    for count in (WARM_UP, LATENCY_REQUESTS // CLIENTS):
        seen: list[float] = []
        await asyncio.gather(*(one_client(count, seen) for _ in range(CLIENTS)))
    return seen


async def read_answer(reader: asyncio.StreamReader) -> bytes:
    """The body of one HTTP/1.1 200 answer (anything else is an error)."""
    head = await reader.readuntil(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 200"):
        raise RuntimeError(f"unexpected answer {head[:60]!r}")
    length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
    return await reader.readexactly(length)


async def connection_per_request_load(port: int, request: bytes) -> None:
    """WORKER_CLIENTS concurrent clients sending WORKER_BATCHES requests each, every request
    on a new connection: a worker busy encoding does not accept, so the idle one takes it
    (a kept-alive connection stays with the worker that accepted it)."""
    async def one_client() -> None:
        for _ in range(WORKER_BATCHES):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(request)
            await read_answer(reader)
            writer.close()
            await writer.wait_closed()

    await asyncio.gather(*(one_client() for _ in range(WORKER_CLIENTS)))


def workers_figure(single: str, several: str, encode_path: str) -> Figure:
    """Batch encode records/s of WORKERS workers vs one, under the same concurrent load."""
    request = raw_request("POST", encode_path, encode_body(rows()))

    def load(url: str) -> Callable[[], None]:
        port = int(url.rsplit(":", 1)[1])
        return lambda: asyncio.run(connection_per_request_load(port, request))

    for warm in (load(single), load(several)):  # every worker compiles its codecs once
        warm()
    one, many = interleaved_best_rates(load(single), load(several), rounds=WORKER_ROUNDS,
                                       records=WORKER_CLIENTS * WORKER_BATCHES * BATCH)
    return ratio(f"{WORKERS} workers / 1 worker", f"workers: {WORKERS} workers vs 1 worker "
                 f"batch-encode at {WORKER_CLIENTS} connections: {many:,.0f} vs {one:,.0f} "
                 "records/s", many / one, ">= 1.6")


def raw_request(method: str, path: str, body: bytes = b"") -> bytes:
    head = f"{method} {path} HTTP/1.1\r\nhost: bench\r\ncontent-type: application/json\r\n"
    return f"{head}content-length: {len(body)}\r\n\r\n".encode() + body


def latency_figure(url: str, encode_path: str) -> Figure:
    """Single-record encode p99 vs /healthz p99, CLIENTS concurrent clients each.

    LATENCY_ROUNDS rounds of each, alternating, so both meet the same machine noise; each
    percentile is over the pooled samples of its endpoint. The load generator's own garbage
    is frozen first: its collections would stall every client at once and time themselves.
    """
    port = int(url.rsplit(":", 1)[1])
    requests = (raw_request("POST", encode_path, encode_body(rows()[:1])),
                raw_request("GET", "/healthz"))
    gc.collect()
    gc.freeze()
    encode: list[float] = []
    health: list[float] = []
    for _ in range(LATENCY_ROUNDS):
        for request, seen in zip(requests, (encode, health), strict=True):
            seen.extend(asyncio.run(latencies(port, request)))
    gc.unfreeze()
    encode.sort()
    health.sort()

    def shown(seconds: list[float]) -> str:
        p99 = seconds[int(0.99 * len(seconds))]
        return f"p50 {statistics.median(seconds) * 1e3:.2f} ms, p99 {p99 * 1e3:.2f} ms"

    p99 = encode[int(0.99 * len(encode))] / health[int(0.99 * len(health))]
    return ratio("encode p99 / healthz p99", f"single-record encode at {CLIENTS} clients: "
                 f"{shown(encode)}; /healthz: {shown(health)}", p99, "<= 1.3")


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid}")


def memory_figure(c: httpx.Client, pid: int, path: str) -> Figure:
    """The server process's RSS after MEMORY_RECORDS encoded records vs after 10,000."""
    body = encode_body(rows())
    for _ in range(10_000 // BATCH):
        post(c, path, body)
    early = rss_kib(pid)
    for _ in range((MEMORY_RECORDS - 10_000) // BATCH):
        post(c, path, body)
    late = rss_kib(pid)
    return ratio("RSS 1M / RSS 10k", f"server RSS after 10,000 records: {early / 1024:,.1f} MiB;"
                 f" after {MEMORY_RECORDS:,}: {late / 1024:,.1f} MiB", late / early, "<= 1.5")


def main() -> None:
    began = time.perf_counter()
    figures: list[Figure] = []

    def show(figure: Figure) -> None:
        mark = "" if figure.ok else "  <-- MISSED"
        print(f"{figure.line}; ratio {figure.value:.2f} (target {figure.target}){mark}",
              flush=True)
        figures.append(figure)

    with tempfile.TemporaryDirectory() as tmp, \
            process_server(db_path := str(Path(tmp) / "bench.sqlite")) as (url, pid), \
            httpx.Client(base_url=url, timeout=60) as client:
        encode_path = register(client)
        show(memory_figure(client, pid, encode_path))  # first: its baseline is a fresh server
        calls_before, started = registry_calls(client), time.perf_counter()
        for figure in batch_figures(client, encode_path):
            show(figure)
        show(latency_figure(url, encode_path))
        calls = registry_calls(client) - calls_before
        seconds = time.perf_counter() - started
        with process_server(db_path, WORKERS) as (several, _):  # the same registry file
            workers = workers_figure(url, several, encode_path)
    requests = 2 + 2 * ROUNDS + 2 * LATENCY_ROUNDS * CLIENTS * (WARM_UP
                                                                 + LATENCY_REQUESTS // CLIENTS)
    # The only calls allowed: re-reading the topic's latest ids (2 calls) once per TTL.
    allowed = 2 * int(seconds // TOPIC_CACHE_SECONDS + 1)
    figures.append(Figure("registry calls per request", "", calls / requests, "0",
                          calls <= allowed))
    print(f"registry calls during the measured runs: {calls:.0f} over {requests:,} requests"
          f" in {seconds:.1f} s (only the topic's ids re-read every {TOPIC_CACHE_SECONDS:g} s"
          f" are allowed: <= {allowed}){'' if calls <= allowed else '  <-- MISSED'}",
          flush=True)
    show(workers)

    summary([(f.name, f.value, f.target, f.ok) for f in figures], width=32)
    print(f"total time: {time.perf_counter() - began:.0f} s")


if __name__ == "__main__":
    main()
