"""The OpenAPI document: generated file in sync, every operation documented and tagged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from service.api.openapi_file import DEFAULT_PATH, document, render
from service.cdc.catalog import Protocol

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
