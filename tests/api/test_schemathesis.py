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
from schemathesis.checks import CHECKS, load_all_checks
from schemathesis.config import SchemathesisConfig
from schemathesis.core.errors import InvalidSchema
from schemathesis.openapi.loaders import from_dict
from schemathesis.schemas import APIOperation

from service.api.app import create_app
from service.api.settings import Settings
from tests.support.api import KEY
from tests.support.harness import ServedApp
from tests.support.operations import operation_params, run_operation

EXAMPLES_PER_OPERATION = 100  # 29 operations
KEYED_EXAMPLES_PER_OPERATION = 30  # the keyed run
load_all_checks()
ALL_CHECKS = [c for c in CHECKS.get_all() if callable(c) and not isinstance(c, type)]


# positive_data_acceptance: 422 is the documented answer to a body that fits the document
# but not the facts it cannot state (a DDL that does not parse, a value that does not fit its
# column, a message that is not Confluent-framed, a table given neither as `table` nor `ddl`).
# Every other status still fails the check.
CONFIG = SchemathesisConfig.from_dict({"checks": {"positive_data_acceptance": {
    "expected-statuses": ["2xx", "401", "403", "404", "409", "422", "429", "5xx"]}}})
# The document the served app answers at /openapi.json (same settings: the defaults).
schema = from_dict(create_app(Settings.model_construct()).openapi(), config=CONFIG)


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


# With FLATAVRO_API_KEYS the document declares security on writes: the same checks with a
# valid key, and `ignored_auth` then replays each accepted request without it (or with a
# wrong one) and expects 401. The key goes as a Bearer token so that the replay replaces it
# (X-API-Key would stay next to the garbled Authorization and rightly be accepted).
keyed_schema = from_dict(create_app(Settings.model_construct(api_keys=[KEY])).openapi(),
                         config=CONFIG)


@pytest.fixture(scope="module")
def keyed_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedApp]:
    path = tmp_path_factory.mktemp("schemathesis-keyed") / "registry.sqlite"
    settings_ = Settings(registry_db_path=str(path), log_level="WARNING", api_keys=KEY)
    app = ServedApp(create_app(settings_), health_path="/healthz", lifespan="on").start()
    yield app
    app.stop()


@pytest.mark.parametrize("operation", operation_params(keyed_schema))
def test_the_keyed_service_keeps_its_document(operation: APIOperation,
                                              keyed_service: ServedApp) -> None:
    @settings(max_examples=KEYED_EXAMPLES_PER_OPERATION, derandomize=True, deadline=None,
              database=None, phases=[Phase.explicit, Phase.generate],
              suppress_health_check=list(HealthCheck))
    def check(case: schemathesis.Case) -> None:
        case.call_and_validate(base_url=keyed_service.url, checks=ALL_CHECKS,
                               headers={"Authorization": f"Bearer {KEY}"})

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
