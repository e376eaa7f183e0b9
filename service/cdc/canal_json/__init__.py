"""TiCDC Canal-JSON: DDL, DML (``data``/``old``), TIDB_WATERMARK and the ``_tidb`` extension."""

from service.cdc.canal_json.decoder import Decoder

__all__ = ["Decoder"]
