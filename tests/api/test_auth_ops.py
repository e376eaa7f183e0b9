"""API keys on and off, dry runs, metrics, readiness and JSON logs with request ids."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from tests.api.test_problems import ROW, TOPIC, problem, registered
from tests.support.api import KEY, ORDERS_DDL, ClientFactory

REGISTER = {"ddl": ORDERS_DDL}
VALUE_SCHEMA = json.dumps({"type": "record", "name": "r", "fields": [
    {"name": "a", "type": {"type": "int", "connect.parameters": {"tidb_type": "INT"}}}]})


def test_without_keys_everything_is_open(client: TestClient) -> None:
    assert client.post("/v1/tables/register", json=REGISTER).status_code == 200
    assert client.delete(f"/v1/subjects/{TOPIC}-value/versions/1").status_code == 200


@pytest.mark.parametrize("headers", [{"Authorization": f"Bearer {KEY}"}, {"X-API-Key": KEY}])
def test_writes_need_a_key_when_keys_are_set(make_client: ClientFactory,
                                             headers: dict[str, str]) -> None:
    client = make_client(api_keys=f"other,{KEY}")
    refused = client.post("/v1/tables/register", json=REGISTER)
    problem(refused, 401, "unauthorized")
    assert refused.headers["www-authenticate"].startswith("Bearer")
    wrong = client.post("/v1/tables/register", json=REGISTER, headers={"X-API-Key": "nope"})
    assert KEY not in problem(wrong, 401, "unauthorized")["detail"]
    assert client.post("/v1/tables/register", json=REGISTER, headers=headers).status_code == 200
    problem(client.put(f"/v1/subjects/{TOPIC}-value/compatibility",
                       json={"compatibility": "FULL"}), 401, "unauthorized")
    problem(client.delete(f"/v1/subjects/{TOPIC}-value"), 401, "unauthorized")
    # reads stay open
    assert client.get(f"/v1/topics/{TOPIC}/schemas").status_code == 200
    assert client.post(f"/v1/topics/{TOPIC}/encode",
                       json={"records": [{"op": "insert", "row": ROW}]}).status_code == 200


def test_embedded_registry_writes_need_a_key(make_client: ClientFactory) -> None:
    client = make_client(api_keys=KEY)
    refused = client.post("/registry/subjects/s-value/versions", json={"schema": VALUE_SCHEMA})
    assert refused.status_code == 401
    assert refused.json()["error_code"] == 40101
    assert client.put("/registry/config", json={"compatibility": "NONE"}).status_code == 401
    assert client.post("/registry/subjects/s-value/versions", json={"schema": VALUE_SCHEMA},
                       headers={"X-API-Key": KEY}).status_code == 200
    assert client.get("/registry/subjects").json() == ["s-value"]
    lookup = client.post("/registry/subjects/s-value", json={"schema": VALUE_SCHEMA})
    assert lookup.status_code == 200  # a lookup is a read


def test_protected_reads(make_client: ClientFactory) -> None:
    client = make_client(api_keys=KEY, protect_reads=True)
    problem(client.get("/v1/subjects"), 401, "unauthorized")
    assert client.get("/registry/subjects").status_code == 401
    assert client.get("/v1/subjects", headers={"X-API-Key": KEY}).json() == []
    assert client.get("/healthz").status_code == 200


def test_dry_run_explains_a_not_null_column_without_default(client: TestClient) -> None:
    registered(client)
    evolved = ORDERS_DDL.replace("note TEXT", "note TEXT, qty INT NOT NULL")
    verdict = client.post("/v1/tables/check", json={"ddl": evolved}).json()
    assert verdict["compatible"] is False
    key, value = verdict["subjects"]
    assert (key["subject"], key["compatible"]) == (f"{TOPIC}-key", True)
    assert (value["subject"], value["compatibility_level"], value["compatible"]) == \
        (f"{TOPIC}-value", "BACKWARD", False)
    [reason] = value["incompatibilities"]
    assert (reason["type"], reason["location"], reason["version"]) == \
        ("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/5", 1)
    assert "`qty`" in reason["message"]
    assert client.get(f"/v1/subjects/{TOPIC}-value/versions").json() == [1]
    with_default = ORDERS_DDL.replace("note TEXT", "note TEXT, qty INT NOT NULL DEFAULT 1")
    assert client.post("/v1/tables/check", json={"ddl": with_default}).json()["compatible"]


def test_admin_routes(client: TestClient) -> None:
    registered(client)
    subject = f"{TOPIC}-value"
    assert client.get("/v1/subjects").json() == [f"{TOPIC}-key", subject]
    assert client.get(f"/v1/subjects/{subject}/versions/latest").json()["version"] == 1
    assert client.put(f"/v1/subjects/{subject}/compatibility",
                      json={"compatibility": "FULL"}).json()["compatibility"] == "FULL"
    assert client.get(f"/v1/subjects/{subject}/compatibility").json() == {
        "subject": subject, "compatibility": "FULL", "configured": "FULL"}
    deleted = client.delete(f"/v1/subjects/{subject}").json()
    assert deleted == {"subject": subject, "versions": [1], "permanent": False}
    assert client.get("/v1/subjects", params={"deleted": True}).json() == [
        f"{TOPIC}-key", subject]
    problem(client.get(f"/v1/topics/{TOPIC}/schemas"), 404, "subject_not_found")


def metric(text: str, name: str) -> float:
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith(name))


def test_steady_state_encode_makes_no_registry_calls(client: TestClient) -> None:
    registered(client)
    batch = {"records": [{"op": "insert", "row": ROW}] * 10}
    client.post(f"/v1/topics/{TOPIC}/encode", json=batch)
    before = client.get("/metrics").text
    for _ in range(5):
        assert client.post(f"/v1/topics/{TOPIC}/encode", json=batch).status_code == 200
    after = client.get("/metrics").text
    calls = "flatavro_registry_calls_total"
    assert metric(after, calls) == metric(before, calls)
    assert metric(after, 'flatavro_records_total{direction="encode"}') == 60
    assert 'route="/v1/topics/{topic}/encode"' in after
    client.post(f"/v1/topics/{TOPIC}/encode", json={"records": [{"op": "x"}]})
    assert metric(client.get("/metrics").text,
                  'flatavro_record_errors_total{direction="encode"}') == 1


def test_the_documents_and_the_root_have_their_own_route_label(client: TestClient) -> None:
    home = client.get("/", follow_redirects=False)
    assert home.status_code == 307 and home.headers["location"] == "/docs"
    assert client.get("/openapi.json").json()["info"]["title"] == "flatavro"
    text = client.get("/metrics").text
    assert 'route="/openapi.json"' in text and 'route="/"' in text
    assert "unmatched" not in text


def test_readyz_with_the_embedded_registry(client: TestClient) -> None:
    assert client.get("/readyz").json() == {"status": "ok"}


def test_logs_are_json_with_request_ids_and_no_secrets(
        make_client: ClientFactory, capsys: pytest.CaptureFixture[str]) -> None:
    client = make_client(api_keys=KEY, log_level="INFO")
    response = client.get("/healthz", headers={"X-Request-ID": "req-42"})
    assert response.headers["x-request-id"] == "req-42"
    generated = client.get("/healthz").headers["x-request-id"]
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines() if line]
    start = next(entry for entry in lines if entry["message"] == "starting")
    assert start["config"]["api_keys"] == ["**********"]
    assert start["docs"] == "http://127.0.0.1:8080/docs"
    access = [entry for entry in lines if entry["logger"] == "flatavro.access"]
    assert [entry["request_id"] for entry in access] == ["req-42", generated]
    assert access[0]["status"] == 200 and access[0]["route"] == "/healthz"
    assert KEY not in json.dumps(lines)
    assert KEY not in client.get("/metrics").text
