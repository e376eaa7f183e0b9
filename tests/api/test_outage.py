"""An external registry that dies mid-run (SIGKILL of its own OS process): registry-bound
requests answer 503 within a second, /readyz names the registry, cached ids still decode; the
registry restarted on the same port and file is used again without restarting the service."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from service.api.app import create_app
from service.api.settings import Settings
from tests.support.api import ORDERS_DDL, ClientFactory
from tests.support.harness import ServedApp, free_port

ROOT = Path(__file__).resolve().parents[2]
REGISTRY = """\
import sys
import uvicorn
from service.registry.embedded.registry import EmbeddedRegistry
from service.registry.embedded.rest import create_registry_app
uvicorn.run(create_registry_app(EmbeddedRegistry(sys.argv[1])), host="127.0.0.1",
            port=int(sys.argv[2]), log_level="warning")
"""
BREAKER_SECONDS = 2.0
ORDERS, ITEMS, REFUNDS = "tidb_shop_orders", "tidb_shop_items", "tidb_shop_refunds"
ITEMS_DDL = "CREATE TABLE shop.items (id BIGINT PRIMARY KEY, name VARCHAR(64) NOT NULL)"
REFUNDS_DDL = "CREATE TABLE shop.refunds (id BIGINT PRIMARY KEY, amount INT NOT NULL)"
ROWS = [{"op": "insert", "row": {"id": 1, "sku": "A-1", "price": "9.90",
                                 "created": "2024-03-11 08:51:01.461", "note": None}},
        {"op": "delete", "row": {"id": 1}}]


class RegistryProcess:
    """The embedded registry's REST app served by uvicorn in a separate OS process."""

    def __init__(self, path: Path) -> None:
        self.path, self.port = path, free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", REGISTRY, str(self.path), str(self.port)], cwd=ROOT)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and self.process.poll() is None:
            try:
                httpx.get(self.url + "/", timeout=0.5)
                return
            except httpx.TransportError:
                time.sleep(0.05)
        raise RuntimeError(f"the registry process did not listen on {self.port} (exit "
                           f"{self.process.poll()})")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[RegistryProcess]:
    process = RegistryProcess(tmp_path / "external.sqlite")
    process.start()
    yield process
    process.kill()


@pytest.fixture
def service(registry: RegistryProcess) -> Iterator[httpx.Client]:
    """The service pointed at the external registry, with the default 30 s retry budget."""
    settings = Settings(registry_url=registry.url, registry_breaker_seconds=BREAKER_SECONDS,
                        log_level="WARNING")
    served = ServedApp(create_app(settings), health_path="/healthz", lifespan="on").start()
    with httpx.Client(base_url=served.url, timeout=60) as http:
        yield http
    served.stop()


def timed(send: Callable[[], httpx.Response]) -> tuple[httpx.Response, float]:
    started = time.monotonic()
    response = send()
    return response, time.monotonic() - started


def ok(response: httpx.Response) -> Any:
    assert response.status_code == 200, response.text
    return response.json()


def unavailable(response: httpx.Response, code: str = "registry_unavailable") -> dict[str, Any]:
    """A 503 problem with `code` and a Retry-After of at most the breaker's interval."""
    assert response.status_code == 503, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert 1 <= int(response.headers["retry-after"]) <= BREAKER_SECONDS
    body = response.json()
    assert body["code"] == code
    return body


