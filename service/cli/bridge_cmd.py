"""``flatavro bridge``: run the consumer-group bridge (TiCDC topic -> flat-avro topics, exactly
once with Kafka transactions) until SIGTERM/SIGINT or ``--exit-when-idle``."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import socket
import threading
from typing import TYPE_CHECKING, Any

from service.bridge.log import log
from service.bridge.watchdog import Watchdog
from service.cdc.protocols import Protocol
from service.cli.convert_cmd import (
    add_key_columns_option,
    add_large_message_options,
    add_registry_options,
    add_time_zone_option,
    key_columns,
    large_messages,
    registry_settings,
)
from service.cli.schema_cmd import add_schema_options, schema_options
from service.registry.errors import RegistryAuthError, RegistryError, RegistryUnsupportedError

if TYPE_CHECKING:
    from service.usecases.runtime import Runtime
    from service.usecases.settings import RuntimeSettings

__all__ = ["register"]

DESCRIPTION = """\
Read a TiCDC topic (Canal-JSON, Open Protocol, Simple or Debezium) in a consumer group and write the
flat-avro topics an `avro` changefeed would have written, exactly once: each poll batch is
converted, produced and its source offsets committed in one Kafka transaction (Kafka >= 2.5;
read the targets with isolation.level=read_committed). Run more copies with the same
--group-id to split the partitions. Extra librdkafka settings (security.protocol, SASL, TLS):
FLATAVRO_KAFKA_<NAME> variables (FLATAVRO_KAFKA_SECURITY_PROTOCOL=SASL_SSL) or --kafka-config
FILE (key=value lines; wins over the variables); secrets are never logged. The registry comes
from --registry-url/--registry-file or the FLATAVRO_REGISTRY_* settings, as for the service.
Broker restarts: a retriable failure (a broker restarting, a coordinator moving) is retried
for --broker-timeout; every wait on Kafka is bounded by the bridge itself: a transactional
call that has not returned 2 s after its timeout is given up with its producer, a new
producer of the same transactional id starts (the broker ends the open transaction first)
and the batch is converted again from the committed offsets; any other call still blocked
5 s past --broker-timeout ends the process (exit 2, one line naming the call; the next copy
with the same --instance-id aborts the open transaction), and SIGTERM/SIGINT ends it within
--broker-timeout + 10 s whatever it waits on. With --metrics-port, GET /healthz
answers 200, or 503 with a JSON reason once the main loop has not advanced for
--broker-timeout (a liveness probe); every other path serves the Prometheus metrics.
Exit status: 0 after SIGTERM/SIGINT or --exit-when-idle; 2 with one line on stderr otherwise
(everything converted before the failure is committed)."""


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number")
    return value


def _batch_size(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= 1_000_000:  # librdkafka's consume() takes 1..1,000,000
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number from 1 to 1000000")
    return value


def register(commands: argparse._SubParsersAction[Any]) -> None:
    """Add the ``bridge`` command to the top-level parser."""
    cmd = commands.add_parser("bridge", help="TiCDC topic -> flat-avro topics, continuously "
                              "and exactly once", description=DESCRIPTION,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    cmd.add_argument("--protocol", required=True, choices=[p.value for p in Protocol])
    cmd.add_argument("--source-topic", required=True, help="the changefeed's topic")
    cmd.add_argument("--bootstrap-servers", required=True, help="the Kafka brokers")
    cmd.add_argument("--group-id", help="consumer group (default flatavro-bridge.<source>)")
    cmd.add_argument("--instance-id", help="this copy's name, unique in the group and stable "
                     "across restarts: the transactional.id is flatavro-bridge.<group>."
                     "<instance> (default: the host name)")
    cmd.add_argument("--topic", default="tidb_{schema}_{table}", metavar="RULE",
                     help="target topic rule or literal topic (default tidb_{schema}_{table})")
    cmd.add_argument("--register", action="store_true",
                     help="register schemas of tables the registry does not have yet")
    add_key_columns_option(cmd)
    add_large_message_options(cmd)
    cmd.add_argument("--create-topics", action="store_true", help="create missing target "
                     "topics with the source's partition count (else a missing one stops)")
    cmd.add_argument("--dead-letter-topic", metavar="DLT", help="where unconvertible messages "
                     "go (raw, with flatavro.reason/source.topic/source.partition/"
                     "source.offset headers); without it such a message stops the bridge")
    cmd.add_argument("--pending-timeout", type=_positive, default=300.0, metavar="SECONDS",
                     help="Simple protocol: how long a DML may wait for its table's BOOTSTRAP"
                          "/DDL before it is dead-lettered or stops the bridge (default 300)")
    cmd.add_argument("--exit-when-idle", type=_positive, metavar="SECONDS",
                     help="exit 0 after this long without new messages (nothing pending)")
    cmd.add_argument("--metrics-port", type=int, metavar="P",
                     help="serve Prometheus metrics on this port, and the liveness probe "
                          "GET /healthz (503 when the loop is stuck)")
    cmd.add_argument("--kafka-config", metavar="FILE",
                     help="extra librdkafka settings, key=value lines")
    cmd.add_argument("--batch-size", type=_batch_size, default=1000, metavar="N",
                     help="messages per poll batch and transaction, 1..1000000 (default 1000)")
    cmd.add_argument("--broker-timeout", type=_positive, default=60.0, metavar="SECONDS",
                     help="stop (exit 2) when no broker has answered for this long, or a "
                          "Kafka call is blocked 5 s past it (default 60); a transaction in "
                          "flight is aborted, unseen")
    add_registry_options(cmd)
    add_time_zone_option(cmd)
    add_schema_options(cmd)
    cmd.set_defaults(handler=_bridge)


async def _run(settings: RuntimeSettings, args: argparse.Namespace, *,
               stop: threading.Event, watchdog: Watchdog) -> None:
    from service.bridge.bridge import Bridge, BridgeOptions
    from service.bridge.kafka_settings import kafka_settings
    from service.usecases.runtime import Runtime

    options = BridgeOptions(
        protocol=Protocol(args.protocol), source_topic=args.source_topic,
        bootstrap_servers=args.bootstrap_servers,
        group_id=args.group_id or f"flatavro-bridge.{args.source_topic}",
        instance_id=args.instance_id or socket.gethostname(), topic_rule=args.topic,
        register=args.register, schema_options=schema_options(args),
        key_columns=key_columns(args), large_messages=large_messages(args),
        dead_letter_topic=args.dead_letter_topic, create_topics=args.create_topics,
        pending_timeout=args.pending_timeout, exit_when_idle=args.exit_when_idle,
        batch_size=args.batch_size, broker_timeout=args.broker_timeout,
        kafka=kafka_settings(os.environ, args.kafka_config))
    runtime = Runtime.start(settings)
    try:
        await _check_registry(runtime)
        bridge = Bridge(options, runtime.converter, watchdog=watchdog)
        if args.metrics_port:
            bridge.metrics.serve(args.metrics_port, liveness=watchdog.liveness)
        watchdog.start()
        await bridge.run(stop)
    finally:
        await runtime.stop()


async def _check_registry(runtime: Runtime) -> None:
    """Stop before touching Kafka when the registry URL leads to no Confluent API or refuses
    the credentials: settings that no retry mends (an unreachable registry is not checked
    here; the bridge holds its batches until the registry answers)."""
    if runtime.remote is None:
        return
    try:
        await runtime.remote.probe(runtime.settings.registry_probe_timeout)
    except (RegistryUnsupportedError, RegistryAuthError):
        raise
    except RegistryError as exc:
        log(f"the schema registry does not answer yet ({exc.message}); batches wait for it")


def _bridge(args: argparse.Namespace) -> int:
    stop, watchdog = threading.Event(), Watchdog(args.broker_timeout)
    _on_signals(stop, watchdog)
    try:
        asyncio.run(_run(registry_settings(args), args, stop=stop, watchdog=watchdog))
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    return 0


def _on_signals(stop: threading.Event, watchdog: Watchdog) -> None:
    """SIGTERM/SIGINT set `stop` and start the watchdog's stop deadline. They are taken by a
    thread of their own (blocked in every other thread, librdkafka's included, which start
    later): a Python handler runs only in the main thread, which may be blocked in a
    librdkafka call that never returns."""
    signals = {signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, signals)

    def wait() -> None:
        signal.sigwait(signals)
        stop.set()
        watchdog.stopping()

    threading.Thread(target=wait, daemon=True, name="flatavro-signals").start()
