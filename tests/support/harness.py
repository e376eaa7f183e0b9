"""The test harness every suite shares: a free loopback port, an ASGI app served by uvicorn
over a real socket (`ServedApp`, `serving`), and `run` for one coroutine on a fresh event loop."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

import httpx
import uvicorn
from starlette.types import ASGIApp

__all__ = ["free_port", "ServedApp", "serving", "run"]

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