def test_registry_killed_then_restarted(registry: RegistryProcess, service: httpx.Client,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    ok(service.post("/v1/tables/register", json={"ddl": ORDERS_DDL}))
    ok(service.post("/v1/tables/register", json={"ddl": ITEMS_DDL}))  # ids never fetched
    encoded = ok(service.post(f"/v1/topics/{ORDERS}/encode", json={"records": ROWS}))
    messages = {"messages": [{"key": m["key"], "value": m["value"]}
                             for m in encoded["messages"]]}
    decoded = ok(service.post("/v1/decode", json=messages))
    assert ok(service.get("/readyz")) == {"status": "ok"}

    registry.kill()
    first, first_seconds = timed(lambda: service.post("/v1/tables/register",
                                                      json={"ddl": REFUNDS_DDL}))
    assert unavailable(first)["breaker"] == "open"
    later = {
        "register": lambda: service.post("/v1/tables/register", json={"ddl": REFUNDS_DDL}),
        "check": lambda: service.post("/v1/tables/check", json={"ddl": REFUNDS_DDL}),
        "subjects": lambda: service.get("/v1/subjects"),
        "encode uncached topic": lambda: service.post(f"/v1/topics/{ITEMS}/encode", json={
            "records": [{"op": "insert", "row": {"id": 1, "name": "x"}}]}),
    }
    seconds = {}
    for name, send in later.items():
        response, seconds[name] = timed(send)
        body = unavailable(response)
        assert body["breaker"] == "open" and body["reason"] == "connection refused"
        assert {"unreachable_since", "open_until"} <= body.keys()
    ready, seconds["readyz"] = timed(lambda: service.get("/readyz"))
    down = unavailable(ready, "not_ready")["dependencies"]["registry"]
    assert (down["status"], down["url"], down["reason"]) == \
        ("unreachable", registry.url, "connection refused")
    cached, seconds["decode cached ids"] = timed(lambda: service.post("/v1/decode",
                                                                      json=messages))
    assert ok(cached) == decoded
    assert first_seconds < 1.0 and max(seconds.values()) < 1.0, (first_seconds, seconds)

    registry.start()  # the same port and SQLite file
    restarted = time.monotonic()
    while service.get("/readyz").status_code != 200:
        assert time.monotonic() < restarted + BREAKER_SECONDS + 5, "still not ready"
        time.sleep(0.2)
    recovered = time.monotonic() - restarted
    ok(service.post("/v1/tables/register", json={"ddl": REFUNDS_DDL}))
    assert ok(service.get("/v1/subjects")) == sorted(
        f"{topic}-{kind}" for topic in (ORDERS, ITEMS, REFUNDS) for kind in ("key", "value"))
    items = ok(service.post(f"/v1/topics/{ITEMS}/encode", json={
        "records": [{"op": "insert", "row": {"id": 1, "name": "x"}}]}))
    assert ok(service.post("/v1/decode", json={"messages": [
        {"key": m["key"], "value": m["value"]} for m in items["messages"]]}))["messages"][0][
        "value"]["name"] == "x"
    with capsys.disabled():  # the measured times, for the record (pytest -s shows them too)
        print(f"\noutage: first {first_seconds:.3f} s, then " +
              ", ".join(f"{k} {v:.3f} s" for k, v in seconds.items()) +
              f"; ready again {recovered:.1f} s after the registry listened again")


def test_readyz_answers_within_a_second_when_the_registry_hangs(
        make_client: ClientFactory) -> None:
    with socket.socket() as hung:  # the kernel completes connections; nothing ever answers
        hung.bind(("127.0.0.1", 0))
        hung.listen(16)
        url = f"http://127.0.0.1:{hung.getsockname()[1]}"
        client = make_client(registry_url=url, registry_breaker_seconds=BREAKER_SECONDS,
                             retry_after_seconds=7)
        for _ in range(2):  # each one probe, cut at registry_probe_timeout (0.8 s)
            probed, seconds = timed(lambda: client.get("/readyz"))
            assert probed.status_code == 503 and probed.headers["retry-after"] == "7"
            assert probed.json()["dependencies"]["registry"] == {
                "status": "unreachable", "url": url, "reason": "read timeout"}
            assert seconds < 1.0
        tripping, seconds = timed(lambda: client.get("/readyz"))  # the third opens it
        assert seconds < 1.0 and unavailable(tripping, "not_ready")
        ready, seconds = timed(lambda: client.get("/readyz"))  # answered from the breaker
        assert seconds < 0.5
        down = unavailable(ready, "not_ready")["dependencies"]["registry"]
        assert (down["status"], down["breaker"], down["reason"]) == \
            ("unreachable", "open", "read timeout")


def test_readyz_with_the_embedded_store_closed(make_client: ClientFactory) -> None:
    client = make_client()
    client.app.state.runtime.embedded.close()  # type: ignore[attr-defined]
    ready = client.get("/readyz")
    assert ready.status_code == 503 and ready.headers["retry-after"] == "5"
    body = ready.json()
    assert body["code"] == "not_ready"
    assert body["dependencies"]["registry"]["status"] == "failing"
