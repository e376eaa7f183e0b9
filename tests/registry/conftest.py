"""Registry fixtures: the embedded registry served by uvicorn on an ephemeral loopback port."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn

from service.registry.embedded.registry import EmbeddedRegistry
from service.registry.embedded.rest import create_registry_app


class ServedRegistry:
    """A running uvicorn server around an embedded registry, stopped by the fixture."""

    def __init__(self, registry: EmbeddedRegistry, max_body_bytes: int = 1 << 20) -> None:
        self.registry = registry
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        config = uvicorn.Config(create_registry_app(registry, max_body_bytes=max_body_bytes),
                                host="127.0.0.1", port=self.port, log_level="warning",
                                lifespan="off")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ServedRegistry:
        self.thread.start()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                if httpx.get(self.url + "/", timeout=0.5).status_code == 200:
                    return self
            except httpx.TransportError:
                time.sleep(0.05)
        raise RuntimeError("the embedded registry did not start listening within 10 s")

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture
def served_registry(tmp_path: Path) -> Iterator[ServedRegistry]:
    registry = EmbeddedRegistry(tmp_path / "registry.sqlite")
    served = ServedRegistry(registry, max_body_bytes=64 * 1024).start()
    yield served
    served.stop()
    registry.close()
