"""The fast paths of the codec: encode served without FastAPI's dependency solving (the same
Content-Type and API-key checks), and large requests' work in threads with one worker only."""

from __future__ import annotations

import threading
from typing import Annotated

import anyio
import pytest
from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response
from fastapi.testclient import TestClient

from service.api.body_route import CheckedBodyRoute, served_by
from service.api.deps import require_read
from service.codec import offload
from tests.api.test_problems import ROW, TOPIC, problem
from tests.support.api import KEY, ORDERS_DDL, ClientFactory

BATCH = {"records": [{"op": "insert", "row": ROW}]}


def test_encode_checks_the_api_key_when_reads_are_protected(make_client: ClientFactory
                                                             ) -> None:
    client = make_client(api_keys=KEY, protect_reads=True)
    headers = {"X-API-Key": KEY}
    assert client.post("/v1/tables/register", json={"ddl": ORDERS_DDL},
                       headers=headers).status_code == 200
    path = f"/v1/topics/{TOPIC}/encode"
    refused = problem(client.post(path, json=BATCH), 401, "unauthorized")
    assert "needs an API key" in refused["detail"]
    problem(client.post(path, json=BATCH, headers={"X-API-Key": "nope"}), 401, "unauthorized")
    problem(client.post(path, json=BATCH, headers={"Authorization": "Basic " + KEY}), 401,
            "unauthorized")
    for good in (headers, {"Authorization": f"Bearer {KEY}"}):
        answer = client.post(path, json=BATCH, headers=good)
        assert answer.status_code == 200, answer.text
        assert answer.json()["topic"] == TOPIC
    # The Content-Type is checked before the key, as on every route.
    problem(client.post(path, content=b"{}", headers={"content-type": "text/plain"}), 415,
            "unsupported_media_type")


def test_encode_is_open_without_keys_and_counts_records(client: TestClient) -> None:
    assert client.post("/v1/tables/register", json={"ddl": ORDERS_DDL}).status_code == 200
    assert client.post(f"/v1/topics/{TOPIC}/encode", json=BATCH).status_code == 200
    assert 'flatavro_records_total{direction="encode"} 1.0' in client.get("/metrics").text


async def _serve(request: Request) -> Response:
    return Response(request.path_params["name"])


def test_served_by_refuses_endpoints_it_cannot_serve_the_same_way() -> None:
    router = APIRouter(route_class=CheckedBodyRoute, dependencies=[Depends(require_read)])

    @served_by(_serve)
    async def with_query(name: str, limit: Annotated[int, Query()] = 1) -> Response:
        return await _serve(Request({"type": "http"}))

    with pytest.raises(TypeError, match="served_by needs"):
        router.add_api_route("/x/{name}", with_query, methods=["GET"])

    @served_by(_serve)
    async def with_int_path(name: int) -> Response:
        return await _serve(Request({"type": "http"}))

    with pytest.raises(TypeError, match="str path parameters"):
        router.add_api_route("/y/{name}", with_int_path, methods=["GET"])


def _thread_of(size: int) -> str:
    async def run() -> str:
        return await offload.run_cpu(size, lambda: threading.current_thread().name)

    return anyio.run(run)


def test_large_requests_run_in_a_thread_with_one_worker_only() -> None:
    big, small = offload.OFFLOAD_BYTES + 1, offload.OFFLOAD_BYTES
    main = threading.current_thread().name
    try:
        offload.offload_to_threads(True)
        assert _thread_of(big) != main
        assert _thread_of(small) == main
        offload.offload_to_threads(False)
        assert _thread_of(big) == main
    finally:
        offload.offload_to_threads(True)


def test_the_app_sets_offloading_from_its_workers(make_client: ClientFactory) -> None:
    main = threading.current_thread().name
    big = offload.OFFLOAD_BYTES + 1
    client = make_client(workers=2)
    assert client.get("/healthz").status_code == 200
    assert _thread_of(big) == main  # several workers: on the loop
    client.__exit__(None, None, None)
    assert _thread_of(big) != main  # back to the default once the app stopped
