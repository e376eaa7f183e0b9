"""TiCDC's Avro schema of Simple-protocol messages, loaded once for reading.

``ColumnSchema.default`` is read as ``["null", "bytes"]``: the same bytes on the wire as the
schema's ``["null", "string"]``, and a BIT default (TiDB's raw bit string) need not be UTF-8.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import fastavro
import orjson

__all__ = ["MESSAGE_BRANCH", "NAMESPACE", "PARSED", "READING", "SCHEMA_FILE"]

SCHEMA_FILE = Path(__file__).parents[1] / "message.avsc"
NAMESPACE = "com.pingcap.simple.avro."
"""The namespace of the schema's named types, with its trailing dot."""


def _reading_schema() -> list[Any]:
    """TiCDC's schema with ``ColumnSchema.default`` read as ``["null", "bytes"]``."""
    schema: list[Any] = orjson.loads(SCHEMA_FILE.read_bytes())
    for named in schema:
        if named["name"] == "ColumnSchema":
            for field in named["fields"]:
                if field["name"] == "default":
                    field["type"] = ["null", "bytes"]
    return schema


READING = _reading_schema()
"""The reading schema, as JSON (the diagnosis walks it)."""
PARSED = fastavro.parse_schema(_reading_schema())
"""The reading schema, parsed by fastavro."""
MESSAGE_BRANCH = next(i for i, t in enumerate(READING) if t["name"] == "Message")
"""The union index of the ``Message`` record: the branch of every message."""
