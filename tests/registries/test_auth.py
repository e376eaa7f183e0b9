"""A registry that requires authentication: flatavro's embedded registry served with API keys
for reads and writes, reached with HTTP basic auth (the key as the password, as Confluent's
clients send it) or a bearer token. Apicurio 2.6 is not in this file: its basic auth exchanges
the credentials for a token at a Keycloak (OIDC) server, which this machine cannot run
(docs/registry.md)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from fastapi.testclient import TestClient

from service.api.app import create_app
from service.api.settings import Settings
from tests.support.parts import FlatavroRegistry

KEY = "registry-s3cr3t"
DDL = "CREATE TABLE {schema}.orders (id BIGINT PRIMARY KEY, note VARCHAR(20))"


@pytest.fixture(scope="module")
def locked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FlatavroRegistry]:
    registry = FlatavroRegistry(tmp_path_factory.mktemp("locked"), FLATAVRO_API_KEYS=KEY,
                                FLATAVRO_PROTECT_READS="true")
    yield registry
    registry.stop()


def service(registry: FlatavroRegistry, **auth: Any) -> TestClient:
    settings = Settings(registry_url=registry.url, log_level="WARNING",
                        registry_retry_budget=0, **auth)
    return TestClient(create_app(settings), raise_server_exceptions=False)


@pytest.mark.parametrize("auth", [
    {"registry_username": "flatavro", "registry_password": KEY},
    {"registry_bearer_token": KEY},
], ids=["basic", "bearer"])
def test_registers_and_encodes_with_credentials(locked: FlatavroRegistry,
                                                auth: dict[str, str]) -> None:
    schema = f"auth_{next(iter(auth)).split('_')[1]}"
    with service(locked, **auth) as client:
        assert client.get("/readyz").status_code == 200
        done = client.post("/v1/tables/register", json={"ddl": DDL.format(schema=schema)})
        assert done.status_code == 200, done.text
        encoded = client.post(f"/v1/topics/tidb_{schema}_orders/encode",
                              json={"records": [{"op": "insert", "row": {"id": 1}}]})
        assert encoded.status_code == 200, encoded.text


def test_without_credentials_the_fault_is_named(locked: FlatavroRegistry) -> None:
    with service(locked) as client:
        ready = client.get("/readyz")
        assert ready.status_code == 503
        assert ready.json()["dependencies"]["registry"]["registry_status"] == 401
        done = client.post("/v1/tables/register", json={"ddl": DDL.format(schema="nokey")})
        assert done.status_code == 502, done.text
        assert done.json()["code"] == "registry_unauthorized"
        assert "FLATAVRO_REGISTRY_USERNAME" in done.json()["detail"]
    with service(locked, registry_username="u", registry_password="wrong") as client:
        done = client.post("/v1/tables/register", json={"ddl": DDL.format(schema="nokey")})
        assert done.status_code == 502 and done.json()["code"] == "registry_unauthorized"


def test_confluent_client_with_basic_auth(locked: FlatavroRegistry, tmp_path: Path) -> None:
    with service(locked, registry_bearer_token=KEY) as client:
        assert client.post("/v1/tables/register",
                           json={"ddl": DDL.format(schema="auth_sr")}).status_code == 200
    sr = SchemaRegistryClient({"url": locked.url, "basic.auth.user.info": f"app:{KEY}"})
    assert "tidb_auth_sr_orders-value" in sr.get_subjects()
    assert sr.get_latest_version("tidb_auth_sr_orders-value").version == 1
