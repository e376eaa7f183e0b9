"""The TiCDC protocols flatavro reads, by name: a module of its own, so that the command line
lists them without importing the decoders (service/cdc/catalog.py maps each to its decoder)."""

from __future__ import annotations

import enum

__all__ = ["Protocol"]


class Protocol(enum.Enum):
    """A TiCDC protocol, by the name used in URLs and on the command line."""

    CANAL_JSON = "canal-json"
    OPEN_PROTOCOL = "open-protocol"
    SIMPLE = "simple"
    DEBEZIUM = "debezium"
