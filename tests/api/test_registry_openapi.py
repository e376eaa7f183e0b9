"""The embedded registry's OpenAPI document: the committed file in sync, every route of the
registry's REST app documented (and nothing it does not serve), writes marked as the API-key
guard protects them (and the service's own writes marked alike), every example replayed
against a real registry, and Schemathesis finding no answer the document does not declare."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, Phase, settings
from schemathesis.checks import CHECKS, load_all_checks
from schemathesis.config import SchemathesisConfig
from schemathesis.openapi.loaders import from_dict
from schemathesis.schemas import APIOperation

from service.api.app import create_app
from service.api.docs.openapi_file import REGISTRY_PATH, registry_document, render
from service.api.docs.openapi_file import document as service_document
from service.api.docs.registry_examples import KEY_SUBJECT, OTHER_SUBJECT, SUBJECT
from service.api.docs.registry_openapi import CONTENT_TYPE, TAGS, WRITE, document
from service.api.docs.registry_operations import OPERATIONS
from service.api.docs.spec import AuthDoc
from service.api.settings import Settings
from service.registry.embedded.registry import EmbeddedRegistry
from service.registry.embedded.rest import create_registry_app
from tests.support.api import KEY, ClientFactory
from tests.support.harness import ServedApp
from tests.support.hypothesis_profile import examples
from tests.support.operations import operation_params, run_operation

ROOT = Path(__file__).resolve().parents[2]
NO_KEYS = AuthDoc(keys=False, protect_reads=False)
KEYS = AuthDoc(keys=True, protect_reads=False)
BOTH = [{"HTTPBearer": []}, {"APIKeyHeader": []}]
S, K, NONE = SUBJECT, KEY_SUBJECT, OTHER_SUBJECT


def operations(spec: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(method, path, op) for path, item in spec["paths"].items()
            for method, op in item.items()]


def served_routes() -> set[tuple[str, str]]:
    """(method, path template) of every route the registry's Starlette app serves."""
    registry = EmbeddedRegistry(":memory:")
    try:
        app = create_registry_app(registry)
        return {(method.lower(), re.sub(r"\{(\w+):\w+\}", r"{\1}", route.path))
                for route in app.routes for method in getattr(route, "methods", None) or ()
                if method != "HEAD"}  # Starlette adds HEAD to every GET route
    finally:
        registry.close()


def test_registry_file_is_in_sync_with_the_code() -> None:
    committed = (ROOT / REGISTRY_PATH).read_text(encoding="utf-8")
    assert json.loads(committed) == registry_document(), \
        "openapi/registry-openapi.json drifted: run `make openapi` and commit it"
    assert committed == render(registry_document())


def test_every_served_route_is_documented_and_nothing_else() -> None:
    documented = {(method, path) for method, path, _ in operations(document(NO_KEYS))}
    served = served_routes()
    assert served - documented == set(), "routes of rest.py missing from registry_openapi.py"
    assert documented - served == set(), "documented operations rest.py does not serve"
    assert len(documented) == len(OPERATIONS) == 29
    tested = [param.id for param in operation_params(from_dict(registry_document()))]
    assert sorted(tested) == sorted(f"{m.upper()} {p}" for m, p in documented)


def _resolve(spec: dict[str, Any], ref: str) -> Any:
    node: Any = spec
    for part in ref.removeprefix("#/").split("/"):
        node = node[part]
    return node


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        own = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return own + [r for value in node.values() for r in _refs(value)]
    if isinstance(node, list):
        return [r for value in node for r in _refs(value)]
    return []


def test_every_operation_is_described_and_every_reference_resolves() -> None:
    spec = document(KEYS)
    ids = [op["operationId"] for _, _, op in operations(spec)]
    assert len(ids) == len(set(ids))
    tags = {t["name"] for t in TAGS}
    for method, path, op in operations(spec):
        assert op["summary"] and op["description"] and op["responses"], op["operationId"]
        assert len(op["tags"]) == 1 and op["tags"][0] in tags, op["operationId"]
        declared = {_resolve(spec, p["$ref"])["name"] for p in op.get("parameters", [])
                    if _resolve(spec, p["$ref"])["in"] == "path"}
        assert declared == set(re.findall(r"\{(\w+)\}", path)), op["operationId"]
        assert ("requestBody" in op) == (method in ("post", "put")), op["operationId"]
    for ref in _refs(spec):
        assert _resolve(spec, ref) is not None, ref
    assert spec["servers"] == [{"url": "/registry", "description": "mounted on this service"}]


