"""A real single-node KRaft broker (deploy/kafka/kafka.sh) on free loopback ports, one per
test session, for the Spark and bridge tests; started on first use. It fails loudly when
Kafka's jars are missing; nothing is skipped."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.registry.conftest import free_port

ROOT = Path(__file__).resolve().parents[1]
KAFKA_SH = ROOT / "deploy" / "kafka" / "kafka.sh"


class Broker:
    """A running broker: its bootstrap address and data directory."""

    def __init__(self, data: Path) -> None:
        self.data = data
        self.port, controller = free_port(), free_port()
        done = subprocess.run([str(KAFKA_SH), "start", str(data), str(self.port),
                               str(controller)], capture_output=True, text=True, timeout=300,
                              check=False)
        assert done.returncode == 0, f"the Kafka broker did not start:\n{done.stderr[-3000:]}"
        self.bootstrap = f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        subprocess.run([str(KAFKA_SH), "stop", str(self.data)], timeout=120, check=True)


@pytest.fixture(scope="session")
def kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    broker = Broker(tmp_path_factory.mktemp("kafka"))
    yield broker
    broker.stop()
