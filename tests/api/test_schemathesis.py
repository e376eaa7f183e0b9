"""Schemathesis against the served service: every operation of the OpenAPI document, with
every registered check (schema-conforming and schema-violating requests), a fixed seed and a
bounded number of examples, so the run is the same each time and fits in the suite."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, settings
from schemathesis.checks import CHECKS, load_all_checks
from schemathesis.config import SchemathesisConfig
from schemathesis.openapi.loaders import from_dict

from service.api.app import create_app
from service.api.settings import Settings
from tests.support.api import KEY
from tests.support.harness import ServedApp

EXAMPLES_PER_OPERATION = 100  # 17 operations: about a minute on 2 cores
KEYED_EXAMPLES_PER_OPERATION = 30  # the keyed run: ~15 s more
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


@schema.parametrize()
@settings(max_examples=EXAMPLES_PER_OPERATION, derandomize=True, deadline=None,
          database=None, phases=[Phase.explicit, Phase.generate],
          suppress_health_check=list(HealthCheck))
def test_the_service_keeps_its_document(case: schemathesis.Case, service: ServedApp) -> None:
    case.call_and_validate(base_url=service.url, checks=ALL_CHECKS)


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


@keyed_schema.parametrize()
@settings(max_examples=KEYED_EXAMPLES_PER_OPERATION, derandomize=True, deadline=None,
          database=None, phases=[Phase.explicit, Phase.generate],
          suppress_health_check=list(HealthCheck))
def test_the_keyed_service_keeps_its_document(case: schemathesis.Case,
                                              keyed_service: ServedApp) -> None:
    case.call_and_validate(base_url=keyed_service.url, checks=ALL_CHECKS,
                           headers={"Authorization": f"Bearer {KEY}"})
