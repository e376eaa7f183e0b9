"""The bridge on a broker that requires TLS and SCRAM-SHA-512 (kafka.sh's secured profile):
it converts a topic exactly once through the SASL_SSL listener with a `--kafka-config` file;
a wrong password, a CA the client does not trust and a client without TLS on the TLS port
each end the bridge in one line naming the cause, within 30 s, the password never shown."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from service.cdc.catalog import Protocol
from tests.bridge.test_bridge import create_topic
from tests.bridge.test_bridge_protocols import (
    command,
    exactly_once,
    expected,
    produce,
    produced,
    registered,
    source_messages,
)
from tests.support.parts import ROOT, SecuredBroker

BOUND_SECONDS = 30


def properties(path: Path, settings: dict[str, str]) -> str:
    path.write_text("".join(f"{name}={value}\n" for name, value in settings.items()))
    return str(path)


def untrusted_ca(tmp_path: Path) -> str:
    """A CA of its own, which did not sign the broker's certificate."""
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", "/CN=some other CA", "-keyout", str(tmp_path / "other.key"),
                    "-out", str(tmp_path / "other.pem")], check=True, capture_output=True)
    return str(tmp_path / "other.pem")


def bridge(broker: SecuredBroker, tmp_path: Path, name: str, settings: dict[str, str],
           *extra: str) -> list[str]:
    """The bridge command on the SASL_SSL listener with `settings` in --kafka-config."""
    through_tls: Any = SimpleNamespace(bootstrap=broker.secure_bootstrap)
    return [*command(Protocol.CANAL_JSON, through_tls, f"src_{name}", tmp_path / "r.sqlite",
                     name, "one", "--exit-when-idle", "3", *extra, rule=f"{name}_{{schema}}_"
                     f"{{table}}"),
            "--kafka-config", properties(tmp_path / "kafka.properties", settings)]


def run(cmd: list[str], timeout: float = 300) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          check=False, env={k: v for k, v in os.environ.items()
                                            if not k.startswith("FLATAVRO_KAFKA_")})
    return done, time.monotonic() - started


def test_the_bridge_converts_a_topic_over_sasl_ssl(secured_kafka: SecuredBroker,
                                                   tmp_path: Path) -> None:
    registry, rule = tmp_path / "r.sqlite", "tls_{schema}_{table}"
    registered(registry, rule)
    create_topic(secured_kafka, "src_tls")  # set-up through the PLAINTEXT listener
    messages = source_messages(Protocol.CANAL_JSON, 3, 10)
    produce(secured_kafka, "src_tls", messages)

    done, _ = run(bridge(secured_kafka, tmp_path, "tls", secured_kafka.client()))
    assert done.returncode == 0, done.stderr[-3000:]
    assert secured_kafka.password not in done.stderr
    assert "bridge: done: converted" in done.stderr
    exactly_once(secured_kafka, expected(Protocol.CANAL_JSON, registry, messages, rule))


@pytest.mark.parametrize(("case", "cause"), [
    ("wrong password", "SASL authentication error: Authentication failed"),
    ("untrusted CA", "SSL handshake failed: error:0A000086:SSL routines::certificate verify "
                     "failed"),
    ("no TLS", "speaks TLS but security.protocol is SASL_PLAINTEXT (use SASL_SSL)"),
])
def test_a_refused_client_ends_in_one_line_naming_the_cause(
        secured_kafka: SecuredBroker, tmp_path: Path, case: str, cause: str) -> None:
    name = "refused_" + case.replace(" ", "_")
    registered(tmp_path / "r.sqlite", f"{name}_{{schema}}_{{table}}")
    create_topic(secured_kafka, f"src_{name}")
    settings = {"wrong password": secured_kafka.client(**{"sasl.password": "not-it"}),
                "untrusted CA": secured_kafka.client(**{"ssl.ca.location":
                                                        untrusted_ca(tmp_path)}),
                "no TLS": secured_kafka.client(**{"security.protocol": "SASL_PLAINTEXT"}),
                }[case]
    done, seconds = run(bridge(secured_kafka, tmp_path, name, settings), timeout=120)
    print(f"{case}: exit {done.returncode} after {seconds:.1f} s")
    assert done.returncode == 2, done.stderr[-3000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("flatavro: error [bridge_failed]: "), done.stderr[-3000:]
    assert cause in last, last
    assert seconds < BOUND_SECONDS, f"{case}: {seconds:.1f} s: {last}"
    assert secured_kafka.password not in done.stderr and "not-it" not in done.stderr
    assert produced(secured_kafka, f"{name}_shop_items") == 0
