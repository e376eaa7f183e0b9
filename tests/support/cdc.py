"""The protocol-conversion harness (a converter over its own embedded registry) and helpers."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import orjson

from service.cdc.catalog import Protocol, new_decoders
from service.codec.convert import Converter, ConvertInput
from service.codec.decode import decode_batch
from service.codec.resolver import SchemaResolver
from service.core.ddl import table_from_ddl
from service.core.options import SchemaOptions
from service.core.schema import SchemaPair
from service.core.table import Table
from service.registry.embedded.registry import EmbeddedRegistry
from service.registry.tables import TableRegistration, register_table
from tests.support.harness import run

DEFAULT_RULE = "tidb_{schema}_{table}"


class Harness:
    """A converter with its own registry; every call runs on a fresh event loop."""

    def __init__(self, path: Path) -> None:
        self.registry = EmbeddedRegistry(path)
        self.resolver = SchemaResolver(self.registry, cache_size=64, topic_ttl=0)
        self.converter = Converter(self.resolver, self._register,
                                   decoders=new_decoders(schema_cache_size=16))

    async def _register(self, table: Table, options: SchemaOptions, topic_rule: str, *,
                        pair: SchemaPair | None = None) -> TableRegistration:
        done = await register_table(self.registry, table, options=options,
                                     topic_rule=topic_rule, pair=pair)
        self.resolver.forget_topic(done.topic)
        return done

    def register_ddl(self, ddl: str, options: SchemaOptions | None = None,
                     rule: str = DEFAULT_RULE) -> TableRegistration:
        """Register a CREATE TABLE's schemas."""
        return run(self._register(table_from_ddl(ddl), options or SchemaOptions(), rule))

    def convert(self, protocol: Protocol, messages: list[tuple[str | None, str | None]], *,
                encoding: str = "utf-8", register: bool = False,
                options: SchemaOptions | None = None, rule: str = DEFAULT_RULE
                ) -> dict[str, Any]:
        """Convert one batch (writes allowed)."""
        request = ConvertInput(messages, encoding, rule, register, options or SchemaOptions())
        return run(self.converter.convert(protocol, request))

    def decode(self, converted: dict[str, Any]) -> list[dict[str, Any]]:
        """The converted messages decoded back into plain-JSON rows."""
        body = orjson.dumps({"messages": [{"key": m["key"], "value": m["value"]}
                                          for m in converted["messages"]]})
        decoded: list[dict[str, Any]] = orjson.loads(run(decode_batch(self.resolver, body)).body)[
            "messages"]
        return decoded

    def close(self) -> None:
        self.registry.close()


def frame_open_protocol(keys: list[str], values: list[str | None]) -> tuple[str, str]:
    """An Open Protocol batch message (base64 key and value) from its events' JSON texts."""
    key = (1).to_bytes(8, "big")
    for text in keys:
        raw = text.encode()
        key += len(raw).to_bytes(8, "big") + raw
    value = b""
    for text in values:
        raw = (text or "").encode()
        value += len(raw).to_bytes(8, "big") + raw
    return base64.b64encode(key).decode(), base64.b64encode(value).decode()
