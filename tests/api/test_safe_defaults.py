"""Safe defaults over HTTP: a table without a database is refused (real socket), hints name
request fields, and an unusable registry path stops the start-up in one log line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from service.core.ddl import table_from_ddl
from tests.cdc.builders import canal_messages
from tests.support.harness import ServedApp, free_port

ROOT = Path(__file__).resolve().parents[2]

UNQUALIFIED = "CREATE TABLE orders (id BIGINT PRIMARY KEY, sku VARCHAR(64))"
PRICES = table_from_ddl("CREATE TABLE shop.prices (id INT PRIMARY KEY, price DECIMAL(10,2))")


def _problem(response: httpx.Response, code: str) -> dict[str, Any]:
    assert response.status_code == 422, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body: dict[str, Any] = response.json()
    assert body["code"] == code
    assert body["detail"].endswith("; " + body["hint"])
    return body


@pytest.mark.parametrize("path", ["/v1/schemas/generate", "/v1/tables/check",
                                  "/v1/tables/register"])
def test_a_ddl_without_a_database_is_refused(served: ServedApp, path: str) -> None:
    with httpx.Client(base_url=served.url) as http:
        body = _problem(http.post(path, json={"ddl": UNQUALIFIED}), "missing_database")
        assert body["fix"] == ["database"] and body["table"] == "orders"
        assert '"database"' in body["hint"] and "--schema" not in body["hint"]
        assert http.get("/v1/subjects").json() == []


def test_the_database_field_names_it(served: ServedApp) -> None:
    with httpx.Client(base_url=served.url) as http:
        done = http.post("/v1/tables/register", json={"ddl": UNQUALIFIED, "database": "shop"})
        assert done.status_code == 200, done.text
        assert done.json()["topic"] == "tidb_shop_orders"
        assert http.get("/v1/subjects").json() == ["tidb_shop_orders-key",
                                                   "tidb_shop_orders-value"]


def test_convert_hints_name_request_fields(served: ServedApp) -> None:
    [value] = canal_messages(PRICES, [("insert", {"id": 1, "price": "9.90"}, None, 1 << 40)])
    batch: dict[str, Any] = {"messages": [{"value": value}]}
    with httpx.Client(base_url=served.url) as http:
        unregistered = _problem(http.post("/v1/convert/canal-json", json=batch),
                                "unconvertible_messages")
        assert unregistered["fix"] == ["register_table", "register_on_convert"]
        assert '"register": true' in unregistered["hint"]
        assert "--register" not in unregistered["hint"]
        batch["register"] = True
        imprecise = _problem(http.post("/v1/convert/canal-json", json=batch),
                             "unconvertible_messages")
        assert imprecise["fix"] == ["register_table", "decimal_handling_mode_string"]
        assert '"decimal_handling_mode": "string"' in imprecise["hint"]
        assert "--decimal-handling-mode" not in imprecise["hint"]
        assert http.get("/v1/subjects").json() == []


def test_uvicorn_factory_logs_an_unusable_registry_path_in_one_line(tmp_path: Path) -> None:
    path = str(tmp_path / "typo" / "r.sqlite")
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLATAVRO_")}
    env.update(FLATAVRO_REGISTRY_DB_PATH=path)
    done = subprocess.run(
        [sys.executable, "-m", "uvicorn", "--factory", "service.api.app:create_app",
         "--port", str(free_port())],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode != 0
    assert "Traceback" not in done.stderr + done.stdout
    errors = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    first = errors[0]["message"]
    assert first.startswith("[registry_store_unavailable] ")
    assert path in first and "FLATAVRO_REGISTRY_DB_PATH" in first
    assert list(tmp_path.iterdir()) == []
