"""TiCDC's Debezium protocol (``protocol=debezium``): row changes, DDL and watermark events in
Debezium's JSON envelope, with TiCDC's extensions (``source.commit_ts``, ``tidb_type``)."""

from service.cdc.debezium.decoder import Decoder

__all__ = ["Decoder"]
