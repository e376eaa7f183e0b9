"""The bridge's Prometheus metrics (its own collector registry) and its liveness answer,
served on --metrics-port: ``/healthz`` is the liveness probe, every other path the metrics."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import ThreadingHTTPServer

from prometheus_client import CollectorRegistry, Counter, Gauge
from prometheus_client.exposition import MetricsHandler

from service.bridge.watchdog import Liveness

__all__ = ["BridgeMetrics"]


class BridgeMetrics:
    """Messages read, converted, skipped, dead-lettered; pending rows; aborts; lag."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.consumed = Counter("flatavro_bridge_source_messages",
                                "Source messages committed (converted, skipped or set aside)",
                                registry=self.registry)
        self.converted = Counter("flatavro_bridge_converted",
                                 "flat-avro messages produced (committed transactions)",
                                 registry=self.registry)
        self.skipped = Counter("flatavro_bridge_skipped",
                               "DDL, watermark/resolved and BOOTSTRAP events (no output)",
                               ["kind"], registry=self.registry)
        self.dead_lettered = Counter("flatavro_bridge_dead_lettered",
                                     "Messages sent to the dead-letter topic",
                                     registry=self.registry)
        self.pending = Gauge("flatavro_bridge_pending",
                             "Simple protocol messages held until their table schema arrives",
                             registry=self.registry)
        self.aborts = Counter("flatavro_bridge_transaction_aborts", "Transactions aborted",
                              registry=self.registry)
        self.lag = Gauge("flatavro_bridge_lag", "Messages behind the source's high watermark",
                         ["partition"], registry=self.registry)

    def serve(self, port: int, *, liveness: Callable[[], Liveness]) -> None:
        """Serve the metrics and ``/healthz`` (`liveness`: 200 or 503 with a JSON reason) on
        `port` (all interfaces), in a daemon thread."""
        metrics_registry = self.registry

        class Handler(MetricsHandler):
            """The metrics at any path but ``/healthz``."""

            registry: CollectorRegistry = metrics_registry

            def do_GET(self) -> None:
                if self.path.split("?")[0] != "/healthz":
                    super().do_GET()
                    return
                state = liveness()
                body = json.dumps({"status": "ok" if state.alive else "stuck",
                                   "reason": state.reason}).encode()
                self.send_response(200 if state.alive else 503)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        server = ThreadingHTTPServer(("", port), Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True,
                         name="flatavro-metrics").start()
