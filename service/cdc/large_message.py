"""TiCDC's large-message handling, as a consumer of the changefeed meets it.

A changefeed with ``large-message-handle-compression`` (``snappy``: the block format; ``lz4``:
the frame format) compresses **every** Kafka value it writes, small ones too; keys never. With
``large-message-handle-option=claim-check`` a message over ``max-message-bytes`` is stored whole
in ``claim-check-storage-uri`` and the Kafka message carries only the handle key and its
location: Canal-JSON ``_tidb.claimCheckLocation``, Simple ``claimCheckLocation`` (with
``handleKeyOnly``), the Open Protocol's key ``ccl``. The stored object is the whole value
(``claim-check-raw-value=true``) or the JSON ``{"key": base64 | null, "value": base64}`` of the
whole message; either way its value is compressed as every value is. As TiCDC's own consumer
does, the object is found by the location's base name in the consumer's storage (the writer's
path may differ from the reader's). Pure: reading the object is the caller's
(`service.codec.claim_check`).
"""

from __future__ import annotations

import binascii
import enum
from dataclasses import dataclass, field

import cramjam
import pybase64

from service.cdc.errors import MessageFormatError, json_object_or_empty
from service.cdc.events import SourceMessage

__all__ = ["Compression", "LargeMessages", "claim_check_location", "decompressed",
           "decompressed_value", "object_name", "unwrapped"]


class Compression(enum.Enum):
    """``large-message-handle-compression``."""

    NONE = "none"
    SNAPPY = "snappy"
    LZ4 = "lz4"


@dataclass(frozen=True, slots=True)
class LargeMessages:
    """The changefeed's large-message settings, by TiCDC's names."""

    compression: Compression = Compression.NONE
    claim_check_storage_uri: str | None = None
    claim_check_raw_value: bool = False
    # Not a changefeed setting: TiCDC's consumer's --upstream-tidb-dsn, where handle-key-only
    # messages' rows are read (service.codec.upstream).
    upstream_tidb_dsn: str | None = field(default=None, repr=False)  # holds a password


def decompressed_value(value: bytes, compression: Compression, *, framed: bool) -> bytes:
    """A Kafka value decompressed as the changefeed compressed it: the whole value, or with
    the Open Protocol's framing (`framed`: ``int64 BE length | data`` items) each item's data,
    framed again.

    Raises:
        MessageFormatError: not data of that compression, or a frame cut short (naming the
            byte offset).
    """
    if not framed or compression is Compression.NONE:
        return decompressed(value, compression, part="value")
    out, at = bytearray(), 0
    while at < len(value):
        if at + 8 > len(value):
            raise MessageFormatError(f"the value frame ends inside the length at byte {at}",
                                     part="value", offset=at)
        size = int.from_bytes(value[at:at + 8], "big")
        if at + 8 + size > len(value):
            raise MessageFormatError(f"the value frame's item at byte {at} is {size} bytes "
                                     f"long but only {len(value) - at - 8} follow",
                                     part="value", offset=at)
        item = decompressed(value[at + 8:at + 8 + size], compression, part="value")
        out += len(item).to_bytes(8, "big") + item
        at += 8 + size
    return bytes(out)


def decompressed(data: bytes, compression: Compression, *, part: str) -> bytes:
    """`data` decompressed as the changefeed compressed it.

    Raises:
        MessageFormatError: not data of that compression (naming `part` and why).
    """
    if compression is Compression.NONE:
        return data
    try:
        if compression is Compression.SNAPPY:
            return bytes(cramjam.snappy.decompress_raw(data))
        return bytes(cramjam.lz4.decompress(data))
    except cramjam.DecompressionError as exc:
        raise MessageFormatError(
            f"the {part} is not {compression.value}-compressed ({exc}); is "
            f"large-message-handle-compression {compression.value} in the changefeed?",
            part=part) from None


def claim_check_location(message: SourceMessage) -> str | None:
    """The claim-check location a (decompressed) message carries, else None: Canal-JSON's
    ``_tidb.claimCheckLocation``, Simple's ``claimCheckLocation``, the Open Protocol key's
    ``ccl``. Only messages that hold the word are parsed."""
    value, key = message.value or b"", message.key or b""
    if b"claimCheckLocation" in value and value.lstrip().startswith(b"{"):
        document = json_object_or_empty(value)
        extension = document.get("_tidb")
        found = (extension.get("claimCheckLocation") if isinstance(extension, dict) else None
                 ) or document.get("claimCheckLocation")
        return found if isinstance(found, str) and found else None
    if b'"ccl"' in key and len(key) > 16:
        found = json_object_or_empty(key[16:16 + int.from_bytes(key[8:16], "big")]).get("ccl")
        return found if isinstance(found, str) and found else None
    return None


def object_name(location: str) -> str:
    """The object's name: the location's base name.

    Raises:
        MessageFormatError: a location whose base name is not a plain file name.
    """
    name = location.rstrip().rsplit("/", 1)[-1]
    if name in ("", ".", "..") or "\\" in name or "\x00" in name:
        raise MessageFormatError(f"claim-check location {location!r} names no object",
                                 field="claimCheckLocation", location=location)
    return name


def unwrapped(stored: bytes, settings: LargeMessages, *, location: str, framed: bool
              ) -> tuple[bytes | None, bytes]:
    """The whole message (key, value) a claim-check object holds; the key is None when the
    object does not carry one (raw values, or a ``null`` key); `framed`: the Open Protocol's
    value framing.

    Raises:
        MessageFormatError: an object that is not what the settings say (naming the location).
    """
    compression = settings.compression
    if settings.claim_check_raw_value:
        return None, _object_part(stored, compression, location=location, framed=framed)
    document = json_object_or_empty(stored)
    key, value = document.get("key"), document.get("value")
    if not isinstance(value, str) or not (key is None or isinstance(key, str)):
        raise MessageFormatError(
            f"claim-check object {location!r} is not TiCDC's {{\"key\", \"value\"}} JSON "
            f"(claim-check-raw-value=false); is claim-check-raw-value true in the changefeed?",
            field="claimCheckLocation", location=location)
    try:
        raw_key = None if key is None else pybase64.b64decode(key, validate=True)
        raw_value = pybase64.b64decode(value, validate=True)
    except binascii.Error as exc:
        raise MessageFormatError(f"claim-check object {location!r}: its key or value is not "
                                 f"base64 ({exc})", field="claimCheckLocation",
                                 location=location) from None
    return raw_key, _object_part(raw_value, compression, location=location, framed=framed)


def _object_part(data: bytes, compression: Compression, *, location: str, framed: bool
                 ) -> bytes:
    try:
        return decompressed_value(data, compression, framed=framed)
    except MessageFormatError as exc:
        raise MessageFormatError(f"claim-check object {location!r}: {exc.message}",
                                 field="claimCheckLocation", location=location) from None
