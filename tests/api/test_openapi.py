"""The OpenAPI document: generated file in sync, every operation documented and tagged."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from service.api.app import create_app
from service.api.openapi_file import DEFAULT_PATH, document, render
from service.api.problem_examples import EXAMPLES
from service.api.problems import STATUS, status_of
from service.api.settings import Settings
from service.cdc.catalog import Protocol
from tests.api.conftest import ORDERS_DDL

ROOT = Path(__file__).resolve().parents[2]
TAGS = {"schemas", "topics", "codec", "registry-admin", "ops"}


def operations(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [op for path in spec["paths"].values() for op in path.values()]


def test_openapi_file_is_in_sync_with_the_app() -> None:
    committed = (ROOT / DEFAULT_PATH).read_text(encoding="utf-8")
    assert json.loads(committed) == document(), \
        "openapi/openapi.json drifted from the app: run `make openapi` and commit it"
    assert committed == render(document())


def test_every_operation_is_documented() -> None:
    spec = document()
    ids = [op["operationId"] for op in operations(spec)]
    assert len(ids) == len(set(ids)) == 17
    for op in operations(spec):
        assert op["summary"] and op["description"], op["operationId"]
        assert len(op["tags"]) == 1 and op["tags"][0] in TAGS, op["operationId"]
    assert {t["name"] for t in spec["tags"]} == TAGS


def test_request_bodies_have_examples() -> None:
    spec = document()
    schemas = spec["components"]["schemas"]
    for op in operations(spec):
        if "requestBody" not in op:
            continue
        content = op["requestBody"]["content"]["application/json"]
        model = schemas[content["schema"]["$ref"].rsplit("/", 1)[1]]
        has_examples = "examples" in content or "examples" in model or any(
            "examples" in field for field in model.get("properties", {}).values())
        assert has_examples, op["operationId"]


def test_errors_are_documented_as_problem_json() -> None:
    for op in operations(document()):
        for status, response in op["responses"].items():
            if status.startswith(("4", "5")):
                assert list(response["content"]) == ["application/problem+json"]


def test_convert_has_an_example_per_protocol() -> None:
    op = document()["paths"]["/v1/convert/{protocol}"]["post"]
    examples = op["requestBody"]["content"]["application/json"]["examples"]
    assert set(examples) == {p.value for p in Protocol}
    committed = json.loads((ROOT / DEFAULT_PATH).read_text(encoding="utf-8"))
    assert "/v1/convert/{protocol}" in committed["paths"]


def _security(spec: dict[str, Any]) -> dict[str, list[dict[str, list[str]]]]:
    return {op["operationId"]: op["security"] for op in operations(spec) if "security" in op}


WRITES = {"registerTable", "deleteVersion", "deleteSubject", "setCompatibility"}
BOTH = [{"HTTPBearer": []}, {"APIKeyHeader": []}]


def test_no_keys_no_security_anywhere() -> None:
    spec = document()
    assert _security(spec) == {}
    assert "securitySchemes" not in spec["components"]
    assert all("401" not in op["responses"] for op in operations(spec))
    assert "default settings" in spec["info"]["description"]


def test_with_keys_writes_need_one_and_convert_may_use_one() -> None:
    spec = create_app(Settings.model_construct(api_keys=["k"])).openapi()
    assert _security(spec) == {**{w: BOTH for w in WRITES}, "convertMessages": [*BOTH, {}]}
    assert set(spec["components"]["securitySchemes"]) == {"HTTPBearer", "APIKeyHeader"}


def test_with_protected_reads_every_v1_operation_needs_a_key() -> None:
    spec = create_app(Settings.model_construct(api_keys=["k"], protect_reads=True)).openapi()
    needing = {op["operationId"] for op in operations(spec) if op.get("security") == BOTH}
    assert needing == {op["operationId"] for op in operations(spec)
                       if op["tags"] != ["ops"]}


def test_version_zero_is_outside_the_spec() -> None:
    spec = document()
    param = next(p for p in spec["paths"]["/v1/subjects/{subject}/versions/{version}"]["get"]
                 ["parameters"] if p["name"] == "version")
    pattern = re.compile(param["schema"]["pattern"])
    assert [v for v in ("latest", "-1", "1", "12", "0", "-2", "01") if pattern.match(v)] == \
        ["latest", "-1", "1", "12"]


def test_error_examples_are_real_bodies_of_every_status_class() -> None:
    spec = document()
    examples = spec["components"]["examples"]
    shown = {(int(name.split("-")[0]), e["value"]["code"]) for name, e in examples.items()}
    expected = {(status_of(error), error.code) for _, error in EXAMPLES}
    assert shown == expected
    listed = {type(error) for _, error in EXAMPLES}
    assert set(STATUS) <= listed, "every class of the STATUS table has an example"
    for name, example in examples.items():
        body = example["value"]
        assert body["status"] == int(name.split("-")[0]), name
        assert body["type"] == f"urn:flatavro:problem:{body['code']}"
        assert body["instance"].startswith("/") and body["detail"].startswith(body["message"])
        assert "additionalProp1" not in json.dumps(example), name
    problem = spec["components"]["schemas"]["Problem"]
    assert "additionalProperties" not in problem
    assert {"errors", "registry_error_code", "limit", "hint", "fix", "dependencies",
            "retry_after", "accepted", "allow"} <= set(problem["properties"])


def test_every_error_answer_shows_examples_of_its_status() -> None:
    for op in operations(document()):
        for status, response in op["responses"].items():
            if status.startswith(("4", "5")) and status != "413":
                refs = response["content"]["application/problem+json"]["examples"]
                assert refs and all(r["$ref"].rsplit("/", 1)[1].startswith(f"{status}-")
                                    for r in refs.values()), (op["operationId"], status)


def test_the_register_example_has_a_key_and_a_value_subject() -> None:
    model = document()["components"]["schemas"]["TableRegistrationOut"]
    example = model["examples"][0]
    assert (example["key"]["subject"], example["value"]["subject"]) == \
        ("tidb_shop_orders-key", "tidb_shop_orders-value")


def test_documented_error_examples_are_what_the_service_answers(client: TestClient) -> None:
    examples = document()["components"]["examples"]
    assert client.post("/v1/tables/register", json={"ddl": ORDERS_DDL}).status_code == 200
    answers = {
        "422-duplicate_column": client.post("/v1/schemas/generate", json={
            "ddl": "CREATE TABLE shop.orders (id INT PRIMARY KEY, id INT)"}),
        "422-missing_database": client.post("/v1/schemas/generate", json={
            "ddl": "CREATE TABLE orders (id INT PRIMARY KEY)"}),
        "422-invalid_default": client.post("/v1/schemas/generate", json={
            "ddl": "CREATE TABLE shop.orders (id INT PRIMARY KEY, n INT DEFAULT 'x')"}),
        "422-invalid_version": client.get(
            "/v1/subjects/tidb_shop_orders-value/versions/2147483648"),
        "404-subject_not_found": client.get("/v1/subjects/nope-value/versions"),
        "404-version_not_found": client.get("/v1/subjects/tidb_shop_orders-value/versions/7"),
    }
    for name, response in answers.items():
        assert (response.status_code, response.json()) == \
            (int(name[:3]), examples[name]["value"]), name
