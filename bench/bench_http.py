"""The service over a real socket against fastavro in-process, with every figure a ratio.

One run, one uvicorn worker, the benchmark table of ``bench_row_codec`` (20 columns, two
DECIMALs, one DATETIME) registered first. Measures: batch encode and batch decode records/s
over HTTP vs fastavro's schemaless writer/reader on the same 1,000 records; registry calls made
by the measured requests (from ``/metrics``); single-record encode p99 vs ``/healthz`` p99 at
32 concurrent clients; the server's RSS after 1,000,000 records vs after 10,000 (a separate
server process). Run: ``python -m bench.bench_http``.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import io
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import fastavro
import httpx
import orjson
import uvicorn

from bench.bench_row_codec import BATCH, DDL, best_rate, rows
from service.api.app import create_app
from service.api.settings import Settings
from service.core.ddl import table_from_ddl
from service.core.options import SchemaOptions
from service.core.schema import generate_schemas
from service.core.values import RowCodec

CLIENTS = 32
LATENCY_REQUESTS = 3_200  # per endpoint, after a warm-up of CLIENTS * 10
MEMORY_RECORDS = 1_000_000
HEADER = 5  # Confluent framing: magic byte + 4-byte schema id


def free_port() -> int:
    """A loopback port nothing listens on (at the time of asking)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_until_up(url: str, seconds: float = 15) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(url + "/healthz", timeout=0.5).status_code == 200:
                return
        time.sleep(0.05)
    raise RuntimeError(f"the server at {url} did not answer /healthz within {seconds} s")


@contextlib.contextmanager
def threaded_server(db_path: str) -> Iterator[str]:
    """The app (lifespan on) served by uvicorn in a thread of this process; yields its URL."""
    app = create_app(Settings(registry_db_path=db_path, log_level="WARNING"))
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None,
                                           access_log=False, lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(url)
        yield url
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@contextlib.contextmanager
def process_server(db_path: str) -> Iterator[tuple[str, int]]:
    """``flatavro serve`` in a child process; yields its URL and pid."""
    port = free_port()
    env = dict(os.environ, FLATAVRO_REGISTRY_DB_PATH=db_path, FLATAVRO_LOG_LEVEL="WARNING")
    child = subprocess.Popen([sys.executable, "-m", "service.cli.main", "serve",
                              "--host", "127.0.0.1", "--port", str(port)], env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(url)
        yield url, child.pid
    finally:
        child.terminate()
        child.wait(timeout=10)


def register(client: httpx.Client) -> str:
    """Register the benchmark table; returns its topic."""
    response = client.post("/v1/tables/register", json={"ddl": DDL})
    response.raise_for_status()
    return str(response.json()["topic"])


def registry_calls(client: httpx.Client) -> float:
    """The sum of ``flatavro_registry_calls_total`` over its labels."""
    text = client.get("/metrics").text
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("flatavro_registry_calls_total"))


def post(client: httpx.Client, path: str, body: bytes) -> bytes:
    response = client.post(path, content=body, headers={"content-type": "application/json"})
    if response.status_code != 200:
        raise RuntimeError(f"POST {path}: {response.status_code} {response.text[:300]}")
    return response.content


def encode_body(plain: list[dict[str, object]]) -> bytes:
    return orjson.dumps({"records": [{"op": "insert", "row": r} for r in plain]})


def percentile(sorted_values: list[float], fraction: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(fraction * len(sorted_values)))]


async def latencies(url: str, method: str, path: str, body: bytes | None) -> list[float]:
    """Per-request seconds of LATENCY_REQUESTS requests from CLIENTS concurrent clients."""
    limits = httpx.Limits(max_connections=CLIENTS, max_keepalive_connections=CLIENTS)
    headers = {"content-type": "application/json"}
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=30) as client:

        async def one_client(count: int, out: list[float]) -> None:
            for _ in range(count):
                start = time.perf_counter()
                response = await client.request(method, path, content=body, headers=headers)
                out.append(time.perf_counter() - start)
                if response.status_code != 200:
                    raise RuntimeError(f"{method} {path}: {response.status_code}")

        warm: list[float] = []
        await asyncio.gather(*(one_client(10, warm) for _ in range(CLIENTS)))
        seen: list[float] = []
        await asyncio.gather(*(one_client(LATENCY_REQUESTS // CLIENTS, seen)
                               for _ in range(CLIENTS)))
    return sorted(seen)


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid}")


