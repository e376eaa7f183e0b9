"""The bridge rides through broker restarts without exiting, exactly once: a graceful restart
of its only broker (stopped, 10 s, started: the hang of librdkafka#5511 reproduced here before
the fix), a rolling restart of a 3-node KRaft cluster (replication factor 3, min ISR 2; each
node stopped, started and back in every ISR before the next), and a node of the cluster
SIGKILLed mid-transaction. The restart starts at the bridge's first commit, with most of the
source still to convert, the rest written after it; at the end every source message is
converted once (counts and keys)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from service.cdc.catalog import Protocol
from tests.bridge.test_bridge_protocols import (
    Raw,
    command,
    committed_offsets,
    exactly_once,
    expected,
    produce,
    registered,
    running,
    source_messages,
)
from tests.support.parts import Broker, BrokerCluster

BROKER_TIMEOUT = "30"
PER_TABLE = 300  # 3 partitions x 2 tables: ~2,800 source messages


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerCluster]:
    """Three KRaft nodes of this module alone (they are stopped and killed here)."""
    nodes = BrokerCluster(tmp_path_factory.mktemp("kafka-cluster"))
    yield nodes
    nodes.stop()


@pytest.fixture(scope="module")
def lone_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    """A single broker of this module alone (it is restarted here)."""
    broker = Broker(tmp_path_factory.mktemp("lone-kafka"))
    yield broker
    broker.stop()


def halves(messages: dict[int, list[Raw]]) -> tuple[dict[int, list[Raw]], ...]:
    """Each partition's first two thirds, and the rest."""
    cut = {p: len(m) * 2 // 3 for p, m in messages.items()}
    return ({p: m[:cut[p]] for p, m in messages.items()},
            {p: m[cut[p]:] for p, m in messages.items()})


def told(log: Path) -> str:
    """What a failed run shows: every line of the bridge's own (runs of the same progress
    line once), then librdkafka's last consumer-group lines (the bridge runs with its
    ``cgrp,consumer`` debug contexts on here)."""
    ours: list[str] = []
    theirs: list[str] = []
    for line in log.read_text(errors="replace").splitlines():
        if line.startswith("%"):
            theirs.append(line)
        elif not ours or line != ours[-1]:
            ours.append(line)
    return "\n".join([*ours, "-- librdkafka, last lines:", *theirs[-80:]])


def scenario(parts: Any, name: str, tmp_path: Path, disturb: Callable[[], None], *,
             replicas: int, all_lost: bool = False) -> None:
    """Run the bridge on two thirds of the source, `disturb` the brokers as soon as its first
    transaction commits, write the rest, wait until every source message is committed,
    SIGTERM it (exit 0), check exactly once."""
    source, registry, rule = f"src_{name}", tmp_path / "r.sqlite", f"{name}_{{schema}}_{{table}}"
    registered(registry, rule)
    admin = AdminClient({"bootstrap.servers": parts.bootstrap})
    for future in admin.create_topics([NewTopic(source, 3, replicas)]).values():
        future.result(60)
    messages = source_messages(Protocol.CANAL_JSON, 3, PER_TABLE)
    total = sum(len(m) for m in messages.values())
    cmd = command(Protocol.CANAL_JSON, parts, source, registry, name, "one", "--batch-size",
                  "200", "--broker-timeout", BROKER_TIMEOUT, rule=rule)
    log = tmp_path / "bridge.log"
    before, after = halves(messages)
    produce(parts, source, before)
    env = {**os.environ, "FLATAVRO_KAFKA_DEBUG": "cgrp,consumer"}
    with log.open("w") as err, running(cmd, stderr=err, env=env) as process:
        deadline = time.monotonic() + 120
        while committed_offsets(parts, name, source) == 0:
            assert time.monotonic() < deadline and process.poll() is None, told(log)
            time.sleep(0.5)
        disturb()
        assert process.poll() is None, f"the bridge exited:\n{told(log)}"
        produce(parts, source, after)
        deadline = time.monotonic() + 300
        while committed_offsets(parts, name, source) < total:
            assert process.poll() is None, f"the bridge exited:\n{told(log)}"
            assert time.monotonic() < deadline, f"not all committed:\n{told(log)}"
            time.sleep(1)
        process.terminate()
        assert process.wait(60) == 0, told(log)
    print(told(log))
    if all_lost:
        assert "lost the Kafka broker" in log.read_text(), "the restart went unnoticed"
    exactly_once(parts, expected(Protocol.CANAL_JSON, registry, messages, rule),
                 context=told(log))


def test_a_graceful_restart_of_the_only_broker_is_ridden_through(
        lone_broker: Broker, tmp_path: Path) -> None:
    def restart() -> None:
        gone = lone_broker.restart(down_for=10)
        print(f"the broker was gone for {gone:.1f} s")

    scenario(lone_broker, "ride", tmp_path, restart, replicas=1, all_lost=True)


def test_a_rolling_restart_of_three_brokers_is_ridden_through(
        cluster: BrokerCluster, tmp_path: Path) -> None:
    def rolling() -> None:
        for node in range(1, cluster.nodes + 1):
            cluster.stop_node(node)
            cluster.start_node(node)
            print(f"node {node} restarted, back in every ISR after "
                  f"{cluster.wait_in_sync():.1f} s")

    scenario(cluster, "rolling", tmp_path, rolling, replicas=3)


def test_a_broker_killed_mid_transaction_is_ridden_through_on_three_nodes(
        cluster: BrokerCluster, tmp_path: Path) -> None:
    def kill() -> None:
        cluster.kill_node(2)
        time.sleep(5)  # the bridge goes on with two nodes (min ISR 2)
        cluster.start_node(2)
        print(f"node 2 back in every ISR after {cluster.wait_in_sync():.1f} s")

    scenario(cluster, "killed", tmp_path, kill, replicas=3)
