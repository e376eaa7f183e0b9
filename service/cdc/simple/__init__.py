"""TiCDC Simple protocol, JSON and Avro encodings: BOOTSTRAP/DDL table schemas, DML by schema
version, WATERMARK."""

from service.cdc.simple.decoder import Decoder

__all__ = ["Decoder"]
