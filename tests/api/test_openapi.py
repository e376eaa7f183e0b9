"""The OpenAPI document: generated file in sync, every operation documented and tagged."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx
from fastapi.testclient import TestClient
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

from service.api.app import create_app
from service.api.docs.openapi_file import DEFAULT_PATH, document, render
from service.api.docs.problem_examples import EXAMPLES
from service.api.problems import STATUS, status_of
from service.api.settings import Settings
from service.cdc.catalog import Protocol
from tests.support.api import KEY, ORDERS_DDL, ClientFactory
from tests.support.harness import free_port, serving

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
    assert len(ids) == len(set(ids)) == 29
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


WRITES = {"registerTable", "deleteVersion", "deleteSubject", "setCompatibility",
          "deleteCompatibility", "setGlobalCompatibility", "setGlobalMode", "setSubjectMode",
          "deleteSubjectMode", "deleteTopic"}
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
    for cls in STATUS:
        assert any(isinstance(e, cls) for _, e in EXAMPLES), f"no example of {cls.__name__}"
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
    for name, example in examples.items():  # every member an example shows is declared
        assert set(example["value"]) <= set(problem["properties"]), name


def test_every_error_answer_shows_examples_of_its_status() -> None:
    for op in operations(document()):
        for status, response in op["responses"].items():
            if status.startswith(("4", "5")):
                refs = response["content"]["application/problem+json"]["examples"]
                assert refs and all(r["$ref"].rsplit("/", 1)[1].startswith(f"{status}-")
                                    for r in refs.values()), (op["operationId"], status)


def test_the_register_example_has_a_key_and_a_value_subject() -> None:
    model = document()["components"]["schemas"]["TableRegistrationOut"]
    example = model["examples"][0]
    assert (example["key"]["subject"], example["value"]["subject"]) == \
        ("tidb_shop_orders-key", "tidb_shop_orders-value")


def _same_as_documented(answers: dict[str, httpx.Response], registry: str = "") -> None:
    examples = document()["components"]["examples"]
    for name, response in answers.items():
        text = response.text.replace(registry, REGISTRY) if registry else response.text
        assert (response.status_code, json.loads(text)) == \
            (int(name[:3]), examples[name]["value"]), name


JSON = {"content-type": "application/json"}
REGISTRY = "http://registry:8081"  # the examples' registry
REPLAYED_ELSEWHERE = {"401-unauthorized", "401-unauthorized_WriteKeyRequiredError",
                      "422-registry_read_only", "422-registry_error",
                      "502-registry_server_error", "503-registry_unavailable", "503-not_ready",
                      "502-registry_unauthorized", "502-registry_unsupported"}
# a registry that answers a registration with the id only, then cannot find it: too old to
# stand up here (the message is `HttpSchemaRegistry`'s format for every registry error)
# an S3 store refusing the credentials (tests/cdc/test_claim_check_s3.py, on SeaweedFS)
NOT_REPLAYED = {"404-schema_not_found", "502-claim_check_storage_unavailable"}


def test_documented_error_examples_are_what_the_service_answers(client: TestClient) -> None:
    assert client.post("/v1/tables/register", json={"ddl": ORDERS_DDL}).status_code == 200
    generate = "/v1/schemas/generate"

    def ddl(text: str) -> httpx.Response:
        return client.post(generate, json={"ddl": text})

    canal = {"id": 0, "database": "shop", "table": "refunds", "pkNames": ["id"], "isDdl": False,
             "type": "INSERT", "es": 1, "ts": 1, "sql": "", "sqlType": {"id": -5},
             "mysqlType": {"id": "bigint"}, "old": None, "data": [{"id": "1"}]}
    row = {"id": 1, "sku": "A-1", "price": "abc", "created": None, "note": None}
    answers = {
        "422-invalid_json": client.post(generate, content=b'{"ddl": "CREATE TABLE a.b",}',
                                        headers=JSON),
        "422-invalid_request": client.post("/v1/tables/check", json={"ddl": 5}),
        "422-invalid_ddl": ddl("CREATE TABLE shop.orders (id BIGINT PRIMARY KEY, "
                               "sku VARCHAR(64)"),
        "422-duplicate_column": ddl("CREATE TABLE shop.orders (id INT PRIMARY KEY, id INT)"),
        "422-unsupported_type": ddl("CREATE TABLE shop.orders (id INT PRIMARY KEY, g GEOMETRY)"),
        "422-missing_database": ddl("CREATE TABLE orders (id INT PRIMARY KEY)"),
        "422-avro_name_collision": ddl("CREATE TABLE shop.orders (id INT PRIMARY KEY, "
                                       "`a_b` INT, `a-b` INT)"),
        "422-invalid_default": ddl("CREATE TABLE shop.orders (id INT PRIMARY KEY, "
                                   "n INT DEFAULT 'x')"),
        "422-limit_exceeded": ddl(f"CREATE TABLE shop.orders (id INT PRIMARY KEY, {'c' * 65} "
                                  "INT)"),
        "422-invalid_topic_rule": client.post("/v1/tables/check", json={
            "ddl": ORDERS_DDL, "topic": "tidb_{table}_{schema}"}),
        "422-invalid_version": client.get(
            "/v1/subjects/tidb_shop_orders-value/versions/2147483648"),
        "422-invalid_records": client.post("/v1/topics/tidb_shop_orders/encode", json={
            "records": [{"op": "insert", "row": row}]}),
        "422-invalid_messages": client.post("/v1/decode", json={
            "messages": [{"key": "AAAA", "value": None}]}),
        "422-unconvertible_messages": client.post("/v1/convert/canal-json", json={
            "messages": [{"value": json.dumps(canal)}]}),
        "409-incompatible_schema": client.post("/v1/tables/register", json={
            "ddl": ORDERS_DDL.replace("note TEXT", "note TEXT, qty INT NOT NULL")}),
        "409-topic_bound_to_other_table": client.post("/v1/tables/register", json={
            "ddl": ORDERS_DDL.replace("shop.orders", "shop.refunds"),
            "topic": "tidb_shop_orders"}),
        "404-subject_not_found": client.get("/v1/subjects/nope-value/versions"),
        "404-version_not_found": client.get("/v1/subjects/tidb_shop_orders-value/versions/7"),
        "404-not_found": client.get("/v1/nope"),
        "405-method_not_allowed": client.post("/v1/subjects"),
        "413-body_too_large": client.post(generate, content=b" " * ((16 << 20) + 1),
                                          headers=JSON),
        "415-unsupported_media_type": client.post(generate, content=b"{}",
                                                  headers={"content-type": "text/plain"}),
    }
    value = "/v1/subjects/tidb_shop_orders-value"  # deletes last, in this order
    answers["404-subject_config_not_found"] = client.delete(f"{value}/compatibility")
    answers["404-subject_mode_not_found"] = client.delete(f"{value}/mode")
    answers["422-operation_not_permitted"] = client.put("/v1/mode", json={"mode": "IMPORT"})
    answers["404-subject_not_soft_deleted"] = client.delete(f"{value}?permanent=true")
    answers["404-version_not_soft_deleted"] = client.delete(f"{value}/versions/1?permanent=true")
    assert client.delete(value).status_code == 200
    answers["404-subject_soft_deleted"] = client.delete(value)
    answers["404-version_soft_deleted"] = client.delete(f"{value}/versions/1")
    _same_as_documented(answers)
    documented = set(document()["components"]["examples"])
    assert documented - set(answers) == REPLAYED_ELSEWHERE | NOT_REPLAYED


def test_documented_answers_to_keys_and_modes(make_client: ClientFactory,
                                              tmp_path: Path) -> None:
    keyed = make_client(api_keys=KEY)
    read_only = make_client(registry_db_path=str(tmp_path / "read-only.sqlite"))
    assert read_only.put("/registry/mode", json={"mode": "READONLY"}).status_code == 200
    _same_as_documented({
        "401-unauthorized": keyed.post("/v1/tables/register", json={"ddl": ORDERS_DDL}),
        "401-unauthorized_WriteKeyRequiredError": keyed.post("/v1/convert/simple", json={
            "register": True, "messages": [{"value": "{}"}]}),
        "422-registry_read_only": read_only.post("/v1/tables/register",
                                                 json={"ddl": ORDERS_DDL}),
    })


def _answering(status: int, code: int, message: str) -> Starlette:
    async def answer(request: Any) -> JSONResponse:
        return JSONResponse({"error_code": code, "message": message}, status_code=status)

    return Starlette(routes=[Route("/{path:path}", answer, methods=["GET", "POST", "PUT"])])


def test_documented_answers_of_a_registry_in_trouble(make_client: ClientFactory) -> None:
    down = f"http://127.0.0.1:{free_port()}"
    gone = make_client(registry_url=down, registry_retry_budget=0.2,
                       registry_breaker_failures=100)  # closed: no retry_after to vary
    _same_as_documented({
        "503-registry_unavailable": gone.post("/v1/tables/check", json={"ddl": ORDERS_DDL}),
        "503-not_ready": gone.get("/readyz")}, registry=down)
    with serving(_answering(500, 50001, "Error in the backend data store")) as registry:
        failing = make_client(registry_url=registry.url, registry_retry_budget=0.2)
        _same_as_documented({"502-registry_server_error": failing.post(
            "/v1/tables/check", json={"ddl": ORDERS_DDL})})
    denied = "User is denied operation Write on Subject: tidb_shop_orders-value"
    with serving(_answering(403, 40301, denied)) as registry:
        refusing = make_client(registry_url=registry.url, registry_retry_budget=0.2)
        _same_as_documented({"422-registry_error": refusing.post(
            "/v1/tables/register", json={"ddl": ORDERS_DDL})})
    with serving(_answering(401, 40101, "Unauthorized")) as registry:
        locked = make_client(registry_url=registry.url, registry_retry_budget=0.2)
        _same_as_documented({"502-registry_unauthorized": locked.post(
            "/v1/tables/register", json={"ddl": ORDERS_DDL})}, registry=registry.url)
    with serving(_answering(404, 0, "Operation not supported.")) as registry:  # Apicurio 2.6
        lacking = make_client(registry_url=registry.url, registry_retry_budget=0.2)
        _same_as_documented({"502-registry_unsupported": lacking.put(
            "/v1/mode", json={"mode": "READWRITE"})}, registry=registry.url)
