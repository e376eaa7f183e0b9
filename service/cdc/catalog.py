"""The one place that lists the TiCDC protocols flatavro converts, and builds their decoders."""

from __future__ import annotations

import enum
from collections.abc import Callable

from service.cdc import canal_json, open_protocol, simple
from service.cdc.interface import ProtocolDecoder

__all__ = ["Protocol", "DECODERS", "new_decoders"]


class Protocol(enum.Enum):
    """A TiCDC protocol, by the name used in URLs and on the command line."""

    CANAL_JSON = "canal-json"
    OPEN_PROTOCOL = "open-protocol"
    SIMPLE = "simple"


DECODERS: dict[Protocol, Callable[..., ProtocolDecoder]] = {
    Protocol.CANAL_JSON: canal_json.Decoder,
    Protocol.OPEN_PROTOCOL: open_protocol.Decoder,
    Protocol.SIMPLE: simple.Decoder,
}


def new_decoders(*, schema_cache_size: int) -> dict[Protocol, ProtocolDecoder]:
    """One fresh decoder per protocol (the Simple decoder caches `schema_cache_size` table
    schemas)."""
    return {p: make(schema_cache_size=schema_cache_size) for p, make in DECODERS.items()}
