"""Which TiCDC protocol a message that failed to decode looks like, for the error's hint: a
Canal-JSON topic read as Open Protocol should say so, not only "the message needs a key"."""

from __future__ import annotations

from service.cdc.catalog import Protocol
from service.cdc.errors import MessageFormatError, json_object_or_empty
from service.cdc.events import SourceMessage
from service.cdc.simple.avro import is_avro

__all__ = ["likely_protocol", "with_protocol_hint"]

_OPEN_PROTOCOL_KEY = (1).to_bytes(8, "big")  # a batch key starts with protocol version 1
_TITLES = {Protocol.CANAL_JSON: "Canal-JSON", Protocol.OPEN_PROTOCOL: "Open Protocol",
           Protocol.SIMPLE: "Simple", Protocol.DEBEZIUM: "Debezium"}


def likely_protocol(message: SourceMessage) -> Protocol | None:
    """The protocol `message` looks written in, from its shape alone, or None.

    Canal-JSON: a JSON object with ``isDdl`` and ``pkNames``/``mysqlType``; Simple: a JSON
    object with ``version``, ``type`` and ``commitTs`` (or a Simple-Avro datum); Open Protocol:
    a key starting with the 8-byte big-endian version 1; Debezium: a JSON object whose
    ``payload`` holds a ``source`` object and ``op`` or ``ddl``.
    """
    if message.key is not None and message.key.startswith(_OPEN_PROTOCOL_KEY):
        return Protocol.OPEN_PROTOCOL
    if is_avro(message.value):
        return Protocol.SIMPLE
    document = json_object_or_empty(message.value)
    if "isDdl" in document and ("pkNames" in document or "mysqlType" in document):
        return Protocol.CANAL_JSON
    if {"version", "type", "commitTs"} <= document.keys():
        return Protocol.SIMPLE
    payload = document.get("payload")
    if isinstance(payload, dict) and isinstance(payload.get("source"), dict) and (
            "op" in payload or "ddl" in payload):
        return Protocol.DEBEZIUM
    return None


def with_protocol_hint(error: MessageFormatError, *, protocol: Protocol,
                       message: SourceMessage) -> MessageFormatError:
    """`error`, or when `message` looks like another protocol than `protocol`, the same error
    saying which (its message ends with the hint; ``likely_protocol`` names it)."""
    likely = likely_protocol(message)
    if likely is None or likely is protocol:
        return error
    hinted = MessageFormatError(
        f"{error.message}; the message looks like {_TITLES[likely]}, not "
        f"{_TITLES[protocol]}: is the protocol {likely.value}?",
        fix=error.fix, **error.details, likely_protocol=likely.value)
    hinted.__cause__ = error
    return hinted

