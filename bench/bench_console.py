"""The registry console (``/console``) with 10,000 subjects, each page's p99 against ``/healthz``'s.

Issue 52. An embedded registry is filled in-process first, through `EmbeddedRegistry.register`
(over HTTP ``/registry`` a version costs ~3x as much): 5,000 TiCDC tables ``shop.<kind>_<n>``
(topic rule ``{schema}_{table}``), each a ``-key`` subject with 1 version and a ``-value``
subject with 3 (versions 2 and 3 each add a nullable column): 10,000 subjects, 20,000 versions,
20,000 schema ids. Then one uvicorn worker serves it (``flatavro serve`` in a child process, as
in ``bench_http``) and one keep-alive connection sends ``/healthz``, the console's first page,
a name search, a regex search, a schema id's page and the id search's 303 redirect, one request
of each in turn (WARM_UP rounds, then REQUESTS): each figure is the time to the full response
at the client, p50 / p99, and each p99 over ``/healthz``'s p99 (target <= 3). The console keeps
a rendered list per search until the registry's subjects change (`LISTS_KEPT`), so the fixed
searches are answered from it after their first request; a name search and a regex that are new
on every request (nothing kept, 1 and 1,000 candidates read out of 5,000 tables) show the cost
of computing a list. Last, the peers'
full scan (every subject's latest version, one registry call each: what early kafka-ui did for
any list and kafbat/kafka-ui does sorted by id or version), on the same server and connection,
next to the console's page, and the service's own ``GET /v1/subjects?detail=true``.
Run: ``python -m bench.bench_console``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import json
import re
import secrets
import statistics
import tempfile
import time
from pathlib import Path
from typing import NamedTuple
from urllib.parse import quote

import httpx

from bench.bench_http import Figure, process_server, ratio
from bench.figures import summary
from service.core.ddl import table_from_ddl
from service.core.schema import generate_schemas
from service.registry.embedded.registry import EmbeddedRegistry

DATABASE = "shop"
KINDS = ("orders", "customers", "payments", "refunds", "t")
NUMBERS = range(1_000, 2_000)  # 5 kinds x 1,000 numbers = 5,000 tables
COLUMNS = ("id BIGINT PRIMARY KEY", "customer_id BIGINT NOT NULL", "amount DECIMAL(12,2)",
           "status VARCHAR(16)", "created_at DATETIME(3)")
ADDED = ("note TEXT", "updated_at DATETIME(3)")  # value versions 2 and 3 add one each
WARM_UP = 20  # rounds of every request before the measured ones
REQUESTS = 400  # measured requests of each endpoint
ID_STEP = 397  # the id page and redirect cycle through ids 1, 398, 795, ... (51 of them)
TARGET = "<= 3"
CSRF = secrets.token_urlsafe(32)  # a returning browser's token: no new cookie per page


class Probe(NamedTuple):
    name: str
    paths: list[str]
    """Cycled through, one per request."""
    status: int


class Fill(NamedTuple):
    subjects: int
    versions: int
    max_id: int
    seconds: float


async def fill(path: Path) -> Fill:
    """The registry of the module's docstring, registered version by version in-process."""
    started = time.perf_counter()
    templates = [table_from_ddl(f"CREATE TABLE {DATABASE}.template "
                                f"({', '.join(COLUMNS + ADDED[:added])})")
                 for added in range(len(ADDED) + 1)]
    registry = EmbeddedRegistry(path)
    try:
        for kind in KINDS:
            for number in NUMBERS:
                name = f"{kind}_{number}"
                pairs = [generate_schemas(dataclasses.replace(t, table=name)) for t in templates]
                stem = f"{DATABASE}_{name}"
                await registry.register(f"{stem}-key", json.dumps(pairs[0].key_schema))
                for pair in pairs:
                    await registry.register(f"{stem}-value", json.dumps(pair.value_schema))
        return Fill(len(await registry.subjects()), len(await registry.schemas()),
                    await registry.max_id(), time.perf_counter() - started)
    finally:
        registry.close()


def probes(max_id: int) -> list[Probe]:
    ids = range(1, max_id + 1, ID_STEP)
    return [
        Probe("/healthz", ["/healthz"], 200),
        Probe("first page (50 rows)", ["/console/"], 200),
        Probe("name search q=orders_12", ["/console/?q=orders_12"], 200),
        Probe("regex q=/t_1[0-9]{3}/", ["/console/?q=" + quote("/t_1[0-9]{3}/", safe="")], 200),
        Probe("name search, a new one each time (nothing kept)",
              [f"/console/?q=orders_{n}" for n in range(1_000, 1_000 + WARM_UP + REQUESTS)],
              200),
        Probe("regex, a new one each time (nothing kept)",
              ["/console/?q=" + quote(f"/^shop_t_{n}/", safe="")
               for n in range(1_000, 1_000 + WARM_UP + REQUESTS)], 200),
        Probe("schema id page", [f"/console/schemas/{i}" for i in ids], 200),
        Probe("id search 303 redirect", [f"/console/?q={i}" for i in ids], 303),
    ]


def get(path: str) -> bytes:
    return (f"GET {path} HTTP/1.1\r\nhost: bench\r\ncookie: flatavro_csrf={CSRF}\r\n"
            "\r\n").encode()


