"""`BridgeOptions`: what `flatavro bridge` was asked to do (topics, group, timeouts, Kafka)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from service.cdc.catalog import Protocol
from service.cdc.large_message import LargeMessages
from service.core.options import SchemaOptions

__all__ = ["BridgeOptions"]


@dataclass(frozen=True, slots=True)
class BridgeOptions:
    """What `flatavro bridge` was asked to do."""

    protocol: Protocol
    source_topic: str
    bootstrap_servers: str
    group_id: str
    instance_id: str
    topic_rule: str = "tidb_{schema}_{table}"
    register: bool = False
    schema_options: SchemaOptions = field(default_factory=SchemaOptions)
    key_columns: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    large_messages: LargeMessages = field(default_factory=LargeMessages)
    dead_letter_topic: str | None = None
    create_topics: bool = False
    pending_timeout: float = 300.0
    exit_when_idle: float | None = None
    batch_size: int = 1000
    progress_seconds: float = 5.0
    start_timeout: float = 15.0
    broker_timeout: float = 60.0
    kafka: Mapping[str, str] = field(default_factory=dict)
