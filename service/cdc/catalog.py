"""The one place that maps the TiCDC protocols flatavro converts (`Protocol`, named in
service/cdc/protocols.py) to their decoders, and builds them."""

from __future__ import annotations

from collections.abc import Callable

from service.cdc import canal_json, debezium, open_protocol, simple
from service.cdc.interface import ProtocolDecoder
from service.cdc.protocols import Protocol

__all__ = ["Protocol", "DECODERS", "new_decoders"]


DECODERS: dict[Protocol, Callable[..., ProtocolDecoder]] = {
    Protocol.CANAL_JSON: canal_json.Decoder,
    Protocol.OPEN_PROTOCOL: open_protocol.Decoder,
    Protocol.SIMPLE: simple.Decoder,
    Protocol.DEBEZIUM: debezium.Decoder,
}


def new_decoders(*, schema_cache_size: int, tz: str = "UTC") -> dict[Protocol, ProtocolDecoder]:
    """One fresh decoder per protocol (the Simple decoder caches `schema_cache_size` table
    schemas; the Debezium decoder writes TIMESTAMP values in the time zone `tz`: the others'
    messages carry them in the changefeed's time zone already)."""
    return {p: make(schema_cache_size=schema_cache_size, **(
        {"tz": tz} if p is Protocol.DEBEZIUM else {})) for p, make in DECODERS.items()}
