"""The HTTP registry client against real servers: the embedded registry, a closed port, and a
server that fails before it succeeds."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from service.registry.client import HttpSchemaRegistry, RegistryClientConfig
from service.registry.compatibility import CompatibilityLevel
from service.registry.embedded.registry import EmbeddedRegistry
from service.registry.errors import (
    IncompatibleSchemaError,
    InvalidSchemaError,
    RegistryServerError,
    RegistryUnavailableError,
    SubjectNotFoundError,
    VersionNotFoundError,
)
from tests.support.harness import ServedApp, free_port, run, serving
from tests.support.registry import ServedRegistry

A = json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]})
A_REQ = json.dumps({"type": "record", "name": "R", "fields": [
    {"name": "a", "type": "int"}, {"name": "z", "type": "string"}]})


@pytest.fixture
def prefixed_registry(tmp_path: Path) -> Iterator[ServedRegistry]:
    registry = EmbeddedRegistry(tmp_path / "r.sqlite")
    served = ServedRegistry(registry, prefix="/sr/v1").start()
    yield served
    served.stop()
    registry.close()


def client(url: str, **kw: object) -> HttpSchemaRegistry:
    return HttpSchemaRegistry(RegistryClientConfig(url=url, **kw))  # type: ignore[arg-type]


@pytest.mark.parametrize("fixture", ["served_registry", "prefixed_registry"])
def test_round_trip_through_the_client(fixture: str, request: pytest.FixtureRequest) -> None:
    served: ServedRegistry = request.getfixturevalue(fixture)

    async def scenario() -> None:
        sr = client(served.url)
        first = await sr.register("s-value", A)
        assert (first.id, first.version) == (1, 1)
        assert (await sr.register("s-value", A)).id == 1  # from the cache
        assert sr.cache_hits == 1
        assert json.loads(await sr.schema_by_id(1)) == json.loads(A)
        assert (await sr.get_version("s-value")).version == 1
        assert await sr.subjects() == ["s-value"]
        assert await sr.versions("s-value") == [1]
        assert (await sr.lookup("s-value", A)).id == 1
        verdict = await sr.check_compatibility("s-value", A_REQ)
        assert not verdict.compatible and "READER_FIELD_MISSING_DEFAULT_VALUE" in \
            verdict.incompatibilities[0].message
        with pytest.raises(IncompatibleSchemaError):
            await sr.register("s-value", A_REQ)
        assert await sr.set_compatibility(CompatibilityLevel.NONE, "s-value") is \
            CompatibilityLevel.NONE
        assert (await sr.register("s-value", A_REQ)).version == 2
        with pytest.raises(SubjectNotFoundError):
            await sr.versions("nope")
        with pytest.raises(VersionNotFoundError):
            await sr.get_version("s-value", 9)
        with pytest.raises(InvalidSchemaError):
            await sr.register("s-value", '{"type": "nosuch"}')
        assert await sr.delete_version("s-value", 2) == 2
        assert await sr.delete_subject("s-value") == [1]
        await sr.aclose()

    run(scenario())


def test_registry_down_fails_fast_within_the_budget_without_leaking_secrets() -> None:
    url = f"http://127.0.0.1:{free_port()}"

    async def scenario() -> None:
        sr = client(url, username="svc", password="s3cr3t-pw", retry_budget=0.5)
        with pytest.raises(RegistryUnavailableError) as err:
            await sr.schema_by_id(1)
        assert "s3cr3t-pw" not in str(err.value) and "s3cr3t-pw" not in repr(sr._config)
        assert err.value.code == "registry_unavailable"
        assert sr.calls >= 2  # it retried
        await sr.aclose()

    run(scenario())


class Flaky:
    """A server that answers `status` (503) a set number of times, then serves schema 1;
    counts hits."""

    def __init__(self, failures: int, status: int = 503) -> None:
        self.failures, self.status, self.hits = failures, status, 0
        self.auth: list[str | None] = []

    async def schema(self, request: Request) -> JSONResponse:
        self.hits += 1
        self.auth.append(request.headers.get("authorization"))
        await asyncio.sleep(0.05)
        if self.hits <= self.failures:
            return JSONResponse({"error_code": 50003, "message": "busy"},
                                status_code=self.status)
        return JSONResponse({"schema": A})

    async def missing(self, request: Request) -> JSONResponse:
        self.hits += 1
        return JSONResponse({"error_code": 40401, "message": "nope"}, status_code=404)

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/schemas/ids/{id}", self.schema),
                                 Route("/subjects/{s}/versions", self.missing)])


def test_503_then_200_is_retried_and_concurrent_requests_make_one_call() -> None:
    flaky = Flaky(failures=2)

    async def scenario(served: ServedApp) -> None:
        sr = client(served.url, bearer_token="tok-123", backoff_initial=0.01)
        texts = await asyncio.gather(*(sr.schema_by_id(1) for _ in range(10)))
        assert set(texts) == {A}
        assert flaky.hits == 3  # two 503s, one 200, shared by all ten callers
        await sr.schema_by_id(1)
        assert flaky.hits == 3  # cached for the process life
        assert set(flaky.auth) == {"Bearer tok-123"}
        await sr.aclose()

    with serving(flaky.app()) as served:
        run(scenario(served))


def test_5xx_until_the_budget_runs_out_and_4xx_never_retried() -> None:
    flaky = Flaky(failures=1000, status=500)  # 503s would open the breaker: test_breaker.py

    async def scenario(served: ServedApp) -> None:
        sr = client(served.url, retry_budget=0.3, backoff_initial=0.01)
        with pytest.raises(RegistryServerError):
            await sr.schema_by_id(1)
        before = flaky.hits
        assert before >= 2
        with pytest.raises(SubjectNotFoundError):
            await sr.versions("x")
        assert flaky.hits == before + 1
        await sr.aclose()

    with serving(flaky.app()) as served:
        run(scenario(served))


def test_basic_auth_is_sent() -> None:
    flaky = Flaky(failures=0)

    async def scenario(served: ServedApp) -> None:
        sr = client(served.url, username="svc", password="pw")
        await sr.schema_by_id(5)
        assert flaky.auth == ["Basic c3ZjOnB3"]
        await sr.aclose()

    with serving(flaky.app()) as served:
        run(scenario(served))
