"""The bridge in operation: SASL authentication (it works; a wrong password stops in one line
that never shows the secret), a broker lost mid-run (a clear stop, then nothing lost or
doubled after the restart), a table schema the registry refuses (stop naming the column, or
dead-lettered), Kafka settings librdkafka refuses, and the Prometheus metrics."""

from __future__ import annotations

import os
import re
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from service.cdc.catalog import Protocol
from service.core.ddl import table_from_ddl
from tests.bridge.test_bridge import create_topic, read_committed
from tests.bridge.test_bridge_protocols import (
    ITEMS,
    command,
    exactly_once,
    expected,
    produce,
    produced,
    registered,
    running,
    source_messages,
    table_changes,
)
from tests.cdc.builders import simple_messages
from tests.support.harness import free_port
from tests.support.parts import ROOT, Broker

USER, PASSWORD = "bridge", "bridge-secret-7f3a"


@pytest.fixture(scope="module")
def own_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    """A broker of this module alone (it is killed here), with a SASL_PLAINTEXT listener."""
    broker = Broker(tmp_path_factory.mktemp("own-kafka"), sasl=(USER, PASSWORD))
    yield broker
    broker.stop()


def run(cmd: list[str], env: dict[str, str] | None = None, timeout: float = 300
        ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          check=False, env={**os.environ, **(env or {})})


def sasl_env(password: str) -> dict[str, str]:
    return {"FLATAVRO_KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT",
            "FLATAVRO_KAFKA_SASL_MECHANISMS": "PLAIN", "FLATAVRO_KAFKA_SASL_USERNAME": USER,
            "FLATAVRO_KAFKA_SASL_PASSWORD": password}


def canal_source(broker: Broker, name: str, registry: Path, per_table: int
                 ) -> dict[int, list[tuple[bytes | None, bytes | None]]]:
    """Topic `src_<name>` (3 partitions) with Canal-JSON changes of two tables registered
    under the rule `<name>_{schema}_{table}`; returns the messages by partition."""
    registered(registry, f"{name}_{{schema}}_{{table}}")
    create_topic(broker, f"src_{name}")
    messages = source_messages(Protocol.CANAL_JSON, 3, per_table)
    produce(broker, f"src_{name}", messages)
    return messages


def test_the_bridge_authenticates_with_sasl_and_a_wrong_password_stops_it(
        own_broker: Broker, tmp_path: Path) -> None:
    source, registry, rule = "src_sasl", tmp_path / "r.sqlite", "sasl_{schema}_{table}"
    messages = canal_source(own_broker, "sasl", registry, 10)
    through_sasl: Any = SimpleNamespace(bootstrap=own_broker.sasl_bootstrap)
    cmd = command(Protocol.CANAL_JSON, through_sasl, source, registry, "sasl", "one",
                  "--exit-when-idle", "3", rule=rule)

    wrong = run(cmd, sasl_env("not-the-password"), timeout=120)
    assert wrong.returncode == 2
    last = wrong.stderr.strip().splitlines()[-1]
    assert last.startswith("flatavro: error [bridge_failed]: Kafka: "), wrong.stderr[-2000:]
    assert "Authentication failed" in last or "authentication" in last.lower(), last
    assert "not-the-password" not in wrong.stderr and "**********" in last
    assert produced(own_broker, "sasl_shop_items") == 0

    right = run(cmd, sasl_env(PASSWORD))
    assert right.returncode == 0, right.stderr[-3000:]
    assert PASSWORD not in right.stderr
    exactly_once(own_broker, expected(Protocol.CANAL_JSON, registry, messages, rule))


def test_a_broker_lost_mid_run_stops_the_bridge_and_a_restart_doubles_nothing(
        own_broker: Broker, tmp_path: Path) -> None:
    source, registry, rule = "src_lost", tmp_path / "r.sqlite", "lost_{schema}_{table}"
    messages = canal_source(own_broker, "lost", registry, 600)
    cmd = command(Protocol.CANAL_JSON, own_broker, source, registry, "lost", "one",
                  "--batch-size", "20", "--broker-timeout", "8", rule=rule)
    log = tmp_path / "bridge.log"
    with log.open("w") as err, running(cmd, stderr=err) as process:
        deadline = time.monotonic() + 120
        while produced(own_broker, "lost_shop_items") == 0:
            assert time.monotonic() < deadline and process.poll() is None, log.read_text()
            time.sleep(0.1)
        own_broker.kill()
        lost_at = time.monotonic()
        status = process.wait(120)
    stopped_after = time.monotonic() - lost_at
    lines = log.read_text().strip().splitlines()
    print(f"stopped {stopped_after:.1f} s after the broker was killed: {lines[-1]}")
    assert status == 2 and stopped_after < 90, log.read_text()[-3000:]
    assert lines[-1].startswith("flatavro: error [bridge_failed]: "), lines[-1]
    # Which of the bridge's bounds notices first depends on where the kill finds it: the
    # broker's absence, a transaction call that fails, or one that hangs (librdkafka#5456),
    # which the watchdog ends.
    assert ("lost the Kafka broker" in lines[-1]
            or "a transaction failed and was aborted" in lines[-1]
            or re.search(r"producer\.\w+ did not return within --broker-timeout 8 s", lines[-1])
            ), lines[-1]

    own_broker.start()
    done = run([*cmd, "--exit-when-idle", "3"])
    assert done.returncode == 0, done.stderr[-3000:]
    exactly_once(own_broker, expected(Protocol.CANAL_JSON, registry, messages, rule))


