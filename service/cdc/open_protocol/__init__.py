"""TiCDC Open Protocol: batch framing, row/DDL/resolved events, column type codes and flags."""

from service.cdc.open_protocol.decoder import Decoder

__all__ = ["Decoder"]
