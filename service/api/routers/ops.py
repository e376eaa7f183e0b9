"""Operations: ``/healthz`` (the process answers), ``/readyz`` (the registry answers),
``/metrics`` (Prometheus)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response

from service.api.body_route import CheckedBodyRoute
from service.api.deps import MetricsDep, RuntimeDep
from service.api.docs.route_docs import problem
from service.api.metrics import CONTENT_TYPE

router = APIRouter(route_class=CheckedBodyRoute,
                   tags=["ops"])
_OK = b'{"status":"ok"}'


@router.get("/healthz", operation_id="healthz", summary="Liveness",
            description="200 while the process serves requests; touches nothing else.",
            responses={200: {"content": {"application/json": {"example": {"status": "ok"}}}}})
async def healthz() -> Response:
    """Answer that the process serves requests."""
    return Response(_OK, media_type="application/json")


@router.get("/readyz", operation_id="readyz", summary="Readiness",
            description="200 when the registry answers; else 503 `not_ready` (with "
                        "Retry-After) within a second, its `dependencies` naming the registry "
                        "and why (`unreachable`, `failing`, `refused`). One registry call "
                        "with a short timeout and no retry; none while the circuit breaker "
                        "is open.",
            responses={200: {"content": {"application/json": {"example": {"status": "ok"}}}},
                       **problem(503)})
async def readyz(runtime: RuntimeDep) -> Response:
    """Answer once the registry answers (else `NotReadyError`, 503)."""
    await runtime.ready()
    return Response(_OK, media_type="application/json")


@router.get("/metrics", operation_id="metrics", summary="Prometheus metrics",
            description="Request counts and latencies per route, registry calls, schema "
                        "cache hits, encoded/decoded records and refused batches.",
            responses={200: {"content": {CONTENT_TYPE: {}}}})
async def metrics(recorded: MetricsDep) -> Response:
    """Render the app's metrics in Prometheus' text format."""
    return Response(recorded.render(), media_type=CONTENT_TYPE)
