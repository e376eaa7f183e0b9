"""`Watchdog`: a Kafka call blocked past --broker-timeout ends the process with one line and
exit 2 (a bridge whose fake consumer blocks for good, in a subprocess), SIGTERM during a stuck
commit ends it within --broker-timeout + 10 s, and the liveness answer on the metrics port."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from service.bridge.metrics import BridgeMetrics
from service.bridge.watchdog import GRACE, Watchdog
from tests.bridge.unit.fakes import Clock
from tests.support.harness import free_port
from tests.support.parts import ROOT


def test_a_call_blocked_past_the_bound_ends_the_process_with_exit_2(
        capsys: pytest.CaptureFixture[str]) -> None:
    clock, ended = Clock(100.0), []
    watchdog = Watchdog(20.0, clock=clock, end=ended.append)
    with watchdog.watch("producer.send_offsets_to_transaction"):
        clock.now = 100.0 + 20.0 + GRACE - 0.1
        watchdog.check()
        assert ended == []
        clock.now = 100.0 + 20.0 + GRACE
        watchdog.check()
    assert ended == [2]
    assert capsys.readouterr().err.splitlines() == [
        "flatavro: error [bridge_failed]: producer.send_offsets_to_transaction did not return "
        "within --broker-timeout 20 s (blocked 25 s; librdkafka#5456); exiting: a restarted "
        "bridge with the same --instance-id aborts the open transaction and resumes after the "
        "last committed offsets"]
    watchdog.check()  # the call returned: nothing in flight any more
    assert ended == [2]


def test_a_stop_that_takes_too_long_ends_the_process_with_exit_0(
        capsys: pytest.CaptureFixture[str]) -> None:
    clock, ended = Clock(0.0), []
    watchdog = Watchdog(20.0, clock=clock, end=ended.append)
    watchdog.stopping()
    clock.now = 28.9
    watchdog.check()
    assert ended == []
    clock.now = 29.0
    watchdog.check()
    assert ended == [0]
    assert "stopping took longer than --broker-timeout 20 s + 10 s" in capsys.readouterr().err


def test_liveness_fails_once_the_loop_has_not_advanced_for_the_broker_timeout() -> None:
    clock = Clock(0.0)
    watchdog = Watchdog(20.0, clock=clock)
    clock.now = 19.9
    assert watchdog.liveness().alive
    with watchdog.watch("producer.commit_transaction"):
        clock.now = 20.0
        state = watchdog.liveness()
    assert not state.alive
    assert state.reason == ("the main loop has not advanced for 20 s (--broker-timeout 20 s); "
                            "waiting on producer.commit_transaction")
    watchdog.advanced()
    assert watchdog.liveness().alive


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def test_the_metrics_port_answers_healthz_200_then_503_and_serves_the_metrics() -> None:
    clock, port = Clock(0.0), free_port()
    watchdog = Watchdog(20.0, clock=clock)
    BridgeMetrics().serve(port, liveness=watchdog.liveness)
    status, body = _get(f"http://127.0.0.1:{port}/healthz")
    assert status == 200 and json.loads(body)["status"] == "ok"
    clock.now = 25.0
    status, body = _get(f"http://127.0.0.1:{port}/healthz")
    assert status == 503
    assert json.loads(body) == {"status": "stuck", "reason": "the main loop has not advanced "
                                "for 25 s (--broker-timeout 20 s)"}
    status, body = _get(f"http://127.0.0.1:{port}/metrics")
    assert status == 200 and b"flatavro_bridge_transaction_aborts_total 0.0" in body


# A bridge of fakes in a process of its own: one call blocks for good in `STUCK`
# ("producer.commit_transaction", "consumer.consume"), as librdkafka's calls did in
# librdkafka#5456/#5511.
BLOCKED_BRIDGE = """
import asyncio, sys, threading
from confluent_kafka import Message
from service.bridge.bridge import Bridge
from service.bridge.watchdog import Watchdog
from service.cli.bridge_cmd import _on_signals
from service.cli.hints import error_line
from service.core.errors import ServiceError
from tests.bridge.unit.fakes import (SOURCE, FakeAdmin, FakeConsumer, FakeConverter,
                                     FakeProducer, clients, options)