ITEMS_NAME_INT = table_from_ddl("CREATE TABLE shop.items (id INT PRIMARY KEY, name INT)")


def test_a_table_schema_the_registry_refuses_stops_or_is_dead_lettered(
        kafka: Broker, tmp_path: Path) -> None:
    """`name` turns from VARCHAR into INT (schema version 2): BACKWARD refuses it."""
    source, registry, rule = "src_refused", tmp_path / "r.sqlite", "refused_{schema}_{table}"
    registered(registry, rule)
    create_topic(kafka, source, 1)
    before = simple_messages(ITEMS, table_changes(ITEMS, 3))
    after = simple_messages(ITEMS_NAME_INT, [
        ("insert", {"id": 500, "name": 5}, None, 440_000_000_000_000_000)], version=2)
    produce(kafka, source, {0: [(None, m.encode()) for m in [*before, *after]]})
    first_refused = len(before) + 1  # the DML after the version-2 BOOTSTRAP

    stop = run(command(Protocol.SIMPLE, kafka, source, registry, "refused", "one",
                       "--register", "--exit-when-idle", "3", rule=rule))
    assert stop.returncode == 2
    last = stop.stderr.strip().splitlines()[-1]
    assert last.startswith(f"flatavro: error [unconvertible_message]: partition 0 offset "
                           f"{first_refused}: the schema registry refused its table's "
                           f"schema: "), last
    print(last)
    assert "name" in last and "everything before it is committed" in last, last
    want = expected(Protocol.SIMPLE, registry, {0: [(None, m.encode()) for m in before]}, rule)
    exactly_once(kafka, want)

    # A new group from the start (a restart of the first one would resume at the refused
    # DML with its BOOTSTRAP behind it: held until TiCDC re-sends it).
    rule = "refused2_{schema}_{table}"
    registered(registry, rule)
    dead = run(command(Protocol.SIMPLE, kafka, source, registry, "refused2", "one",
                       "--register", "--exit-when-idle", "3", "--dead-letter-topic",
                       "refused_dlt", rule=rule))
    assert dead.returncode == 0, dead.stderr[-3000:]
    [(_, (_, value))] = read_committed(kafka, "refused_dlt")
    assert value == after[1].encode()
    exactly_once(kafka, expected(Protocol.SIMPLE, registry,
                                 {0: [(None, m.encode()) for m in before]}, rule))


def test_kafka_settings_librdkafka_refuses_are_one_line_without_secrets(
        kafka: Broker, tmp_path: Path) -> None:
    cmd = command(Protocol.CANAL_JSON, kafka, "any", tmp_path / "r.sqlite", "g", "one")
    done = run(cmd, {"FLATAVRO_KAFKA_NO_SUCH_SETTING": "1",
                     "FLATAVRO_KAFKA_SASL_PASSWORD": "hunter2-secret"})
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "flatavro: error [invalid_kafka_config]: Kafka client settings refused: No such "
        "configuration property: \"no.such.setting\" (settings: {'no.such.setting': '1', "
        "'sasl.password': '**********'})"]
    config = tmp_path / "kafka.properties"
    config.write_text("partitioner=random\n")
    owned = run([*cmd, "--kafka-config", str(config)])
    assert owned.returncode == 2
    assert "Kafka setting partitioner is set by the bridge" in owned.stderr


def metrics(port: int) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read().decode()
    return {f"{s.name}{sorted(s.labels.items()) if s.labels else ''}": s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_prometheus_metrics_count_what_the_bridge_did(kafka: Broker, tmp_path: Path) -> None:
    source, registry, rule = "src_metrics", tmp_path / "r.sqlite", "metrics_{schema}_{table}"
    registered(registry, rule)
    create_topic(kafka, source)
    messages = source_messages(Protocol.CANAL_JSON, 3, 20)
    messages[2].append((None, b"{not json"))  # one to dead-letter
    produce(kafka, source, messages)
    total = sum(len(m) for m in messages.values())
    port = free_port()
    with running(command(Protocol.CANAL_JSON, kafka, source, registry, "metrics", "one",
                         "--metrics-port", str(port), "--dead-letter-topic", "metrics_dlt",
                         "--exit-when-idle", "12", rule=rule),
                 stderr=subprocess.PIPE, text=True) as process:
        deadline, seen = time.monotonic() + 120, {}
        while time.monotonic() < deadline:
            try:
                seen = metrics(port)
            except OSError:
                pass
            lag = [v for k, v in seen.items() if k.startswith("flatavro_bridge_lag[")]
            if seen.get("flatavro_bridge_source_messages_total") == total and lag:
                break
            time.sleep(0.5)
        _, err = process.communicate(timeout=120)
    assert process.returncode == 0, err[-3000:]
    want = expected(Protocol.CANAL_JSON, registry,
                    {p: [m for m in ms if m[1] != b"{not json"] for p, ms in messages.items()},
                    rule)
    assert seen["flatavro_bridge_source_messages_total"] == total
    assert seen["flatavro_bridge_converted_total"] == sum(len(w) for w in want.values())
    assert seen["flatavro_bridge_dead_lettered_total"] == 1
    assert seen["flatavro_bridge_transaction_aborts_total"] == 0
    assert seen["flatavro_bridge_pending"] == 0
    assert {k: v for k, v in seen.items() if k.startswith("flatavro_bridge_lag[")} == {
        f"flatavro_bridge_lag[('partition', '{p}')]": 0 for p in range(3)}
