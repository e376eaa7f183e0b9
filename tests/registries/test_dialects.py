"""Where registries differ, flatavro behaves as a user of each expects: the global level for a
subject without its own (Apicurio says NONE or 40401 there), READWRITE where there is no
``/mode``, ``registry_unsupported`` (never "not found") for what a registry lacks, and a wrong
URL named as such by /readyz."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from fastapi.testclient import TestClient

from service.api.app import create_app
from service.api.settings import Settings
from tests.support.parts import ExternalRegistry
from tests.support.registries import Names


@contextmanager
def global_level(registry: ExternalRegistry, level: str) -> Iterator[None]:
    """The registry's global level set to `level` for the block, then put back."""
    with registry.http() as http:
        before = http.get("config").json()["compatibilityLevel"]
        assert http.put("config", json={"compatibility": level}).status_code == 200
        try:
            yield
        finally:
            assert http.put("config", json={"compatibility": before}).status_code == 200


def test_a_subject_without_a_level_of_its_own_has_the_global_level(
        service: TestClient, names: Names, registry: ExternalRegistry) -> None:
    with global_level(registry, "BACKWARD"):
        assert service.post("/v1/tables/register", json={"ddl": names.ddl()}).status_code == 200
        compat = service.get(f"/v1/subjects/{names.value_subject}/compatibility")
        assert compat.status_code == 200, compat.text
        assert compat.json()["compatibility"] == "BACKWARD"
        refused = service.post("/v1/tables/register",
                               json={"ddl": names.ddl(", qty INT NOT NULL")})
        assert refused.status_code == 409, refused.text
        assert "column `qty` is new and has no default" in refused.json()["detail"]
        subjects = refused.json()["subjects"]
        assert [s["compatibility_level"] for s in subjects] == ["BACKWARD"]
    with registry.http() as http:
        assert http.get(f"subjects/{names.value_subject}/versions").json() == [1]


def test_modes_where_the_registry_has_them(service: TestClient,
                                           registry: ExternalRegistry) -> None:
    got = service.get("/v1/mode")
    assert got.status_code == 200 and got.json()["mode"] == "READWRITE", got.text
    put = service.put("/v1/mode", json={"mode": "READWRITE"})
    if registry.name == "apicurio":  # Apicurio 2.6 has no /mode: named, not "not found"
        assert put.status_code == 502, put.text
        assert put.json()["code"] == "registry_unsupported"
        assert "does not implement PUT /mode" in put.json()["detail"]
    else:
        assert put.status_code == 200, put.text


def test_a_url_without_the_api_prefix_is_named(registry: ExternalRegistry) -> None:
    root = registry.url.rsplit("/", 1)[0] if registry.name == "flatavro" \
        else registry.url.replace("/apis/ccompat/v7", "")
    settings = Settings(registry_url=root, log_level="WARNING", registry_retry_budget=0)
    with TestClient(create_app(settings), raise_server_exceptions=False) as service:
        ready = service.get("/readyz")
        assert ready.status_code == 503, ready.text
        facts = ready.json()["dependencies"]["registry"]
        assert facts["status"] == "unsupported"
        assert "does not implement GET /schemas/types" in facts["reason"]
        assert "not the root of a Confluent-compatible API" in facts["reason"]
        done = service.post("/v1/tables/register", json={
            "ddl": "CREATE TABLE shop.never (id INT PRIMARY KEY)"})
        assert done.status_code == 502, done.text
        assert done.json()["code"] == "registry_unsupported"
