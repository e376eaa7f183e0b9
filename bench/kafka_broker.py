"""A throw-away single-node KRaft broker (deploy/kafka/kafka.sh) on free loopback ports, for
the benchmarks that need Kafka."""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["broker", "free_port"]

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def broker(data: Path) -> Iterator[str]:
    """Start a broker with its data in `data`; yields its bootstrap address; stops it."""
    port, script = free_port(), str(ROOT / "deploy" / "kafka" / "kafka.sh")
    subprocess.run([script, "start", str(data), str(port), str(free_port())], check=True,
                   capture_output=True, timeout=300)
    try:
        yield f"127.0.0.1:{port}"
    finally:
        subprocess.run([script, "stop", str(data)], check=True, timeout=120)
