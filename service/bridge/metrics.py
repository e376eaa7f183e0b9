"""The bridge's Prometheus metrics (its own collector registry; served on --metrics-port)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server

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

    def serve(self, port: int) -> None:
        """Serve ``/metrics`` on `port` (all interfaces), in a daemon thread."""
        start_http_server(port, registry=self.registry)