def test_every_error_is_a_confluent_body_of_its_status() -> None:
    spec = document(KEYS)
    for _, _, op in operations(spec):
        for status, response in op["responses"].items():
            if status == "200":
                continue
            ((media, content),) = response["content"].items()
            for example in content["examples"].values():
                body = _resolve(spec, example["$ref"])["value"]
                if status == "413":  # the service's limit, in front of the registry
                    assert (media, body["status"]) == ("application/problem+json", 413)
                else:
                    assert set(body) == {"error_code", "message"}, example
                    assert str(body["error_code"])[:3] == status, example


def _concrete(path: str) -> str:
    return path.replace("{subject}", S).replace("{version}", "1").replace("{id}", "1")


def test_writes_are_marked_exactly_where_the_key_guard_asks_for_a_key(
        make_client: ClientFactory) -> None:
    keyed = make_client(api_keys=KEY)
    for method, path, op in operations(document(KEYS)):
        answer = keyed.request(method.upper(), "/registry" + _concrete(path), json={})
        needs_key = answer.status_code == 401
        assert op["summary"].startswith(WRITE) == needs_key, (method, path)
        assert op["description"].startswith("**Changes the registry**") == needs_key
        assert (op.get("security") == BOTH) == needs_key, (method, path)
        assert ("401" in op["responses"]) == needs_key, (method, path)


def test_the_service_document_marks_its_writes_the_same_way() -> None:
    keyed = create_app(Settings.model_construct(api_keys=["k"])).openapi()
    needing = {op["operationId"] for _, _, op in operations(keyed) if op.get("security") == BOTH}
    marked = {op["operationId"] for _, _, op in operations(service_document())
              if op["summary"].startswith(WRITE)
              and op["description"].startswith("**Changes the registry**")}
    assert marked == needing and "deleteTopic" in marked


def test_security_follows_the_key_settings() -> None:
    plain = document(NO_KEYS)
    assert "securitySchemes" not in plain["components"]
    assert all("security" not in op for _, _, op in operations(plain))
    every = document(AuthDoc(keys=True, protect_reads=True))
    assert all(op["security"] == BOTH for _, _, op in operations(every))


def test_the_service_serves_the_document_and_the_page_offers_both(client: TestClient) -> None:
    assert client.get("/openapi-registry.json").json() == document(NO_KEYS)
    page = client.get("/docs").text
    assert re.findall(r'<option value="(\w+)">', page) == ["flatavro", "registry"]
    assert "/openapi-registry.json" in client.get("/openapi.json").json()["info"]["description"]


def test_with_a_remote_registry_neither_document_nor_option() -> None:
    remote = TestClient(create_app(Settings.model_construct(registry_url="http://r:8081")))
    assert remote.get("/openapi-registry.json").status_code == 404
    assert re.findall(r'<option value="(\w+)">', remote.get("/docs").text) == ["flatavro"]
    assert "/openapi-registry.json" not in remote.get("/openapi.json").json()["info"][
        "description"]


