"""Prometheus metrics of one app instance (its own collector registry; no globals)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

__all__ = ["Metrics", "CONTENT_TYPE"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class Metrics:
    """Request, registry, cache and codec counters; label values never carry secrets."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter("flatavro_http_requests", "HTTP requests by route and status",
                                ["method", "route", "status"], registry=self.registry)
        self.latency = Histogram(
            "flatavro_http_request_duration_seconds", "HTTP request latency by route",
            ["method", "route"], registry=self.registry,
            buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5,
                     5, 10))
        self.registry_calls = Counter("flatavro_registry_calls", "Calls made to the registry",
                                      ["operation"], registry=self.registry)
        self.cache_hits = Counter("flatavro_schema_cache_hits",
                                  "Schema lookups answered from the cache",
                                  registry=self.registry)
        self.records = Counter("flatavro_records", "Records encoded or messages decoded",
                               ["direction"], registry=self.registry)
        self.record_errors = Counter("flatavro_record_errors",
                                     "Requests refused for bad records or messages",
                                     ["direction"], registry=self.registry)

    def observe_request(self, *, method: str, route: str, status: int, seconds: float
                        ) -> None:
        """Count one finished request."""
        self.requests.labels(method, route, str(status)).inc()
        self.latency.labels(method, route).observe(seconds)

    def count_registry_call(self, operation: str) -> None:
        """Count one call of a registry operation."""
        self.registry_calls.labels(operation).inc()

    def count_cache_hit(self) -> None:
        """Count one schema lookup the cache answered."""
        self.cache_hits.inc()

    def render(self) -> bytes:
        """The exposition text."""
        return generate_latest(self.registry)
