"""The real parts the suites start: a Kafka broker (or a 3-node KRaft cluster), Apicurio and a
`flatavro serve` registry."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from tests.support.harness import free_port

ROOT = Path(__file__).resolve().parents[2]
FAST_TIER = "FLATAVRO_FAST_TIER"
"""Set by `make check`: a test that starts a JVM, a broker or a browser then fails at once,
naming the marker it lacks (so a new test cannot slip into the fast tier by mistake)."""


def not_in_fast_tier(part: str, marker: str) -> None:
    """Fail the test at once under `make check` (FAST_TIER set): it starts `part`."""
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
        not_in_fast_tier("a Kafka broker", "kafka")
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

    def restart(self, down_for: float) -> float:
        """Stop the broker cleanly, wait `down_for` seconds, start it; the seconds it was
        gone (from the stop's start until it answers again)."""
        began = time.monotonic()
        self.stop()
        time.sleep(down_for)
        self.start()
        return time.monotonic() - began


class BrokerCluster:
    """`nodes` combined broker+controller KRaft nodes (``kafka.sh start-cluster``): topics
    replicated to 3 with min ISR 2, the transaction log and offsets topic too; `bootstrap`
    lists every node. Nodes are numbered from 1."""

    def __init__(self, data: Path, nodes: int = 3) -> None:
        not_in_fast_tier("a Kafka cluster", "kafka")
        self.data, self.nodes = data, nodes
        self.base = _free_run(2 * nodes)
        done = subprocess.run([str(KAFKA_SH), "start-cluster", str(data), str(self.base),
                               str(nodes)], capture_output=True, text=True, timeout=600,
                              check=False)
        assert done.returncode == 0, f"the Kafka cluster did not start:\n{done.stderr[-3000:]}"
        self.bootstrap = done.stdout.strip().splitlines()[-1]

    def stop_node(self, node: int) -> None:
        """Stop node `node` cleanly (SIGTERM, a controlled shutdown)."""
        subprocess.run([str(KAFKA_SH), "stop-node", str(self.data), str(node)], timeout=120,
                       check=True)

    def start_node(self, node: int) -> None:
        """Start node `node` again; returns once it sees every node."""
        done = subprocess.run([str(KAFKA_SH), "start-node", str(self.data), str(node)],
                              capture_output=True, text=True, timeout=300, check=False)
        assert done.returncode == 0, f"node {node} did not start:\n{done.stderr[-3000:]}"

    def kill_node(self, node: int) -> None:
        """SIGKILL node `node` and wait until it is gone."""
        pid = int((self.data / f"node-{node}" / "kafka.pid").read_text())
        os.kill(pid, signal.SIGKILL)
        while _alive(pid):
            time.sleep(0.1)

    def wait_in_sync(self, timeout: float = 240) -> float:
        """Wait until every partition of every topic has all its replicas in sync (the
        restarted node back in every ISR); the seconds waited."""
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": self.bootstrap, "log_level": 0})
        began = time.monotonic()
        while True:
            try:
                topics = admin.list_topics(timeout=5).topics
                lagging = [f"{name}[{p.id}]" for name, topic in topics.items()
                           for p in topic.partitions.values()
                           if sorted(p.isrs) != sorted(p.replicas)]
            except Exception as exc:  # a node still starting: ask again
                lagging = [str(exc)]
            if not lagging:
                return time.monotonic() - began
            assert time.monotonic() - began < timeout, f"not in sync after {timeout} s: {lagging}"
            time.sleep(1)

    def stop(self) -> None:
        """Stop every node."""
        subprocess.run([str(KAFKA_SH), "stop-cluster", str(self.data)], timeout=300, check=True)


def _free_run(count: int) -> int:
    """The first of `count` consecutive loopback ports nothing listens on."""
    while True:
        base = free_port()
        if base + count < 65536 and all(_free(base + i) for i in range(count)):
            return base


def _free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


class SecuredBroker:
    """A broker of kafka.sh's secured profile: SASL_SSL with SCRAM-SHA-512 for `user` at
    `secure_bootstrap`, TLS from a CA of its own (`ca`, PEM); PLAINTEXT at `bootstrap` for a
    test's own set-up only (clients under test use the SASL_SSL port)."""

    user = "flatavro"
    password = 'scram-"s3cr3t-91c4'  # a quote: the Java client's JAAS value is escaped

    def __init__(self, data: Path) -> None:
        """Start the broker in `data` (its TLS files in `data`/tls, made at the first start)."""
        not_in_fast_tier("a Kafka broker", "kafka")
        self.data = data
        self.port, self.controller, self.secure_port = free_port(), free_port(), free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        self.secure_bootstrap = f"127.0.0.1:{self.secure_port}"
        self.ca = data / "tls" / "ca.pem"
        env = dict(os.environ, KAFKA_SASL_SSL_PORT=str(self.secure_port),
                   KAFKA_SCRAM_USER=self.user, KAFKA_SCRAM_PASSWORD=self.password)
        env.pop("KAFKA_SASL_PORT", None)
        done = subprocess.run([str(KAFKA_SH), "start", str(data), str(self.port),
                               str(self.controller)], capture_output=True, text=True,
                              timeout=300, check=False, env=env)
        assert done.returncode == 0, f"the secured broker did not start:\n{done.stderr[-3000:]}"

    def client(self, **changes: str) -> dict[str, str]:
        """librdkafka settings of a client of the SASL_SSL listener (`changes` over them)."""
        return {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
                "sasl.username": self.user, "sasl.password": self.password,
                "ssl.ca.location": str(self.ca), **changes}

    def stop(self) -> None:
        """Stop the broker cleanly."""
        subprocess.run([str(KAFKA_SH), "stop", str(self.data)], timeout=120, check=True)


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status


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
        not_in_fast_tier("Apicurio Registry", "apicurio")
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
