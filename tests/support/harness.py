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


class _PromptServer(uvicorn.Server):
    """uvicorn's server, but it notices `should_exit` within 10 ms instead of 100 ms, and
    shuts down without uvicorn's fixed 0.1 s pause.

    uvicorn's main loop sleeps 0.1 s between ticks; hundreds of tests each stopping a server
    spent ~0.15 s apiece waiting for it. The once-per-tick work (date header, request limits)
    still runs every 0.1 s.
    """

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        """uvicorn 0.55's steps (stop listening, ask each connection to close, wait for the
        connections and tasks, then the lifespan's shutdown), polled every 10 ms instead of a
        0.1 s sleep first and 0.1 s polls: ~0.11 s of each server's stop."""
        for server in self.servers:
            server.close()
        for sock in sockets or []:
            sock.close()
        for connection in list(self.server_state.connections):
            connection.shutdown()
        while (self.server_state.connections or self.server_state.tasks) \
                and not self.force_exit:
            await asyncio.sleep(0.01)
        for server in self.servers:
            await server.wait_closed()
        if not self.force_exit:
            await self.lifespan.shutdown()

    async def main_loop(self) -> None:
        counter = 0
        should_exit = await self.on_tick(counter)
        while not should_exit:
            for _ in range(10):
                await asyncio.sleep(0.01)
                if self.should_exit:
                    return
            counter = (counter + 1) % 864000
            should_exit = await self.on_tick(counter)


class ServedApp:
    """A running uvicorn server around an ASGI app on an ephemeral loopback port.

    `http` is one keep-alive client for the test's requests: a new `httpx.get` per request
    builds an SSL context each time (~20 ms of loading CA certificates, even for http://).
    """

    def __init__(self, app: ASGIApp, *, health_path: str = "/", lifespan: str = "off") -> None:
        self.port = free_port()
        self.health_path = health_path
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning",
                                lifespan=lifespan, log_config=None)
        self.server = _PromptServer(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.http = httpx.Client(timeout=30)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ServedApp:
        self.thread.start()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                self.http.get(self.url + self.health_path, timeout=0.5)
                return self
            except httpx.TransportError:
                time.sleep(0.02)
        raise RuntimeError("the server did not start listening within 10 s")

    def stop(self) -> None:
        self.http.close()
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
