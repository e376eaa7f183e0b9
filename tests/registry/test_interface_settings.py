"""The `SchemaRegistry` settings calls (configured / delete level and mode, set_mode with
force) answer alike in process, over HTTP against the embedded registry's Confluent API, and
through `InstrumentedRegistry`; the client reads modes only a Confluent registry answers."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from service.registry.client import HttpSchemaRegistry, RegistryClientConfig
from service.registry.compatibility import CompatibilityLevel
from service.registry.embedded.registry import EmbeddedRegistry
from service.registry.errors import (
    OperationNotPermittedError,
    ReadOnlyModeError,
    RegistryServerError,
    SubjectConfigNotFoundError,
    SubjectModeNotFoundError,
)
from service.registry.instrumented import InstrumentedRegistry
from service.registry.model import RegistryMode
from tests.support.harness import run, serving
from tests.support.registry import ServedRegistry

A = json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]})
L, M = CompatibilityLevel, RegistryMode


@asynccontextmanager
async def _registry(kind: str, path: Path, calls: list[str]) -> AsyncIterator[Any]:
    embedded = EmbeddedRegistry(path)
    if kind == "embedded":
        yield embedded
    elif kind == "instrumented":
        yield InstrumentedRegistry(embedded, calls.append)
    else:
        served = ServedRegistry(embedded).start()
        http = HttpSchemaRegistry(RegistryClientConfig(url=served.url, retry_budget=0))
        try:
            yield http
        finally:
            await http.aclose()
            served.stop()
    embedded.close()


@pytest.mark.parametrize("kind", ["embedded", "http", "instrumented"])
def test_levels_configured_removed_and_refused_in_readonly(kind: str, tmp_path: Path) -> None:
    calls: list[str] = []

    async def scenario() -> None:
        async with _registry(kind, tmp_path / "r.sqlite", calls) as reg:
            await reg.register("s", A)
            assert await reg.configured_compatibility("s") is None
            with pytest.raises(SubjectConfigNotFoundError):
                await reg.delete_compatibility("s")
            await reg.set_compatibility(L.FULL, "s")
            assert await reg.configured_compatibility("s") is L.FULL
            assert await reg.delete_compatibility("s") is L.FULL
            assert await reg.configured_compatibility("s") is None
            await reg.set_compatibility(L.NONE)
            assert await reg.configured_compatibility() is L.NONE
            assert await reg.delete_compatibility() is L.NONE  # the global one: reset
            assert await reg.get_compatibility() is L.BACKWARD
            await reg.set_mode(M.READONLY, "s")
            with pytest.raises(ReadOnlyModeError):  # Confluent refuses config writes too
                await reg.set_compatibility(L.FULL, "s")
            assert await reg.configured_compatibility("s") is None

    run(scenario())
    assert calls == ([] if kind != "instrumented" else [
        "register", "configured_compatibility", "delete_compatibility", "set_compatibility",
        "configured_compatibility", "delete_compatibility", "configured_compatibility",
        "set_compatibility", "configured_compatibility", "delete_compatibility",
        "get_compatibility", "set_mode", "set_compatibility", "configured_compatibility"])


@pytest.mark.parametrize("kind", ["embedded", "http", "instrumented"])
def test_modes_configured_removed_and_import_forced(kind: str, tmp_path: Path) -> None:
    async def scenario() -> None:
        async with _registry(kind, tmp_path / "r.sqlite", []) as reg:
            await reg.register("s", A)
            assert await reg.configured_mode("s") is None
            with pytest.raises(SubjectModeNotFoundError):
                await reg.delete_mode("s")
            assert await reg.set_mode(M.READONLY, "s") is M.READONLY
            assert (await reg.configured_mode("s"), await reg.get_mode("s")) == (
                M.READONLY, M.READONLY)
            assert await reg.delete_mode("s") is M.READONLY
            assert (await reg.configured_mode("s"), await reg.get_mode("s")) == (
                None, M.READWRITE)
            with pytest.raises(OperationNotPermittedError) as refused:
                await reg.set_mode(M.IMPORT)  # a live subject exists
            assert refused.value.registry_code == 42205
            assert await reg.set_mode(M.IMPORT, force=True) is M.IMPORT
            assert await reg.configured_mode() is M.IMPORT
            assert await reg.get_mode("s") is M.IMPORT
            assert await reg.subjects() == ["s"]  # force deletes nothing

    run(scenario())


def _confluent_answering(mode: str) -> Starlette:
    async def answer(request: Request) -> JSONResponse:
        return JSONResponse({"mode": mode})

    return Starlette(routes=[Route("/mode", answer, methods=["GET"])])


@pytest.mark.parametrize(("answered", "read"), [
    ("READONLY_OVERRIDE", M.READONLY), ("IMPORT", M.IMPORT), ("FORWARD", None)])
def test_the_client_reads_confluent_only_modes(answered: str, read: RegistryMode | None) -> None:
    async def scenario(url: str) -> None:
        http = HttpSchemaRegistry(RegistryClientConfig(url=url, retry_budget=0))
        try:
            if read is None:  # cluster linking's FORWARD: refused, named
                with pytest.raises(RegistryServerError) as err:
                    await http.get_mode()
                assert err.value.details["mode"] == "FORWARD"
            else:
                assert (await http.get_mode(), await http.configured_mode()) == (read, read)
        finally:
            await http.aclose()

    with serving(_confluent_answering(answered)) as served:
        run(scenario(served.url))
