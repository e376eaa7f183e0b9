"""Two app instances on one SQLite file, as ``flatavro serve --workers 2`` runs them: what one
registers, the other encodes with at once (its cached topic ids give way to the new ones)."""

from __future__ import annotations

import json
import sqlite3
import sys
import threading
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
from fastapi.testclient import TestClient

from tests.support.api import ORDERS_DDL, ClientFactory
from tests.support.harness import ServedApp

TOPIC = "tidb_shop_orders"
WIDER = ORDERS_DDL.replace("note TEXT)", "note TEXT, gift BOOLEAN)")
ROW = {"id": 7, "sku": "a-1", "price": "9.50", "created": None, "note": None}


def _ok(response: Any) -> Any:
    assert response.status_code == 200, response.text
    return response.json()


def _latest(client: TestClient) -> tuple[int, int]:
    value = _ok(client.get(f"/v1/topics/{TOPIC}/schemas"))["value"]
    return value["version"], value["id"]


def test_a_worker_encodes_with_the_version_another_worker_registered(
        make_client: ClientFactory) -> None:
    first, second = make_client(), make_client()  # default topic cache: 30 s
    _ok(first.post("/v1/tables/register", json={"ddl": ORDERS_DDL}))
    assert _latest(second) == _latest(first) == (1, 2)  # both cache version 1 now
    wider = _ok(first.post("/v1/tables/register", json={"ddl": WIDER}))
    assert _latest(second) == (2, wider["value"]["id"])
    encoded = _ok(second.post(f"/v1/topics/{TOPIC}/encode",
                              json={"records": [{"op": "insert", "row": {**ROW, "gift": 1}}]}))
    assert encoded["value_schema_id"] == wider["value"]["id"]


def test_a_registration_through_the_registry_api_reaches_cached_topics(
        make_client: ClientFactory) -> None:
    first, second = make_client(), make_client()
    _ok(first.post("/v1/tables/register", json={"ddl": ORDERS_DDL}))
    assert _latest(first) == _latest(second) == (1, 2)
    value = _ok(first.post("/v1/schemas/generate", json={"ddl": WIDER}))["value_schema"]
    done = _ok(first.post(f"/registry/subjects/{TOPIC}-value/versions",
                          json={"schema": json.dumps(value)}))
    # The Confluent API forgets no topic itself: the commit is what both instances notice.
    assert _latest(first) == _latest(second) == (2, done["id"])


def test_a_write_waiting_for_another_workers_lock_leaves_the_loop_serving(
        served: ServedApp, tmp_path: Path) -> None:
    """Another worker holds the registry file's write lock: a registration here waits for it
    in a worker thread while this worker keeps answering /healthz, encoding with its cached
    schemas and reading the registry (on the event loop, or on the write connection, the wait
    would stall them all)."""
    encode = f"/v1/topics/{TOPIC}/encode"
    batch = {"records": [{"op": "insert", "row": ROW}]}
    with httpx.Client(base_url=served.url, timeout=60) as writer, \
            httpx.Client(base_url=served.url, timeout=5) as other:
        _ok(writer.post("/v1/tables/register", json={"ddl": ORDERS_DDL}))
        _ok(other.post(encode, json=batch))  # the topic's schemas are cached now
        holder = sqlite3.connect(tmp_path / "served.sqlite", isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")  # another worker's write, in progress
        try:
            with ThreadPoolExecutor(1) as pool:
                waiting = pool.submit(writer.post, "/v1/tables/register", json={"ddl": WIDER})
                while not _waits_for_lock(served):
                    assert not waiting.done(), waiting.result().text
                assert other.get("/healthz").status_code == 200  # 5 s timeout: not stalled
                assert _ok(other.post(encode, json=batch))["value_schema_id"] == 2
                # Reads of the file use a connection of their own: they do not wait either.
                assert _ok(other.get("/registry/subjects")) == [f"{TOPIC}-key",
                                                                 f"{TOPIC}-value"]
                assert _ok(other.get(f"/v1/subjects/{TOPIC}-value"))["latest"]["version"] == 1
                assert not waiting.done()
                holder.execute("ROLLBACK")
                registered = _ok(waiting.result())
        finally:
            holder.close()
        assert registered["value"]["version"] == 2


def _waits_for_lock(served: ServedApp) -> bool:
    """Whether a request thread of the server waits in SQLite (its stack is in a transaction
    being begun): the registration reached the lock."""
    frames = sys._current_frames()
    return any("transaction" in {f.name for f in traceback.extract_stack(frame)}
               for ident, frame in frames.items() if ident != threading.get_ident())