async def answer(reader: asyncio.StreamReader, status: int) -> bytes:
    """The body of one HTTP/1.1 answer with `status` (anything else is an error)."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
    body = await reader.readexactly(length)
    if not head.startswith(f"HTTP/1.1 {status} ".encode()):
        raise RuntimeError(f"expected {status}, got {head[:40]!r}: {body[:300]!r}")
    return body


async def interleaved(port: int, checks: list[Probe]) -> list[list[float]]:
    """Seconds of each probe's REQUESTS requests, one of each in turn on one connection."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    seen: list[list[float]] = [[] for _ in checks]
    requests = [[get(p) for p in probe.paths] for probe in checks]
    for turn in range(WARM_UP + REQUESTS):
        for probe, sent, out in zip(checks, requests, seen, strict=True):
            start = time.perf_counter()
            writer.write(sent[turn % len(sent)])
            await answer(reader, probe.status)
            if turn >= WARM_UP:
                out.append(time.perf_counter() - start)
    writer.close()
    return seen


def p99(seconds: list[float]) -> float:
    return sorted(seconds)[int(0.99 * len(seconds))]


def shown(seconds: list[float]) -> str:
    return f"p50 {statistics.median(seconds) * 1e3:.2f} ms, p99 {p99(seconds) * 1e3:.2f} ms"


def latency_figures(port: int, checks: list[Probe]) -> list[Figure]:
    """Every console probe's p99 over /healthz's p99 (the first probe), same connection."""
    gc.collect()
    gc.freeze()  # the load generator's collections would time themselves
    health, *pages = asyncio.run(interleaved(port, checks))
    gc.unfreeze()
    print(f"/healthz: {shown(health)} ({REQUESTS} requests, one connection)", flush=True)
    return [ratio(f"{probe.name} p99 / healthz", f"console {probe.name}: {shown(seconds)}",
                  p99(seconds) / p99(health), TARGET)
            for probe, seconds in zip(checks[1:], pages, strict=True)]


async def peer_scan(port: int) -> tuple[int, float, list[float]]:
    """The peers' full scan: ``GET /subjects``, then every subject's latest version, one call
    each on one keep-alive connection; (subjects, seconds, seconds per call)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    start = time.perf_counter()
    writer.write(get("/registry/subjects"))
    subjects = json.loads(await answer(reader, 200))
    calls: list[float] = []
    for subject in subjects:
        began = time.perf_counter()
        writer.write(get(f"/registry/subjects/{quote(subject, safe='')}/versions/latest"))
        await answer(reader, 200)
        calls.append(time.perf_counter() - began)
    total = time.perf_counter() - start
    writer.close()
    return len(subjects), total, calls


def registry_calls(client: httpx.Client) -> dict[str, float]:
    """``flatavro_registry_calls_total`` by operation."""
    found = re.findall(r'^flatavro_registry_calls_total\{operation="(\w+)"\} (\S+)$',
                       client.get("/metrics").text, flags=re.MULTILINE)
    return {operation: float(count) for operation, count in found}


def found_lines(client: httpx.Client, checks: list[Probe]) -> None:
    """What each list page finds: "<tables> of <subjects> subject(s)" from its caption."""
    for probe in checks[1:4]:
        caption = re.search(r"(\d+) of (\d+) subject", client.get(probe.paths[0]).text)
        assert caption is not None, probe.name
        print(f"{probe.name}: {caption[1]} tables of {caption[2]} subjects", flush=True)


def peer_lines(client: httpx.Client, port: int, page: Figure) -> None:
    """The peers' scan and the service's own per-subject listing, next to the console's."""
    subjects, seconds, calls = asyncio.run(peer_scan(port))
    print(f"peers' full scan (GET /registry/subjects, then GET /registry/subjects/"
          f"{{s}}/versions/latest for each of {subjects:,} subjects, one connection): "
          f"{seconds:.2f} s ({shown(calls)} a call); the console's first page: "
          f"{page.line.split(': ', 1)[1]}", flush=True)
    start = time.perf_counter()
    response = client.get("/v1/subjects", params={"detail": "true"}, timeout=600)
    response.raise_for_status()
    print(f"GET /v1/subjects?detail=true (each subject's facts, fanned out in-process): "
          f"{time.perf_counter() - start:.2f} s for {len(response.json()):,} subjects",
          flush=True)


def main() -> None:
    began = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        db_path = Path(tmp) / "console.sqlite"
        filled = asyncio.run(fill(db_path))
        print(f"filled in-process (EmbeddedRegistry.register): {filled.subjects:,} subjects, "
              f"{filled.versions:,} versions, ids 1-{filled.max_id:,} in {filled.seconds:.1f} s"
              f" ({filled.seconds / filled.versions * 1e3:.2f} ms a version)", flush=True)
        checks = probes(filled.max_id)
        with process_server(str(db_path)) as (url, _), \
                httpx.Client(base_url=url, timeout=60) as client:
            port = int(url.rsplit(":", 1)[1])
            found_lines(client, checks)
            before = registry_calls(client)
            figures = latency_figures(port, checks)
            after = registry_calls(client)
            for figure in figures:
                mark = "" if figure.ok else "  <-- MISSED"
                print(f"{figure.line}; p99 / /healthz p99 {figure.value:.2f} "
                      f"(target {figure.target}){mark}", flush=True)
            calls = {k: round(v - before.get(k, 0)) for k, v in after.items()
                     if v > before.get(k, 0)}
            rounds = WARM_UP + REQUESTS
            print(f"registry calls during the console requests: {calls} (one request of each "
                  f"page: {rounds} x 3 lists, {rounds} id pages, {rounds} redirects)", flush=True)
            peer_lines(client, port, figures[0])
    summary([(f.name, f.value, f.target, f.ok) for f in figures], width=40)
    print(f"total time: {time.perf_counter() - began:.0f} s")


if __name__ == "__main__":
    main()