# The story the examples tell (service/api/docs/registry_examples.py), in order: the answer's
# example name (None: a step of the story whose answer is not an example, expected 200), the
# request, the request example's name, the query.
STORY: list[tuple[str | None, str, str, str | None, dict[str, str]]] = [
    ("200-root", "GET", "/", None, {}),
    ("200-schema_types", "GET", "/schemas/types", None, {}),
    ("200-registered", "POST", f"/subjects/{S}/versions", "schema_v1", {}),
    (None, "POST", f"/subjects/{S}/versions", "schema_v2", {}),
    (None, "POST", f"/subjects/{K}/versions", "schema_key", {}),
    ("409-incompatible_schema", "POST", f"/subjects/{S}/versions", "schema_incompatible", {}),
    ("422-invalid_schema", "POST", f"/subjects/{S}/versions", "schema_bad_default", {}),
    ("422-missing_reference", "POST", f"/subjects/{S}/versions", "schema_missing_reference",
     {}),
    ("422-unsupported_schema_type", "POST", f"/subjects/{S}/versions", "schema_protobuf", {}),
    ("200-schemas", "GET", "/schemas", None, {}),
    ("200-schemas_latest", "GET", "/schemas", None,
     {"subjectPrefix": "tidb_shop_orders-v", "latestOnly": "true"}),
    ("422-invalid_offset", "GET", "/schemas", None, {"offset": "-1"}),
    ("200-schema_by_id", "GET", "/schemas/ids/1", None, {}),
    ("200-schema_text", "GET", "/schemas/ids/1/schema", None, {}),
    ("404-schema_not_found", "GET", "/schemas/ids/99", None, {}),
    ("200-id_subjects", "GET", "/schemas/ids/1/subjects", None, {}),
    ("200-id_versions", "GET", "/schemas/ids/1/versions", None, {}),
    ("200-subjects", "GET", "/subjects", None, {}),
    ("200-subjects_prefix", "GET", "/subjects", None, {"subjectPrefix": "tidb_shop_orders-v"}),
    ("200-found", "POST", f"/subjects/{S}", "schema_v1", {}),
    ("404-schema_not_in_subject", "POST", f"/subjects/{S}", "schema_incompatible", {}),
    ("404-subject_not_found", "POST", f"/subjects/{NONE}", "schema_v1", {}),
    ("200-versions", "GET", f"/subjects/{S}/versions", None, {}),
    ("200-version", "GET", f"/subjects/{S}/versions/2", None, {}),
    ("404-version_not_found", "GET", f"/subjects/{S}/versions/7", None, {}),
    ("422-invalid_version", "GET", f"/subjects/{S}/versions/0", None, {}),
    ("200-version_schema", "GET", f"/subjects/{S}/versions/latest/schema", None, {}),
    ("200-referenced_by", "GET", f"/subjects/{S}/versions/1/referencedby", None, {}),
    ("200-incompatible_verbose", "POST", f"/compatibility/subjects/{S}/versions/latest",
     "schema_incompatible", {"verbose": "true"}),
    ("200-compatible", "POST", f"/compatibility/subjects/{S}/versions/latest", "schema_v2",
     {}),
    ("200-compatible", "POST", f"/compatibility/subjects/{S}/versions", "schema_v2", {}),
    ("200-incompatible_verbose", "POST", f"/compatibility/subjects/{S}/versions",
     "schema_incompatible", {"verbose": "true"}),
    ("200-level", "GET", "/config", None, {}),
    ("200-level_set", "PUT", "/config", "level_full", {}),
    ("422-invalid_level", "PUT", "/config", "level_invalid", {}),
    ("200-level_removed", "DELETE", "/config", None, {}),
    ("404-subject_level_not_found", "GET", f"/config/{S}", None, {}),
    ("200-level", "GET", f"/config/{S}", None, {"defaultToGlobal": "true"}),
    ("200-subject_level_set", "PUT", f"/config/{S}", "level_none", {}),
    ("422-invalid_level", "PUT", f"/config/{S}", "level_invalid", {}),
    ("200-subject_level", "GET", f"/config/{S}", None, {}),
    ("200-subject_level_removed", "DELETE", f"/config/{S}", None, {}),
    ("200-mode", "GET", "/mode", None, {}),
    ("422-import_needs_empty", "PUT", "/mode", "mode_import", {}),
    ("422-invalid_mode", "PUT", "/mode", "mode_invalid", {}),
    ("404-subject_mode_not_found", "GET", f"/mode/{S}", None, {}),
    ("200-mode", "GET", f"/mode/{S}", None, {"defaultToGlobal": "true"}),
    ("200-mode_set", "PUT", f"/mode/{S}", "mode_readonly", {}),
    ("422-invalid_mode", "PUT", f"/mode/{S}", "mode_invalid", {}),
    ("422-read_only", "POST", f"/subjects/{S}/versions", "schema_incompatible", {}),
    ("200-mode_removed", "DELETE", f"/mode/{S}", None, {}),
    ("200-version_deleted", "DELETE", f"/subjects/{S}/versions/2", None, {}),
    ("404-version_soft_deleted", "DELETE", f"/subjects/{S}/versions/2", None, {}),
    ("404-version_not_soft_deleted", "DELETE", f"/subjects/{S}/versions/1", None,
     {"permanent": "true"}),
    ("200-versions_deleted_only", "GET", f"/subjects/{S}/versions", None,
     {"deletedOnly": "true"}),
    ("200-versions_deleted", "GET", f"/subjects/{S}/versions", None, {"deleted": "true"}),
    ("404-subject_not_soft_deleted", "DELETE", f"/subjects/{K}", None, {"permanent": "true"}),
    ("200-subject_deleted", "DELETE", f"/subjects/{S}", None, {}),
    ("404-subject_soft_deleted", "DELETE", f"/subjects/{S}", None, {}),
    ("200-subjects_deleted_only", "GET", "/subjects", None, {"deletedOnly": "true"}),
    ("200-found", "POST", f"/subjects/{S}", "schema_v1", {"deleted": "true"}),
    ("200-subject_purged", "DELETE", f"/subjects/{S}", None, {"permanent": "true"}),
    ("200-mode_import", "PUT", "/mode", "mode_import", {"force": "true"}),
    ("422-import_needs_id", "POST", f"/subjects/{S}/versions", "schema_v2", {}),
    ("200-imported", "POST", f"/subjects/{S}/versions", "import_v1", {}),
]


def _operation_at(spec: dict[str, Any], method: str, path: str) -> dict[str, Any]:
    (found,) = [op for template, item in spec["paths"].items() for m, op in item.items()
                if m == method.lower()
                and re.fullmatch(re.sub(r"\{\w+\}", "[^/]+", template), path)]
    return found


