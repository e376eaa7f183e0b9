"""Real parts, started on first use, one per test session unless a test needs its own: a
single-node KRaft broker (deploy/kafka/kafka.sh) for the Spark and bridge tests, Apicurio
Registry (deploy/apicurio/apicurio.sh) and a `flatavro serve` as external registries, and a
local Spark session. Each fails loudly when its part is missing; nothing is skipped."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.harness import free_port

ROOT = Path(__file__).resolve().parents[1]
FAST_TIER = "FLATAVRO_FAST_TIER"
"""Set by `make check`: a test that starts a JVM, a broker or a browser then fails at once,
naming the marker it lacks (so a new test cannot slip into the fast tier by mistake)."""
_FIXTURE_MARKS = {"kafka": "kafka", "spark": "spark", "apicurio": "apicurio"}
_FOLDER_MARKS = {"spark": "spark", "bridge": "kafka"}
_FILE_MARKS = {"test_docs_browser.py": "browser", "test_fetch.py": "maven",
               "test_readme_quickstart.py": "apicurio", "test_kafka_settings.py": None,
               "test_evolution_plan.py": None}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test with the real parts it needs, from its fixtures, folder and file:
    `kafka` (a broker), `spark` (a Spark session or job), `apicurio` (Apicurio's JVM),
    `browser` (headless Chromium), `maven` (Maven Central). `make check` runs the rest."""
    for item in items:
        path = Path(str(item.fspath))
        marks = {_FIXTURE_MARKS[f] for f in getattr(item, "fixturenames", ())
                 if f in _FIXTURE_MARKS}
        callspec = getattr(item, "callspec", None)
        if callspec is not None and callspec.params.get("registry") == "apicurio":
            marks.add("apicurio")
        if path.name in _FILE_MARKS:
            marks |= {_FILE_MARKS[path.name]} - {None}
            if _FILE_MARKS[path.name] is None:
                marks.discard(_FOLDER_MARKS.get(path.parent.name, ""))
        elif path.parent.name in _FOLDER_MARKS:
            marks.add(_FOLDER_MARKS[path.parent.name])
        for mark in sorted(marks):
            item.add_marker(mark)


def _not_in_fast_tier(part: str, marker: str) -> None:
    if os.environ.get(FAST_TIER):
        pytest.fail(f"this test starts {part}, which `make check` does not run: mark it "
                    f"`{marker}` (tests/conftest.py marks by fixture, folder and file)")


KAFKA_SH = ROOT / "deploy" / "kafka" / "kafka.sh"
APICURIO_SH = ROOT / "deploy" / "apicurio" / "apicurio.sh"
FLATAVRO = ROOT / ".venv" / "bin" / "flatavro"


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
        _not_in_fast_tier("a Kafka broker", "kafka")
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


class ExternalRegistry:
    """A Confluent-API registry in its own process, over a real socket: `url` is the root
    of its Confluent API, `name` what the suite calls it."""

    name = "registry"

    def __init__(self, data: Path) -> None:
        self.data = data
        self.port = free_port()

    @property
    def url(self) -> str:
        raise NotImplementedError

    def http(self, **auth: object) -> httpx.Client:
        """A client of the registry's Confluent API (for a test's own set-up and checks)."""
        return httpx.Client(base_url=self.url + "/", timeout=30, **auth)  # type: ignore[arg-type]

    def stop(self) -> None:
        raise NotImplementedError


class Apicurio(ExternalRegistry):
    """Apicurio Registry 2.6 (in-memory storage) at ``/apis/ccompat/v7``."""

    name = "apicurio"

    def __init__(self, data: Path, *, options: str = "") -> None:
        _not_in_fast_tier("Apicurio Registry", "apicurio")
        super().__init__(data)
        env = {**os.environ, "APICURIO_OPTS": options}
        done = subprocess.run([str(APICURIO_SH), "start", str(data), str(self.port)],
                              capture_output=True, text=True, timeout=300, check=False, env=env)
        assert done.returncode == 0, f"Apicurio did not start:\n{done.stderr[-3000:]}"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/apis/ccompat/v7"

    def stop(self) -> None:
        subprocess.run([str(APICURIO_SH), "stop", str(self.data)], timeout=60, check=True)


class FlatavroRegistry(ExternalRegistry):
    """flatavro's embedded registry served by another `flatavro serve` (``/registry``);
    `env` adds settings (API keys, say)."""

    name = "flatavro"

    def __init__(self, data: Path, **env: str) -> None:
        super().__init__(data)
        settings = {"FLATAVRO_REGISTRY_DB_PATH": str(data / "registry.sqlite"),
                    "FLATAVRO_LOG_LEVEL": "WARNING", **env}
        environ = {k: v for k, v in os.environ.items() if not k.startswith("FLATAVRO_")}
        self.log = (data / "serve.log").open("w")
        self.process = subprocess.Popen(
            [str(FLATAVRO), "serve", "--host", "127.0.0.1", "--port", str(self.port)],
            env={**environ, **settings}, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert self.process.poll() is None, \
                f"flatavro serve exited: {(data / 'serve.log').read_text()[-2000:]}"
            try:
                httpx.get(f"http://127.0.0.1:{self.port}/healthz", timeout=1)
                return
            except httpx.TransportError:
                time.sleep(0.1)
        raise AssertionError("flatavro serve did not answer within 60 s")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/registry"

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


@pytest.fixture(scope="session")
def apicurio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Apicurio]:
    """One Apicurio for the session: tests use subjects of their own."""
    registry = Apicurio(tmp_path_factory.mktemp("apicurio"))
    yield registry
    registry.stop()


@pytest.fixture(scope="session")
def flatavro_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FlatavroRegistry]:
    """One `flatavro serve` as a registry for the session: tests use subjects of their own."""
    registry = FlatavroRegistry(tmp_path_factory.mktemp("flatavro-registry"))
    yield registry
    registry.stop()


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """One local[2] Spark session with the Maven-cache jars for the test session."""
    _not_in_fast_tier("a Spark session", "spark")
    from spark_jobs.session import build_session

    session = build_session("flatavro-tests", "local[2]")
    yield session
    session.stop()