STUCK, TIMEOUT = sys.argv[1], float(sys.argv[2])


def block(label):
    if label == STUCK:
        print(f"blocked in {label}", file=sys.stderr, flush=True)
        threading.Event().wait()


class Stuck(FakeProducer):
    def _call(self, name, *args):
        super()._call(name, *args)
        block(f"producer.{name}")


class StuckConsumer(FakeConsumer):
    def consume(self, num_messages, timeout):
        if not self.polls:
            block("consumer.consume")
        return super().consume(num_messages, timeout)


stop, watchdog = threading.Event(), Watchdog(TIMEOUT)
_on_signals(stop, watchdog)
watchdog.start(0.1)
polls = [[Message(topic=SOURCE, partition=0, offset=0, key=None, value=b"ok")]]
bridge = Bridge(options(broker_timeout=TIMEOUT), FakeConverter(), watchdog=watchdog,
                clients=clients(FakeAdmin({SOURCE: 2, "out": 2}),
                                StuckConsumer(assigned=[0], polls=polls), Stuck()))
try:
    asyncio.run(bridge.run(stop))
except ServiceError as exc:  # as the command line says it
    print(error_line(exc), file=sys.stderr)
    sys.exit(2)
"""


def blocked_bridge(call: str, timeout: float) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", BLOCKED_BRIDGE, call, str(timeout)],
                            cwd=ROOT, stderr=subprocess.PIPE, text=True)


def wait_blocked(process: subprocess.Popen[str], call: str) -> float:
    """Read stderr until the fake says it blocked; when that was."""
    assert process.stderr is not None
    line = process.stderr.readline()
    assert line == f"blocked in {call}\n", line
    return time.monotonic()


def test_a_call_that_never_returns_ends_the_bridge_in_time_with_one_line() -> None:
    call, timeout = "consumer.consume", 2.0
    with blocked_bridge(call, timeout) as process:
        blocked_at = wait_blocked(process, call)
        _, err = process.communicate(timeout=60)
    ended_after = time.monotonic() - blocked_at
    print(f"exit {process.returncode} {ended_after:.1f} s after the call blocked: {err}")
    assert process.returncode == 2
    assert err.strip().splitlines() == [
        f"flatavro: error [bridge_failed]: {call} did not return within "
        f"--broker-timeout 2 s (blocked {timeout + GRACE:.0f} s; librdkafka#5456); exiting: a "
        f"restarted bridge with the same --instance-id aborts the open transaction and resumes "
        f"after the last committed offsets"]
    assert ended_after < timeout + GRACE + 5


def test_sigterm_during_a_stuck_commit_ends_the_bridge_within_the_bound_plus_10_s() -> None:
    """The commit is given up 2 s after its timeout; a stopping bridge starts no new
    producer: it ends with one line (the next copy aborts the open transaction)."""
    call, timeout = "producer.commit_transaction", 3.0
    with blocked_bridge(call, timeout) as process:
        wait_blocked(process, call)
        process.send_signal(signal.SIGTERM)
        termed_at = time.monotonic()
        _, err = process.communicate(timeout=60)
    ended_after = time.monotonic() - termed_at
    print(f"exit {process.returncode} {ended_after:.1f} s after SIGTERM: {err}")
    assert ended_after < timeout + 10
    assert process.returncode == 2
    assert err.strip().splitlines() == [
        "flatavro: error [bridge_failed]: a transaction failed and was aborted "
        "(commit_transaction did not return within 3 s (librdkafka#5456); the producer is "
        "given up): nothing of its batch is visible; restart the bridge to resume after the "
        "last committed offsets"]
