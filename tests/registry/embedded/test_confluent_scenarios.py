"""Confluent's REST scenarios (tests/registry/data/confluent_scenarios.json), each run step by
step against a fresh embedded registry served by uvicorn on a real socket."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from service.registry.embedded.registry import EmbeddedRegistry
from tests.support.registry import ServedRegistry

DATA = json.loads((Path(__file__).parents[1] / "data" / "confluent_scenarios.json")
                  .read_text(encoding="utf-8"))
SCHEMAS: dict[str, dict[str, Any]] = DATA["schemas"]
SCENARIOS: list[dict[str, Any]] = DATA["scenarios"]
CT = {"Content-Type": "application/vnd.schemaregistry.v1+json"}


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[ServedRegistry]:
    registry = EmbeddedRegistry(tmp_path / "registry.sqlite")
    served = ServedRegistry(registry).start()
    yield served
    served.stop()
    registry.close()


def _sent(value: Any) -> Any:
    """``"@NAME"`` -> that schema's JSON as the string a client sends (with spaces)."""
    if isinstance(value, str) and value.startswith("@"):
        return json.dumps(SCHEMAS[value[1:]]["json"])
    if isinstance(value, dict):
        return {k: _sent(v) for k, v in value.items()}
    return value


def _expected(value: Any) -> Any:
    """``"#NAME"`` -> that schema's Java ``Schema.toString()`` text, written in the data."""
    if isinstance(value, str) and value.startswith("#") and value[1:] in SCHEMAS:
        return SCHEMAS[value[1:]]["java"]
    if isinstance(value, dict):
        return {k: _expected(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_expected(v) for v in value]
    return value


def _matches(expected: Any, actual: Any) -> bool:
    """Objects match as subsets (recursively), lists element-wise and of equal length."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            k in actual and _matches(v, actual[k]) for k, v in expected.items())
    if isinstance(expected, list):
        return isinstance(actual, list) and len(actual) == len(expected) and all(
            _matches(e, a) for e, a in zip(expected, actual, strict=True))
    return bool(expected == actual and type(expected) is type(actual))


def _run(served: ServedRegistry, step: dict[str, Any]) -> None:
    body = step.get("body")
    content = body if isinstance(body, str) else \
        None if body is None else json.dumps(_sent(body))
    response = served.http.request(step["method"], served.url + step["path"],
                                   content=content, headers=CT)
    where = f"{step['method']} {step['path']} -> {response.status_code} {response.text[:600]}"
    assert response.status_code == step["status"], where
    if "error_code" in step:
        payload = response.json()
        assert payload["error_code"] == step["error_code"], where
        assert isinstance(payload["message"], str) and payload["message"], where
    if "response" in step:
        assert _matches(_expected(step["response"]), response.json()), where
    for key in step.get("absent", ()):
        assert key not in response.json(), f"{key!r} present: {where}"
    if "text" in step:
        assert response.text == _expected(step["text"]), where
    texts = "\n".join(_strings(response.json()))
    for part in step.get("contains", ()):
        assert part in texts, f"{part!r} missing: {where}"


def _strings(value: Any) -> Iterator[str]:
    """Every string in a JSON document (messages, schema texts), unescaped."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s["name"] for s in SCENARIOS])
def test_confluent_scenario(fresh: ServedRegistry, scenario: dict[str, Any]) -> None:
    for step in scenario["steps"]:
        _run(fresh, step)


def test_the_transcription_is_substantial() -> None:
    steps = sum(len(s["steps"]) for s in SCENARIOS)
    assert len(SCENARIOS) >= 75 and steps >= 500
    assert len({s["name"] for s in SCENARIOS}) == len(SCENARIOS)
