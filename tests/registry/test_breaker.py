"""The circuit breaker: its states on a fake clock, then inside the HTTP client against real
servers (a closed port, a gateway answering 503, a registry that comes back)."""

from __future__ import annotations

import asyncio
import json
import time
from datetime import datetime

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from service.registry.breaker import Breaker
from service.registry.client import HttpSchemaRegistry, RegistryClientConfig
from service.registry.errors import (
    RegistryServerError,
    RegistryUnavailableError,
    SubjectNotFoundError,
)
from tests.support.harness import ServedApp, free_port, run, serving

URL = "http://registry:8081"
A = json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]})


class Clock:
    """A monotonic clock that moves only when told."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def opened(clock: Clock, *, failures: int = 3, seconds: float = 5.0) -> Breaker:
    """A breaker opened by `failures` refused attempts, one a second."""
    breaker = Breaker(URL, failures=failures, seconds=seconds, clock=clock)
    for _ in range(failures):
        assert breaker.admit() is False
        breaker.failed("connection refused")
        clock.now += 1
    clock.now -= 1
    return breaker


def refused(breaker: Breaker) -> RegistryUnavailableError:
    with pytest.raises(RegistryUnavailableError) as caught:
        breaker.admit()
    return caught.value


def test_consecutive_failures_open_it_and_an_answer_between_resets_the_count() -> None:
    clock = Clock()
    breaker = Breaker(URL, failures=3, seconds=5, clock=clock)
    for _ in range(2):
        breaker.failed("connection refused")
    breaker.succeeded()
    for _ in range(2):
        breaker.failed("connection refused")
    assert breaker.state == "closed" and breaker.admit() is False
    breaker.failed("read timeout")
    assert breaker.state == "open"
    error = refused(breaker)
    assert error.code == "registry_unavailable" and error.retry_after == 5
    assert error.details["reason"] == "read timeout"
    assert error.details["breaker"] == "open" and error.details["url"] == URL


def test_the_error_says_since_and_until_when_and_counts_down_retry_after() -> None:
    clock = Clock()
    breaker = opened(clock)  # failures at 100, 101, 102: open until 107
    error = refused(breaker)
    since = datetime.fromisoformat(error.details["unreachable_since"])
    until = datetime.fromisoformat(error.details["open_until"])
    assert round((until - since).total_seconds(), 3) == 7.0
    assert str(error.details["open_until"]).endswith("Z") and "until" in error.message
    clock.now += 3.2
    assert refused(breaker).retry_after == 2  # 1.8 s to the probe, rounded up
    clock.now += 1.7
    assert refused(breaker).retry_after == 1


def test_half_open_lets_exactly_one_probe_through_and_an_answer_closes_it() -> None:
    clock = Clock()
    breaker = opened(clock)
    clock.now += 5
    assert breaker.state == "half_open"
    assert breaker.admit() is True  # the probe
    second = refused(breaker)  # everyone else while it is out
    assert second.retry_after == 1 and "probing" in second.message
    breaker.succeeded()
    assert breaker.state == "closed"
    assert breaker.admit() is False and breaker.admit() is False


def test_a_failed_probe_reopens_for_a_whole_interval() -> None:
    clock = Clock()
    breaker = opened(clock)
    clock.now += 5
    assert breaker.admit() is True
    breaker.failed("connection refused")
    assert breaker.state == "open" and refused(breaker).retry_after == 5
    clock.now += 5
    assert breaker.admit() is True


def test_an_abandoned_probe_lets_the_next_call_probe() -> None:
    clock = Clock()
    breaker = opened(clock)
    clock.now += 5
    assert breaker.admit() is True
    breaker.abandoned()
    assert breaker.admit() is True


def test_late_failures_of_calls_sent_before_it_opened_do_not_extend_it() -> None:
    clock = Clock()
    breaker = opened(clock)
    clock.now += 4
    breaker.failed("connection refused")
    assert refused(breaker).retry_after == 1


# -- inside the client, against real servers --------------------------------------------------
def client(url: str, **kw: object) -> HttpSchemaRegistry:
    return HttpSchemaRegistry(RegistryClientConfig(url=url, **kw))  # type: ignore[arg-type]


def test_the_call_that_finds_the_registry_down_stops_early_and_the_next_fails_at_once() -> None:
    url = f"http://127.0.0.1:{free_port()}"

    async def scenario() -> None:
        sr = client(url, retry_budget=30.0)  # the budget the user waited out
        started = time.monotonic()
        with pytest.raises(RegistryUnavailableError) as first:
            await sr.schema_by_id(1)
        assert time.monotonic() - started < 1.0
        assert sr.calls == 3 and first.value.details["reason"] == "connection refused"
        assert first.value.details["breaker"] == "open" and first.value.retry_after == 5
        assert isinstance(first.value.__cause__, RegistryUnavailableError)
        with pytest.raises(RegistryUnavailableError):
            await sr.subjects()
        assert sr.calls == 3  # refused without a call
        await sr.aclose()

    run(scenario())


class Gateway:
    """A proxy in front of a registry: answers `status` to everything while `down`; else a
    registry that knows schema 1 and no subject. Each answer takes `delay` seconds; `hits`
    counts the registry calls (not the server's start-up check of ``/``)."""

    def __init__(self, status: int, delay: float = 0.0) -> None:
        self.status, self.delay, self.down, self.hits = status, delay, True, 0

    async def answer(self, request: Request) -> JSONResponse:
        if request.url.path != "/":
            self.hits += 1
        await asyncio.sleep(self.delay)
        if self.down:
            return JSONResponse({"error_code": 50003, "message": "no upstream"},
                                status_code=self.status)
        if request.url.path.startswith("/schemas/ids/"):
            return JSONResponse({"schema": A})
        return JSONResponse({"error_code": 40401, "message": "no subject"}, status_code=404)

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/{path:path}", self.answer)])


@pytest.mark.parametrize("status", [502, 503, 504])
def test_a_gateway_saying_the_registry_is_down_opens_it(status: int) -> None:
    gateway = Gateway(status)

    async def scenario(served: ServedApp) -> None:
        sr = client(served.url, retry_budget=30.0, backoff_initial=0.01)
        with pytest.raises(RegistryUnavailableError) as first:
            await sr.schema_by_id(1)
        assert isinstance(first.value.__cause__, RegistryServerError)
        assert first.value.details["reason"] == f"answered {status}"
        assert gateway.hits == 3 and sr.breaker.state == "open"
        await sr.aclose()

    with serving(gateway.app()) as served:
        run(scenario(served))


def test_500_and_4xx_answers_never_open_it() -> None:
    gateway = Gateway(500)

    async def scenario(served: ServedApp) -> None:
        sr = client(served.url, retry_budget=0.3, backoff_initial=0.01)
        with pytest.raises(RegistryServerError):
            await sr.schema_by_id(1)
        assert gateway.hits >= 4 and sr.breaker.state == "closed"
        gateway.down = False
        for _ in range(5):
            with pytest.raises(SubjectNotFoundError):
                await sr.versions("x")
        assert sr.breaker.state == "closed"
        await sr.aclose()

    with serving(gateway.app()) as served:
        run(scenario(served))


def test_one_probe_while_concurrent_calls_fail_at_once_then_it_closes() -> None:
    gateway = Gateway(503, delay=0.2)
    server = ServedApp(gateway.app())  # its port is chosen, nothing listens on it yet

    async def scenario() -> None:
        sr = client(server.url, breaker_seconds=0.3, backoff_initial=0.01)
        with pytest.raises(RegistryUnavailableError):
            await sr.schema_by_id(1)  # connection refused, three times
        server.start()
        gateway.down = False
        await asyncio.sleep(0.35)
        results = await asyncio.gather(*(sr.schema_by_id(n) for n in (1, 2, 3, 4)),
                                       return_exceptions=True)
        assert results[0] == A and gateway.hits == 1  # the probe, alone
        assert all(isinstance(r, RegistryUnavailableError) for r in results[1:])
        assert sr.breaker.state == "closed"
        assert await sr.schema_by_id(2) == A
        await sr.aclose()

    try:
        run(scenario())
    finally:
        server.stop()


def test_a_cancelled_probe_lets_the_next_call_probe() -> None:
    gateway = Gateway(503, delay=0.3)
    server = ServedApp(gateway.app())

    async def scenario() -> None:
        sr = client(server.url, breaker_seconds=0.2, backoff_initial=0.01)
        with pytest.raises(RegistryUnavailableError):
            await sr.schema_by_id(1)
        server.start()
        gateway.down = False
        await asyncio.sleep(0.25)
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(sr.schema_by_id(1), 0.05)  # the probe, cancelled
        assert sr.breaker.state == "half_open"
        assert await sr.schema_by_id(1) == A  # probes again, and closes it
        assert sr.breaker.state == "closed" and gateway.hits == 2
        await sr.aclose()

    try:
        run(scenario())
    finally:
        server.stop()
