"""CPU-heavy work of large requests runs in a worker thread, so the event loop keeps serving
(``/healthz`` answers while a 16 MB batch is encoded); small requests stay on the loop, where
a thread hop would cost more than the work (the latency benchmark measures that path).

With several worker processes (``flatavro serve --workers N``) the work stays on the loop
instead: a worker busy with a batch then does not accept connections, so the kernel hands new
ones to an idle worker. Offloaded, a busy worker kept accepting (its loop is free while the
thread works) and took connections it could only serve after its current batch, while another
worker idled: bench_http's ``workers`` line measured 1.51-1.80 with threads and 1.80-1.84
without on 2 cores."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TypeVar

import anyio

__all__ = ["OFFLOAD_BYTES", "offload_to_threads", "run_cpu", "run_io"]

OFFLOAD_BYTES = 64 * 1024
"""Bodies larger than this are worked on in a thread (with one worker process)."""

T = TypeVar("T")

_threshold: float = OFFLOAD_BYTES


def offload_to_threads(enabled: bool) -> None:
    """Whether large requests' work runs in a thread (one worker process: the app's start-up
    sets it from ``FLATAVRO_WORKERS``) or on the event loop (several)."""
    global _threshold
    _threshold = OFFLOAD_BYTES if enabled else math.inf


async def run_cpu(size: int, work: Callable[..., T], *args: object) -> T:
    """Run `work(*args)`: in a worker thread when the request is over `OFFLOAD_BYTES` and
    threads are on."""
    if size > _threshold:
        return await anyio.to_thread.run_sync(work, *args)
    return work(*args)


async def run_io(work: Callable[..., T], *args: object) -> T:
    """Run `work(*args)`, which may wait on another system (an object store, a database), in
    a worker thread whatever its size: on the loop, one slow read would stall every request."""
    return await anyio.to_thread.run_sync(work, *args)
