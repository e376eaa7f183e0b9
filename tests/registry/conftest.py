"""Registry fixtures: the embedded registry served by uvicorn on an ephemeral loopback port."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.types import ASGIApp

from service.registry.embedded.registry import EmbeddedRegistry
from service.registry.embedded.rest import create_registry_app

T = TypeVar("T")


def free_port() -> int:
    """A loopback port nothing listens on (at the time of asking)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class ServedApp:
    """A running uvicorn server around an ASGI app on an ephemeral loopback port."""

    def __init__(self, app: ASGIApp, *, health_path: str = "/", lifespan: str = "off") -> None:
        self.port = free_port()
        self.health_path = health_path
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning",
                                lifespan=lifespan, log_config=None)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ServedApp:
        self.thread.start()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                httpx.get(self.url + self.health_path, timeout=0.5)
                return self
            except httpx.TransportError:
                time.sleep(0.05)
        raise RuntimeError("the server did not start listening within 10 s")

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@contextlib.contextmanager
def serving(app: ASGIApp) -> Iterator[ServedApp]:
    """Serve an ASGI app on a loopback port for the duration of the block."""
    served = ServedApp(app).start()
    try:
        yield served
    finally:
        served.stop()


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run one coroutine to completion on a fresh event loop."""
    return asyncio.run(coro)


class ServedRegistry(ServedApp):
    """The embedded registry's REST app served over a real socket, optionally under a prefix."""

    def __init__(self, registry: EmbeddedRegistry, *, prefix: str = "",
                 max_body_bytes: int = 1 << 20) -> None:
        app: ASGIApp = create_registry_app(registry, max_body_bytes=max_body_bytes)
        if prefix:
            app = Starlette(routes=[Mount(prefix, app=app)])
        super().__init__(app, health_path=prefix + "/")
        self.registry = registry
        self.prefix = prefix

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.prefix}"


@pytest.fixture
def served_registry(tmp_path: Path) -> Iterator[ServedRegistry]:
    registry = EmbeddedRegistry(tmp_path / "registry.sqlite")
    served = ServedRegistry(registry, max_body_bytes=64 * 1024).start()
    yield served
    served.stop()
    registry.close()
