"""`flatavro bridge` checks its registry URL before it touches Kafka: a URL without a Confluent
API (a flatavro service's root instead of its /registry) is one line naming the fix, exit 2."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from service.api.app import create_app
from service.api.settings import Settings
from tests.cli.test_schema_cmd import FLATAVRO
from tests.support.harness import ServedApp, free_port


@pytest.fixture
def service(tmp_path: Path) -> Iterator[ServedApp]:
    settings = Settings(registry_db_path=str(tmp_path / "r.sqlite"), log_level="WARNING")
    served = ServedApp(create_app(settings), health_path="/healthz", lifespan="on").start()
    yield served
    served.stop()


def bridge(registry_url: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLATAVRO_")}
    # A port nothing listens on: the check must come before any Kafka call.
    return subprocess.run(
        [str(FLATAVRO), "bridge", "--protocol", "canal-json", "--source-topic", "t",
         "--bootstrap-servers", f"127.0.0.1:{free_port()}", "--registry-url", registry_url,
         "--dead-letter-topic", "t_dlt", "--create-topics", "--exit-when-idle", "1"],
        env=env, capture_output=True, text=True, timeout=60, check=False)


def test_a_service_root_instead_of_its_registry_is_refused_before_kafka(
        service: ServedApp) -> None:
    done = bridge(service.url)
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith("flatavro: error [registry_unsupported]: ")
    assert service.url in line and "flatavro serve: .../registry" in line
    assert "GET /schemas/types" in line
