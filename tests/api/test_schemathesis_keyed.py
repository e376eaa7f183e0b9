"""Schemathesis against the service with API keys (FLATAVRO_API_KEYS): the same operations,
checks and seed as tests/api/test_schemathesis.py, in a file of its own so that the two
documents' runs can go to different pytest-xdist workers."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, settings
from schemathesis.openapi.loaders import from_dict
from schemathesis.schemas import APIOperation

from service.api.app import create_app
from service.api.settings import Settings
from tests.support.api import KEY
from tests.support.harness import ServedApp
from tests.support.hypothesis_profile import examples
from tests.support.operations import ALL_CHECKS, SERVICE_CONFIG, operation_params, run_operation

KEYED_EXAMPLES_PER_OPERATION = examples(30)  # 29 operations


# With FLATAVRO_API_KEYS the document declares security on writes: the same checks with a
# valid key, and `ignored_auth` then replays each accepted request without it (or with a
# wrong one) and expects 401. The key goes as a Bearer token so that the replay replaces it
# (X-API-Key would stay next to the garbled Authorization and rightly be accepted).
keyed_schema = from_dict(create_app(Settings.model_construct(api_keys=[KEY])).openapi(),
                         config=SERVICE_CONFIG)


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