def _check(spec: dict[str, Any], name: str, op: dict[str, Any], answer: httpx.Response
           ) -> None:
    """`answer` is the example `name`, documented on `op` with the media type answered."""
    status = name[:3]
    content = op["responses"][status]["content"]
    assert answer.headers["content-type"].split(";")[0] in content, name
    ((media,),) = [tuple(content)]
    refs = [e["$ref"] for e in content[media]["examples"].values()]
    assert f"#/components/examples/{name}" in refs, (op["operationId"], name)
    expected = spec["components"]["examples"][name]["value"]
    assert (answer.status_code, answer.json()) == (int(status), expected), name


def test_every_documented_example_is_what_the_registry_answers(client: TestClient) -> None:
    spec = json.loads((ROOT / REGISTRY_PATH).read_text(encoding="utf-8"))
    examples = spec["components"]["examples"]
    replayed, sent = set(), set()
    for name, method, path, request, params in STORY:
        op = _operation_at(spec, method, path)
        body = examples[f"request-{request}"]["value"] if request else None
        if request:
            assert f"#/components/examples/request-{request}" in _refs(op["requestBody"]), \
                (op["operationId"], request)
            sent.add((op["operationId"], request))
        answer = client.request(method, "/registry" + path, json=body, params=params)
        if name is None:
            assert answer.status_code == 200, answer.text
            continue
        _check(spec, name, op, answer)
        replayed.add(name)
    register = _operation_at(spec, "POST", f"/subjects/{S}/versions")
    raw = {"content-type": CONTENT_TYPE}
    for name, content in (("400-invalid_json", b'{"schema": "\\"string\\"",}'),
                          ("413-body_too_large", b" " * ((16 << 20) + 1))):
        _check(spec, name, register, client.post(f"/registry/subjects/{S}/versions",
                                                 content=content, headers=raw))
        replayed.add(name)
    assert replayed == {n for n in examples if not n.startswith("request-")}
    listed = {(op["operationId"], ref.rsplit("request-", 1)[1])
              for _, _, op in operations(spec) for ref in _refs(op.get("requestBody", {}))
              if "/examples/" in ref}
    assert listed == sent, "request examples no step of the story sends"


def test_the_documented_401_is_what_a_write_without_a_key_gets(
        make_client: ClientFactory) -> None:
    spec = document(KEYS)
    op = _operation_at(spec, "PUT", "/config")
    answer = make_client(api_keys=KEY).put("/registry/config", json={"compatibility": "FULL"})
    _check(spec, "401-unauthorized", op, answer)


# Requests that fit the document, and every check of the answers. A request that fits may
# still name a subject, version or id that does not exist (404), be refused by a level (409)
# or carry a schema that is not Avro (422). Requests that do not fit are left out: like
# Confluent's, the registry reads any flag that is not `true` as false, and lets a subject
# hold a slash, so what such requests get is Confluent's leniency, not a contract.
load_all_checks()
CHECKS_RUN = [c for c in CHECKS.get_all() if callable(c) and not isinstance(c, type)
              and c.__name__ not in {"negative_data_rejection", "missing_required_header",
                                     "unsupported_method", "allow_header_conformance"}]
CONFIG = SchemathesisConfig.from_dict({
    "generation": {"mode": "positive"},
    "checks": {"positive_data_acceptance": {"expected-statuses": ["2xx", "404", "409",
                                                                  "422"]}}})
EXAMPLES_PER_OPERATION = examples(25)  # 29 operations: about 10 s on 2 cores
registry_schema = from_dict(registry_document(), config=CONFIG)


@pytest.fixture(scope="module")
def registry_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedApp]:
    path = tmp_path_factory.mktemp("registry-schemathesis") / "registry.sqlite"
    app = ServedApp(create_app(Settings(registry_db_path=str(path), log_level="WARNING")),
                    health_path="/healthz", lifespan="on").start()
    yield app
    app.stop()


# One test per operation (tests/support/operations.py: `schema.parametrize()` gives them one
# node id, and xdist ran one of them).
@pytest.mark.parametrize("operation", operation_params(registry_schema))
def test_the_registry_keeps_its_document(operation: APIOperation,
                                         registry_service: ServedApp) -> None:
    @settings(max_examples=EXAMPLES_PER_OPERATION, derandomize=True, deadline=None,
              database=None, phases=[Phase.explicit, Phase.generate],
              suppress_health_check=list(HealthCheck))
    def check(case: schemathesis.Case) -> None:
        case.call_and_validate(base_url=registry_service.url + "/registry", checks=CHECKS_RUN)

    run_operation(operation, check)
