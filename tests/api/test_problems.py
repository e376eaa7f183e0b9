"""Every error class answers RFC 9457 problem+json with its stable code (never a traceback)."""

from __future__ import annotations

import ast
import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

from service.core.framing import frame
from tests.support.api import ORDERS_DDL, ClientFactory
from tests.support.harness import free_port, serving

TOPIC = "tidb_shop_orders"
ROW = {"id": 1, "sku": "A-1", "price": "9.90", "created": "2024-03-11 08:51:01.461",
       "note": None}


def problem(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert body["code"] == code
    assert body["status"] == status
    assert {"type", "title", "detail", "instance"} <= body.keys()
    assert "Traceback" not in response.text
    return body


def registered(client: TestClient) -> TestClient:
    assert client.post("/v1/tables/register", json={"ddl": ORDERS_DDL}).status_code == 200
    return client


@pytest.mark.parametrize(("body", "location"), [
    ({}, "body"),
    ({"ddl": ORDERS_DDL, "table": {}}, "body"),
    ({"ddl": ORDERS_DDL, "options": {"decimal_handling_mode": "exact"}},
     "body/options/decimal_handling_mode"),
])
def test_request_validation(client: TestClient, body: Any, location: str) -> None:
    found = problem(client.post("/v1/schemas/generate", json=body), 422, "invalid_request")
    assert found["errors"][0]["location"].startswith(location)


def test_malformed_json_names_the_position(client: TestClient) -> None:
    response = client.post(f"/v1/topics/{TOPIC}/encode", content=b'{"records": [',
                           headers={"content-type": "application/json"})
    assert problem(response, 422, "invalid_json")["position"] == 13


def test_bad_ddl_is_our_error(client: TestClient) -> None:
    problem(client.post("/v1/schemas/generate", json={"ddl": "CREATE TABLE d.t (a NOPE)"}),
            422, "invalid_ddl")


def test_unknown_route_and_method(client: TestClient) -> None:
    problem(client.get("/v2/nothing"), 404, "not_found")
    problem(client.get("/v1/decode"), 405, "method_not_allowed")


def test_unknown_topic_subject_and_version(client: TestClient) -> None:
    assert problem(client.get(f"/v1/topics/{TOPIC}/schemas"), 404,
                   "subject_not_found")["registry_error_code"] == 40401
    registered(client)
    problem(client.get(f"/v1/subjects/{TOPIC}-value/versions/7"), 404, "version_not_found")
    assert problem(client.get(f"/v1/subjects/{TOPIC}-value/versions/zero"), 422,
                   "invalid_request")["errors"][0]["location"] == "path/version"
    problem(client.put("/v1/subjects/x/compatibility", json={"compatibility": "SIDEWAYS"}),
            422, "invalid_request")


def test_incompatible_registration_is_409_with_every_reason(client: TestClient) -> None:
    registered(client)
    evolved = ORDERS_DDL.replace("note TEXT", "note TEXT, qty INT NOT NULL")
    body = problem(client.post("/v1/tables/register", json={"ddl": evolved}), 409,
                   "incompatible_schema")
    assert body["subjects"][0]["subject"] == f"{TOPIC}-value"
    assert "qty" in body["detail"]
    assert client.get(f"/v1/subjects/{TOPIC}-value/versions").json() == [1]


def test_another_table_under_a_literal_topic_is_409(client: TestClient) -> None:
    literal = {"ddl": ORDERS_DDL, "topic": "orders"}
    assert client.post("/v1/tables/register", json=literal).status_code == 200
    other = {"ddl": ORDERS_DDL.replace("shop.orders", "shop.refunds"), "topic": "orders"}
    problem(client.post("/v1/tables/register", json=other), 409, "topic_bound_to_other_table")


def test_bad_topic_rule(client: TestClient) -> None:
    problem(client.post("/v1/tables/check", json={"ddl": ORDERS_DDL, "topic": "{table}_{schema}"}),
            422, "invalid_topic_rule")


def test_bad_records_are_all_listed_and_nothing_is_encoded(client: TestClient) -> None:
    registered(client)
    records = [
        {"op": "insert", "row": ROW},
        {"op": "insert", "row": dict(ROW, price="1.234", sku=None)},
        {"op": "upsert", "row": ROW},
        {"op": "insert", "row": dict(ROW, bogus=1), "commit_ts": -1},
        {"op": "insert", "row": dict(ROW, bogus=1)},
    ]
    body = problem(client.post(f"/v1/topics/{TOPIC}/encode", json={"records": records}),
                   422, "invalid_records")
    assert "messages" not in body
    found = {(e["record_index"], e.get("column") or e.get("field")) for e in body["errors"]}
    assert found == {(1, "price"), (1, "sku"), (2, "op"), (3, "commit_ts"), (4, "bogus")}


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def test_bad_messages_name_index_part_and_offset(client: TestClient) -> None:
    registered(client)
    good = client.post(f"/v1/topics/{TOPIC}/encode",
                       json={"records": [{"op": "insert", "row": ROW}]}).json()["messages"][0]
    value = base64.b64decode(good["value"])
    messages = [
        {"key": good["key"], "value": good["value"]},     # fine
        {"key": None, "value": b64(b"\x01" + value[1:])},  # wrong magic byte
        {"key": None, "value": b64(value[:3])},             # truncated header
        {"key": None, "value": b64(frame(999, value[5:]))},  # unknown id
        {"key": None, "value": b64(value + b"\x00")},       # left-over byte
        {"key": None, "value": b64(value[:5] + b"\x02")},   # body cut short
        {"key": "not base64!", "value": None},
    ]
    body = problem(client.post("/v1/decode", json={"messages": messages}), 422,
                   "invalid_messages")
    found = [(e["message_index"], e["part"], e.get("offset")) for e in body["errors"]]
    assert found == [(1, "value", 0), (2, "value", 3), (3, "value", 1),
                     (4, "value", len(value)), (5, "value", 6), (6, "key", None)]


def test_raw_message_errors_name_the_offset(client: TestClient) -> None:
    body = problem(client.post("/v1/decode", content=b"\x00\x00",
                               headers={"content-type": "application/octet-stream"}),
                   422, "invalid_messages")
    assert body["errors"][0]["offset"] == 2


def test_body_over_the_limit_is_413(make_client: ClientFactory) -> None:
    small = make_client(max_body_bytes=1024)
    problem(small.post("/v1/decode", content=b"{" + b" " * 2048 + b"}",
                       headers={"content-type": "application/json"}), 413, "body_too_large")


def test_registry_unreachable_is_503_with_retry_after(make_client: ClientFactory) -> None:
    # breaker kept closed: an open one says the seconds to its probe (tests/api/test_outage.py)
    down = make_client(registry_url=f"http://127.0.0.1:{free_port()}",
                       registry_retry_budget=0.2, retry_after_seconds=7,
                       registry_breaker_failures=100)
    response = down.get(f"/v1/topics/{TOPIC}/schemas")
    problem(response, 503, "registry_unavailable")
    assert response.headers["retry-after"] == "7"
    problem(down.get("/readyz"), 503, "not_ready")
    assert down.get("/healthz").status_code == 200


def test_registry_5xx_is_502(make_client: ClientFactory) -> None:
    async def broken(request: Any) -> JSONResponse:
        return JSONResponse({"error_code": 50001, "message": "store down"}, status_code=500)

    app = Starlette(routes=[Route("/{path:path}", broken, methods=["GET", "POST", "PUT"])])
    with serving(app) as registry:
        failing = make_client(registry_url=registry.url, registry_retry_budget=0.2)
        problem(failing.get(f"/v1/topics/{TOPIC}/schemas"), 502, "registry_server_error")
        ready = problem(failing.get("/readyz"), 503, "not_ready")
        assert ready["dependencies"]["registry"]["status"] == "failing"


PROBLEM_MEMBERS = {"type", "title", "status", "detail", "instance", "code", "message"}


def _error_calls() -> Iterator[tuple[str, ast.Call]]:
    root = Path(__file__).resolve().parents[2] / "service"
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                name = getattr(node.func, "id", None) or getattr(node.func, "attr", "")
                if name.endswith("Error"):
                    yield f"{path.relative_to(root)}:{node.lineno}", node


def test_no_error_detail_is_named_like_a_problem_member() -> None:
    """The problem's own members win over an error's details, so a detail called `type` (a
    column's MySQL type, once) would be dropped from the answer: none is named so."""
    clashes = [(where, k.arg) for where, call in _error_calls() for k in call.keywords
               if k.arg in PROBLEM_MEMBERS]
    assert clashes == []
    assert len(list(_error_calls())) > 100  # the scan sees the service's raises


def test_an_unsupported_type_names_it(client: TestClient) -> None:
    body = problem(client.post("/v1/schemas/generate", json={
        "ddl": "CREATE TABLE shop.t (id INT PRIMARY KEY, g GEOMETRY)"}), 422, "unsupported_type")
    assert (body["column"], body["mysql_type"], body["type"]) == \
        ("g", "GEOMETRY", "urn:flatavro:problem:unsupported_type")
