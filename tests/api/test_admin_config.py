"""Compatibility levels and modes through /v1 over a real socket: global and per subject,
configured versus in effect, overrides removed, bad values, and writes behind the API keys."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from service.api.app import create_app
from service.api.settings import Settings
from tests.api.test_admin_subjects import VALUE, register
from tests.api.test_problems import problem
from tests.support.api import KEY, ORDERS_DDL
from tests.support.harness import ServedApp


@pytest.fixture
def http(served: ServedApp) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=served.url) as client:
        yield client


def test_the_global_level_configured_and_in_effect(http: httpx.Client) -> None:
    assert http.get("/v1/config").json() == {
        "subject": None, "compatibility": "BACKWARD", "configured": None}
    assert http.put("/v1/config", json={"compatibility": "FULL"}).json() == {
        "subject": None, "compatibility": "FULL", "configured": "FULL"}
    assert http.get("/v1/config").json()["configured"] == "FULL"
    # a subject without its own level follows the global one, and says so
    assert http.get(f"/v1/subjects/{VALUE}/compatibility").json() == {
        "subject": VALUE, "compatibility": "FULL", "configured": None}


def test_a_subject_override_is_set_then_removed(http: httpx.Client) -> None:
    register(http)
    assert http.put(f"/v1/subjects/{VALUE}/compatibility",
                    json={"compatibility": "NONE"}).json() == {
        "subject": VALUE, "compatibility": "NONE", "configured": "NONE"}
    assert http.delete(f"/v1/subjects/{VALUE}/compatibility").json() == {
        "subject": VALUE, "compatibility": "BACKWARD", "configured": None, "removed": "NONE"}
    assert http.get(f"/v1/subjects/{VALUE}")\
        .json()["compatibility"] == {"configured": None, "effective": "BACKWARD"}
    problem(http.delete(f"/v1/subjects/{VALUE}/compatibility"), 404,
            "subject_config_not_found")


def test_the_global_mode_and_a_subject_mode(http: httpx.Client) -> None:
    register(http)
    assert http.get("/v1/mode").json() == {"subject": None, "mode": "READWRITE",
                                           "configured": None}
    assert http.put(f"/v1/subjects/{VALUE}/mode", json={"mode": "READONLY"}).json() == {
        "subject": VALUE, "mode": "READONLY", "configured": "READONLY"}
    assert http.get(f"/v1/subjects/{VALUE}/mode").json()["mode"] == "READONLY"
    problem(http.post("/v1/tables/register",
                      json={"ddl": ORDERS_DDL.replace("note TEXT", "note TEXT, qty INT")}),
            422, "registry_read_only")
    assert http.delete(f"/v1/subjects/{VALUE}/mode").json() == {
        "subject": VALUE, "mode": "READWRITE", "configured": None, "removed": "READONLY"}
    problem(http.delete(f"/v1/subjects/{VALUE}/mode"), 404, "subject_mode_not_found")
    assert http.put("/v1/mode", json={"mode": "READONLY"}).json() == {
        "subject": None, "mode": "READONLY", "configured": "READONLY"}
    assert http.get(f"/v1/subjects/{VALUE}/mode").json() == {
        "subject": VALUE, "mode": "READONLY", "configured": None}
    assert http.get(f"/v1/subjects/{VALUE}").json()["mode"] == {
        "configured": None, "effective": "READONLY"}
    assert http.put("/v1/mode", json={"mode": "READWRITE"}).status_code == 200


def test_import_mode_over_existing_subjects_needs_force(http: httpx.Client) -> None:
    register(http)
    problem(http.put("/v1/mode", json={"mode": "IMPORT"}), 422, "operation_not_permitted")
    problem(http.put(f"/v1/subjects/{VALUE}/mode", json={"mode": "IMPORT"}), 422,
            "operation_not_permitted")
    assert http.get("/v1/mode").json()["mode"] == "READWRITE"
    assert http.put("/v1/mode", params={"force": True},
                    json={"mode": "IMPORT"}).json()["mode"] == "IMPORT"


@pytest.mark.parametrize(("method", "path", "body", "location"), [
    ("PUT", "/v1/config", {"compatibility": "SIDEWAYS"}, "body/compatibility"),
    ("PUT", f"/v1/subjects/{VALUE}/compatibility", {"compatibility": "backward"},
     "body/compatibility"),
    ("PUT", "/v1/mode", {"mode": "WRITEONLY"}, "body/mode"),
    ("PUT", f"/v1/subjects/{VALUE}/mode", {}, "body/mode"),
    ("PUT", f"/v1/subjects/{VALUE}/mode", {"mode": "READONLY", "force": True}, "body/force"),
])
def test_invalid_levels_and_modes_are_422_naming_the_field(
        http: httpx.Client, method: str, path: str, body: object, location: str) -> None:
    found = problem(http.request(method, path, json=body), 422, "invalid_request")
    assert found["errors"][0]["location"] == location


@pytest.fixture
def keyed(tmp_path: Path) -> Iterator[httpx.Client]:
    settings = Settings(registry_db_path=str(tmp_path / "keyed.sqlite"), log_level="WARNING",
                        api_keys=KEY)
    served = ServedApp(create_app(settings), health_path="/healthz", lifespan="on").start()
    with httpx.Client(base_url=served.url) as client:
        yield client
    served.stop()


@pytest.mark.parametrize(("method", "path", "body", "status"), [
    ("PUT", "/v1/config", {"compatibility": "FULL"}, 200),
    ("PUT", "/v1/mode", {"mode": "READONLY"}, 200),
    ("PUT", f"/v1/subjects/{VALUE}/mode", {"mode": "READONLY"}, 200),
    ("DELETE", f"/v1/subjects/{VALUE}/mode", None, 404),  # none set: nothing to remove
    ("DELETE", f"/v1/subjects/{VALUE}/compatibility", None, 404),
    ("DELETE", "/v1/topics/tidb_shop_orders", None, 404),
])
def test_admin_writes_need_a_key(keyed: httpx.Client, method: str, path: str,
                                 body: object, status: int) -> None:
    problem(keyed.request(method, path, json=body), 401, "unauthorized")
    allowed = keyed.request(method, path, json=body, headers={"X-API-Key": KEY})
    assert allowed.status_code == status, allowed.text


@pytest.mark.parametrize("path", ["/v1/config", "/v1/mode", f"/v1/subjects/{VALUE}/mode",
                                  "/v1/subjects?detail=true"])
def test_admin_reads_stay_open(keyed: httpx.Client, path: str) -> None:
    assert keyed.get(path).status_code == 200