def memory_growth(db_path: str, body: bytes) -> tuple[int, int]:
    """The server process's RSS (KiB) after 10,000 and after MEMORY_RECORDS encoded records."""
    with process_server(db_path) as (url, pid), httpx.Client(base_url=url, timeout=60) as c:
        path = f"/v1/topics/{register(c)}/encode"
        for _ in range(10_000 // BATCH):
            post(c, path, body)
        early = rss_kib(pid)
        for _ in range((MEMORY_RECORDS - 10_000) // BATCH):
            post(c, path, body)
        return early, rss_kib(pid)


def main() -> None:
    began = time.perf_counter()
    table = table_from_ddl(DDL)
    schema = fastavro.parse_schema(generate_schemas(table).value_schema)
    to_datum = RowCodec.for_value(table, SchemaOptions()).to_datum
    plain = rows()
    datums = [to_datum(r) for r in plain]
    batch_body, single_body = encode_body(plain), encode_body(plain[:1])
    results: list[tuple[str, float, str, bool]] = []

    def report(name: str, line: str, value: float, target: str, ok: bool) -> None:
        print(f"{line}; ratio {value:.2f} (target {target}){'' if ok else '  <-- MISSED'}")
        results.append((name, value, target, ok))

    with tempfile.TemporaryDirectory() as tmp:
        with threaded_server(str(Path(tmp) / "a.sqlite")) as url, \
                httpx.Client(base_url=url, timeout=60) as client:
            encode_path = f"/v1/topics/{register(client)}/encode"
            encoded = orjson.loads(post(client, encode_path, batch_body))["messages"]
            assert len(encoded) == BATCH
            decode_body = orjson.dumps({"messages": [{"key": m["key"], "value": m["value"]}
                                                     for m in encoded]})
            bodies = [base64.b64decode(m["value"])[HEADER:] for m in encoded]
            for body, path in ((single_body, encode_path), (decode_body, "/v1/decode")):
                post(client, path, body)  # warm the id cache and the codecs
            calls_before, started = registry_calls(client), time.perf_counter()

            http_enc = best_rate(lambda: post(client, encode_path, batch_body))
            raw_enc = best_rate(lambda: [fastavro.schemaless_writer(io.BytesIO(), schema, d)
                                         for d in datums])
            report("batch encode http/raw",
                   f"encode over HTTP: {http_enc:,.0f} records/s; fastavro schemaless_writer: "
                   f"{raw_enc:,.0f} records/s", http_enc / raw_enc, ">= 0.5",
                   http_enc / raw_enc >= 0.5)
            http_dec = best_rate(lambda: post(client, "/v1/decode", decode_body))
            raw_dec = best_rate(lambda: [fastavro.schemaless_reader(io.BytesIO(b), schema, None)
                                         for b in bodies])
            report("batch decode http/raw",
                   f"decode over HTTP: {http_dec:,.0f} records/s; fastavro schemaless_reader: "
                   f"{raw_dec:,.0f} records/s", http_dec / raw_dec, ">= 0.5",
                   http_dec / raw_dec >= 0.5)

            enc_lat = asyncio.run(latencies(url, "POST", encode_path, single_body))
            health_lat = asyncio.run(latencies(url, "GET", "/healthz", None))
            e99, h99 = percentile(enc_lat, 0.99), percentile(health_lat, 0.99)
            report("encode p99 / healthz p99",
                   f"single-record encode at {CLIENTS} clients: p50 "
                   f"{statistics.median(enc_lat) * 1e3:.2f} ms, p99 {e99 * 1e3:.2f} ms; "
                   f"/healthz: p50 {statistics.median(health_lat) * 1e3:.2f} ms, p99 "
                   f"{h99 * 1e3:.2f} ms", e99 / h99, "<= 2", e99 / h99 <= 2)

            measured_for = time.perf_counter() - started
            calls = registry_calls(client) - calls_before
            requests = 2 * 20 + 2 * (LATENCY_REQUESTS + CLIENTS * 10)  # best_rate: 20 rounds
            print(f"registry calls during the measured runs: {calls:.0f} over {requests:,} "
                  f"requests in {measured_for:.1f} s (target 0){'' if not calls else '  <--'}")
            results.append(("registry calls (steady state)", calls, "0", calls == 0))

        early, late = memory_growth(str(Path(tmp) / "b.sqlite"), batch_body)
        report("RSS 1M / RSS 10k",
               f"server RSS after 10,000 records: {early / 1024:,.1f} MiB; after "
               f"{MEMORY_RECORDS:,}: {late / 1024:,.1f} MiB", late / early, "<= 1.5",
               late / early <= 1.5)

    print(f"\n{'figure':<32}{'value':>10}  {'target':<8}  met")
    for name, value, target, ok in results:
        print(f"{name:<32}{value:>10.2f}  {target:<8}  {'yes' if ok else 'NO'}")
    print(f"total time: {time.perf_counter() - began:.0f} s")


if __name__ == "__main__":
    main()
