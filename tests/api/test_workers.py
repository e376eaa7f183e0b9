"""Two app instances on one SQLite file, as ``flatavro serve --workers 2`` runs them: what one
registers, the other encodes with at once (its cached topic ids give way to the new ones)."""

from __future__ import annotations

import json
from typing import Any

from fastapi.testclient import TestClient

from tests.api.conftest import ORDERS_DDL, ClientFactory

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
