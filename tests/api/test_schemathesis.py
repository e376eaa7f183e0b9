"""Schemathesis against the served service: every operation of the OpenAPI document, with
every registered check (schema-conforming and schema-violating requests), a fixed seed and a
bounded number of examples, so the run is the same each time and fits in the suite. Each
operation is a test of its own (tests/support/operations.py: `schema.parametrize()` gives them
one node id, and xdist ran one of them)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, settings
from schemathesis.core.errors import InvalidSchema
from schemathesis.openapi.loaders import from_dict
from schemathesis.schemas import APIOperation

from service.api.app import create_app
from service.api.settings import Settings
from tests.support.harness import ServedApp
from tests.support.hypothesis_profile import examples
from tests.support.operations import ALL_CHECKS, SERVICE_CONFIG, operation_params, run_operation

from .test_schemathesis_keyed import keyed_schema

EXAMPLES_PER_OPERATION = examples(100)  # 29 operations
# The document the served app answers at /openapi.json (same settings: the defaults).
schema = from_dict(create_app(Settings.model_construct()).openapi(), config=SERVICE_CONFIG)


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedApp]:
    path = tmp_path_factory.mktemp("schemathesis") / "registry.sqlite"
    app = ServedApp(create_app(Settings(registry_db_path=str(path), log_level="WARNING")),
                    health_path="/healthz", lifespan="on").start()
    yield app
    app.stop()


@pytest.mark.parametrize("operation", operation_params(schema))
def test_the_service_keeps_its_document(operation: APIOperation, service: ServedApp) -> None:
    @settings(max_examples=EXAMPLES_PER_OPERATION, derandomize=True, deadline=None,
              database=None, phases=[Phase.explicit, Phase.generate],
              suppress_health_check=list(HealthCheck))
    def check(case: schemathesis.Case) -> None:
        case.call_and_validate(base_url=service.url, checks=ALL_CHECKS)

    run_operation(operation, check)


@pytest.mark.parametrize("document", [schema, keyed_schema], ids=["plain", "keyed"])
def test_every_operation_is_a_test_of_its_own(document: schemathesis.BaseSchema) -> None:
    ids = [param.id for param in operation_params(document)]
    assert ids == [f"{method.upper()} {path}" for path, item in document.raw_schema["paths"].items()
                   for method in item]
    assert len(set(ids)) == len(ids) == 29


INFO = {"openapi": "3.0.3", "info": {"title": "t", "version": "1"}}
OK = {"200": {"description": "ok"}}


def test_an_operation_that_does_not_load_is_a_failing_test() -> None:
    document = from_dict({**INFO, "paths": {
        "/fine": {"get": {"responses": OK}},
        "/broken": {"get": {"parameters": [{"$ref": "#/components/parameters/Gone"}],
                            "responses": OK}}}})
    fine, broken = operation_params(document)
    assert (fine.id, broken.id) == ("GET /fine", "GET /broken (invalid)")
    cases: list[schemathesis.Case] = []

    @settings(max_examples=3, derandomize=True, database=None)
    def check(case: schemathesis.Case) -> None:
        cases.append(case)

    run_operation(fine.values[0], check)
    assert cases and all(case.path == "/fine" for case in cases)
    with pytest.raises(InvalidSchema, match="Unresolvable reference"):
        run_operation(broken.values[0], check)


def test_a_document_without_operations_is_a_failing_test() -> None:
    (nothing,) = operation_params(from_dict({**INFO, "paths": {}}))
    with pytest.raises(pytest.fail.Exception, match="the document has no operations"):
        run_operation(nothing.values[0], lambda case: None)
