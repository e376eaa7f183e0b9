"""A Simple-Avro message value read with fastavro into its Simple-JSON document.

Table schemas are converted by `columns.avro_table_schema`; ``data``/``old`` values are tagged
for `values.avro_value` and sorted by column name, as Go's JSON encoder sorts them (goavro
writes maps in random order). A value that is not a datum of the schema is a
`MessageFormatError` naming the byte offset, the field and why (`diagnosis`: fastavro says
neither where nor what).
"""

from __future__ import annotations

import io
from typing import Any

import fastavro

from service.cdc.errors import MessageFormatError
from service.cdc.simple.avro.diagnosis import diagnose
from service.cdc.simple.avro.schema import MESSAGE_BRANCH, NAMESPACE, PARSED
from service.cdc.simple.columns import AVRO_MESSAGE, avro_table_schema
from service.cdc.simple.values import AvroValue

__all__ = ["avro_document", "is_avro"]

_U64 = 1 << 64
_FIRST_BYTE = bytes([MESSAGE_BRANCH << 1])  # zig-zag varint of the branch index (< 64)
_JSON_SPACE = frozenset(b" \t\n\r")


def is_avro(value: bytes | None) -> bool:
    """True when `value` is to be read as a Simple-Avro datum: it starts with the Message
    branch's union index (``0x16``) or another control byte, which no JSON text starts with
    (so a damaged datum is explained as Avro; Simple-JSON starts with ``{``)."""
    if not value:
        return False
    first = value[0]
    return first == _FIRST_BYTE[0] or (first < 0x20 and first not in _JSON_SPACE)


def avro_document(value: bytes) -> dict[str, Any]:
    """The Simple-JSON document of a Simple-Avro message value.

    Raises:
        MessageFormatError: not a datum of TiCDC's schema (names the byte offset and field),
            a non-Message branch, bytes after the datum, a default that is not UTF-8.
    """
    stream = io.BytesIO(value)
    try:
        read = fastavro.schemaless_reader(stream, PARSED, None, return_record_name=True)
    except Exception as exc:  # fastavro raises EOFError, IndexError, ValueError, ...
        raise diagnose(value, exc) from exc
    # The schema is a union: fastavro answers (the branch's name, its record).
    if not isinstance(read, tuple) or read[0] != NAMESPACE + "Message":
        raise diagnose(value, None)
    message: dict[str, Any] = read[1]
    end = stream.tell()
    if end != len(value):
        extra = len(value) - end
        raise MessageFormatError(
            f"{AVRO_MESSAGE}{extra} byte{'s' if extra > 1 else ''} after the datum's end at "
            f"byte {end}", part="value", offset=end)
    branch, payload = message["payload"]
    kind = message["type"]
    if branch != NAMESPACE + _PAYLOAD[kind]:
        raise MessageFormatError(
            f"{AVRO_MESSAGE}the message type {kind} carries a "
            f"{branch.rsplit('.', 1)[-1]} payload", part="value", field="payload")
    return _CONVERT[kind](payload)


def _watermark(payload: dict[str, Any]) -> dict[str, Any]:
    return {"version": payload["version"], "type": "WATERMARK",
            "commitTs": payload["commitTs"], "buildTs": payload["buildTs"]}


def _bootstrap(payload: dict[str, Any]) -> dict[str, Any]:
    return {"version": payload["version"], "type": "BOOTSTRAP", "commitTs": 0,
            "buildTs": payload["buildTs"],
            "tableSchema": avro_table_schema(payload["tableSchema"], "tableSchema")}


def _ddl(payload: dict[str, Any]) -> dict[str, Any]:
    out = {"version": payload["version"], "type": payload["type"], "sql": payload["sql"],
           "commitTs": payload["commitTs"], "buildTs": payload["buildTs"]}
    for field in ("tableSchema", "preTableSchema"):
        if payload[field] is not None:
            out[field] = avro_table_schema(payload[field][1], field)
    return out


def _dml(payload: dict[str, Any]) -> dict[str, Any]:
    out = {key: payload[key] for key in ("version", "database", "table", "tableID", "type",
                                         "commitTs", "buildTs", "schemaVersion")}
    if payload["claimCheckLocation"] is not None:
        out["claimCheckLocation"] = payload["claimCheckLocation"]
    if payload["handleKeyOnly"]:
        out["handleKeyOnly"] = True
    if payload["checksum"] is not None:
        out["checksum"] = payload["checksum"][1]
    for field in ("data", "old"):
        if payload[field] is not None:
            out[field] = {column: _tagged(payload[field][column])
                          for column in sorted(payload[field])}
    return out


_PAYLOAD = {"WATERMARK": "Watermark", "BOOTSTRAP": "Bootstrap", "DDL": "DDL", "DML": "DML"}
_CONVERT = {"WATERMARK": _watermark, "BOOTSTRAP": _bootstrap, "DDL": _ddl, "DML": _dml}


def _tagged(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, tuple):  # a named record: Timestamp or UnsignedBigint
        name, record = value
        if name == NAMESPACE + "UnsignedBigint":
            return AvroValue(record["value"] % _U64)
        return {"location": record["location"], "value": record["value"]}
    return AvroValue(value)
