"""A real single-node KRaft broker (deploy/kafka/kafka.sh) on free loopback ports, one per
test session, for the Spark and bridge tests; started on first use. It fails loudly when
Kafka's jars are missing; nothing is skipped."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.registry.conftest import free_port

ROOT = Path(__file__).resolve().parents[1]
KAFKA_SH = ROOT / "deploy" / "kafka" / "kafka.sh"


class Broker:
    """A running broker: its bootstrap address and data directory."""

    def __init__(self, data: Path, sasl: tuple[str, str] | None = None) -> None:
        """Start a broker in `data`; with `sasl` (user, password) also a SASL_PLAINTEXT
        listener (PLAIN) at `sasl_bootstrap`."""
        self.data, self.sasl = data, sasl
        self.port, self.controller = free_port(), free_port()
        self.sasl_port = free_port() if sasl else None
        self.bootstrap = f"127.0.0.1:{self.port}"
        self.sasl_bootstrap = f"127.0.0.1:{self.sasl_port}"
        self.start()

    def start(self) -> None:
        """Start (or restart) the broker on its ports and data directory."""
        env = dict(os.environ)
        if self.sasl:
            env.update(KAFKA_SASL_PORT=str(self.sasl_port), KAFKA_SASL_USER=self.sasl[0],
                       KAFKA_SASL_PASSWORD=self.sasl[1])
        done = subprocess.run([str(KAFKA_SH), "start", str(self.data), str(self.port),
                               str(self.controller)], capture_output=True, text=True,
                              timeout=300, check=False, env=env)
        assert done.returncode == 0, f"the Kafka broker did not start:\n{done.stderr[-3000:]}"

    def kill(self) -> None:
        """SIGKILL the broker (a crash, not a clean stop) and wait until it is gone."""
        pid = int((self.data / "kafka.pid").read_text())
        os.kill(pid, signal.SIGKILL)
        while _alive(pid):
            time.sleep(0.1)

    def stop(self) -> None:
        subprocess.run([str(KAFKA_SH), "stop", str(self.data)], timeout=120, check=True)


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status


@pytest.fixture(scope="session")
def kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    broker = Broker(tmp_path_factory.mktemp("kafka"))
    yield broker
    broker.stop()
