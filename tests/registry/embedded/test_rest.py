"""The embedded registry's Confluent REST API over a real socket (uvicorn), incl. error bodies."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import httpx
import pytest

from service.registry.embedded import store as store_module
from service.registry.embedded.registry import EmbeddedRegistry
from tests.registry.embedded.test_store_shared import held_write_lock
from tests.support.registry import ServedRegistry

CT = {"Content-Type": "application/vnd.schemaregistry.v1+json"}
A = json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]})
A_JAVA = '{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}'
A_B = json.dumps({"type": "record", "name": "R", "fields": [
    {"name": "a", "type": "int"}, {"name": "b", "type": "string", "default": ""}]})
A_REQ = json.dumps({"type": "record", "name": "R", "fields": [
    {"name": "a", "type": "int"}, {"name": "z", "type": "string"}]})


def call(reg: ServedRegistry, method: str, path: str, body: Any = None,
         **kw: Any) -> httpx.Response:
    content = body if isinstance(body, (bytes, str)) or body is None else json.dumps(body)
    return httpx.request(method, reg.url + path, content=content, timeout=10,
                         headers=kw.pop("headers", CT), **kw)


def test_root_and_types(served_registry: ServedRegistry) -> None:
    assert call(served_registry, "GET", "/").json() == {}
    assert call(served_registry, "GET", "/schemas/types").json() == ["AVRO"]


def test_register_lookup_fetch(served_registry: ServedRegistry) -> None:
    r = served_registry
    first = call(r, "POST", "/subjects/t-value/versions", {"schema": A})
    assert first.status_code == 200 and first.json()["id"] == 1
    assert first.headers["content-type"].startswith("application/vnd.schemaregistry.v1+json")
    # whitespace and key order do not matter; no content type is fine too
    again = call(r, "POST", "/subjects/t-value/versions",
                 {"schema": json.dumps(json.loads(A), indent=2)}, headers={})
    assert again.json()["id"] == 1
    looked = call(r, "POST", "/subjects/t-value", {"schema": A}).json()
    # stored and returned as Java Avro's compact Schema.toString(), as Confluent does
    assert looked == {"subject": "t-value", "version": 1, "id": 1, "schema": A_JAVA}
    assert call(r, "GET", "/schemas/ids/1").json() == {"schema": A_JAVA}
    assert call(r, "GET", "/subjects").json() == ["t-value"]
    assert call(r, "GET", "/subjects/t-value/versions/latest").json()["version"] == 1
    assert call(r, "GET", "/subjects/t-value/versions/-1").json()["id"] == 1
    assert call(r, "GET", "/subjects/t-value/versions/1/schema").json() == json.loads(A)
    assert call(r, "GET", "/schemas/ids/1/versions").json() == [
        {"subject": "t-value", "version": 1}]


def test_subjects_are_url_encoded(served_registry: ServedRegistry) -> None:
    r = served_registry
    assert call(r, "POST", "/subjects/a%2Fb%20c-value/versions", {"schema": A}).status_code == 200
    assert call(r, "GET", "/subjects").json() == ["a/b c-value"]


def test_incompatible_is_409_and_verbose_check_explains(served_registry: ServedRegistry) -> None:
    r = served_registry
    call(r, "POST", "/subjects/s/versions", {"schema": A})
    refused = call(r, "POST", "/subjects/s/versions", {"schema": A_REQ})
    assert refused.status_code == 409 and refused.json()["error_code"] == 40901
    check = call(r, "POST", "/compatibility/subjects/s/versions/latest?verbose=True",
                 {"schema": A_REQ}).json()
    assert check["is_compatible"] is False
    assert "READER_FIELD_MISSING_DEFAULT_VALUE" in check["messages"][0]
    ok = call(r, "POST", "/compatibility/subjects/s/versions", {"schema": A_B}).json()
    assert ok == {"is_compatible": True}
    assert call(r, "POST", "/compatibility/subjects/new/versions/latest",
                {"schema": A_REQ}).json() == {"is_compatible": True}


def test_deletes_and_config_and_mode(served_registry: ServedRegistry) -> None:
    r = served_registry
    call(r, "POST", "/subjects/s/versions", {"schema": A})
    call(r, "POST", "/subjects/s/versions", {"schema": A_B})
    assert call(r, "DELETE", "/subjects/s/versions/2").json() == 2
    assert call(r, "GET", "/schemas/ids/2").status_code == 200  # still resolves
    assert call(r, "DELETE", "/subjects/s/versions/2").json()["error_code"] == 40406
    assert call(r, "DELETE", "/subjects/s/versions/1?permanent=true").json()["error_code"] \
        == 40407
    assert call(r, "DELETE", "/subjects/s/versions/2?permanent=TRUE").json() == 2
    assert call(r, "GET", "/subjects/s/versions?deleted=true").json() == [1]
    assert call(r, "GET", "/config").json() == {"compatibilityLevel": "BACKWARD"}
    assert call(r, "PUT", "/config", {"compatibility": "full"}).json() == {"compatibility": "FULL"}
    missing = call(r, "GET", "/config/s")
    assert (missing.status_code, missing.json()["error_code"]) == (404, 40408)
    assert call(r, "GET", "/config/s?defaultToGlobal=true").json() == {
        "compatibilityLevel": "FULL"}
    assert call(r, "PUT", "/mode", {"mode": "READONLY"}).json() == {"mode": "READONLY"}
    ro = call(r, "POST", "/subjects/s/versions", {"schema": A_B})
    assert (ro.status_code, ro.json()["error_code"]) == (422, 42205)


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "code"),
    [
        ("POST", "/subjects/s/versions", {"schema": "{not json"}, 422, 42201),
        ("POST", "/subjects/s/versions", {"schema": '{"type": "nosuch"}'}, 422, 42201),
        ("POST", "/subjects/s/versions", b"{broken", 400, 400),
        ("GET", "/subjects/s/versions/zero", None, 422, 42202),
        ("PUT", "/config", {"compatibility": "SIDEWAYS"}, 422, 42203),
        ("GET", "/subjects/nope/versions", None, 404, 40401),
        ("GET", "/schemas/ids/999", None, 404, 40403),
        ("GET", "/schemas/ids/99999999999999999999/subjects", None, 404, 40403),
        ("GET", "/schemas/ids/99999999999999999999/versions", None, 404, 40403),
        ("GET", "/schemas/ids/99999999999999999999", None, 404, 40403),
        ("POST", "/subjects/bad%01subject/versions", {"schema": A}, 422, 42208),
        ("GET", "/no/such/route", None, 404, 404),
        ("POST", "/subjects/s/versions", {"schema": "x" * 70000}, 413, 413),
    ],
)
def test_client_mistakes_get_confluent_error_bodies(
    served_registry: ServedRegistry, method: str, path: str, body: Any, status: int, code: int
) -> None:
    response = call(served_registry, method, path, body)
    assert response.status_code == status
    assert response.json()["error_code"] == code
    assert isinstance(response.json()["message"], str)


def test_version_not_found_after_a_real_subject(served_registry: ServedRegistry) -> None:
    call(served_registry, "POST", "/subjects/s/versions", {"schema": A})
    response = call(served_registry, "GET", "/subjects/s/versions/9")
    assert (response.status_code, response.json()["error_code"]) == (404, 40402)


def test_a_write_locked_out_by_another_worker_is_50002_with_retry_after(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_module, "BUSY_SECONDS", 0.2)  # read when the file is opened
    registry = EmbeddedRegistry(tmp_path / "r.sqlite")
    served = ServedRegistry(registry).start()
    try:
        with held_write_lock(tmp_path / "r.sqlite", release_after=None):
            refused = call(served, "POST", "/subjects/t-value/versions", {"schema": A})
        assert refused.status_code == 500 and refused.headers["retry-after"] == "1"
        body = refused.json()
        assert body["error_code"] == 50002
        assert body["message"].startswith("Operation timed out: the registry file ")
        assert "stayed locked by another writer" in body["message"]
        # Nothing was written; once the lock is gone the same call succeeds.
        assert call(served, "GET", "/subjects").json() == []
        assert call(served, "POST", "/subjects/t-value/versions", {"schema": A}).json()["id"] == 1
    finally:
        served.stop()
        registry.close()


def test_a_store_failure_is_50001_not_the_callers_fault(
        served_registry: ServedRegistry, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    def broken(*_: Any, **__: Any) -> Any:
        raise sqlite3.DatabaseError("database disk image is malformed")

    monkeypatch.setattr(served_registry.registry._store, "subjects", broken)
    answer = call(served_registry, "GET", "/subjects")
    assert answer.status_code == 500
    assert answer.json() == {"error_code": 50001, "message": "Error in the backend data store: "
                                                           "database disk image is malformed"}
    assert "registry store failure" in caplog.text  # logged with its traceback, not swallowed
