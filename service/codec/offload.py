"""CPU-heavy work of large requests runs in a worker thread, so the event loop keeps serving
(``/healthz`` answers while a 16 MB batch is encoded); small requests stay on the loop, where
a thread hop would cost more than the work (the latency benchmark measures that path)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import anyio

__all__ = ["OFFLOAD_BYTES", "run_cpu"]

OFFLOAD_BYTES = 64 * 1024
"""Bodies larger than this are worked on in a thread."""

T = TypeVar("T")


async def run_cpu(size: int, work: Callable[..., T], *args: object) -> T:
    """Run `work(*args)`: in a worker thread when the request is over `OFFLOAD_BYTES`."""
    if size > OFFLOAD_BYTES:
        return await anyio.to_thread.run_sync(work, *args)
    return work(*args)
