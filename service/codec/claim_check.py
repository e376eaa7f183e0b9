"""A message of a changefeed with large-message handling, made whole before it is decoded:
its value decompressed (``large-message-handle-compression``) and, when it carries a
claim-check location, replaced by the whole message read from the claim-check storage
(`service.cdc.large_message` says what TiCDC writes). Storage: ``file://`` URIs (a directory
the consumer reads: a mount of the changefeed's storage). A read that fails for a reason that
may pass (not a missing object) is tried `READ_ATTEMPTS` times."""

from __future__ import annotations

import time
from pathlib import Path
from urllib.parse import unquote, urlsplit

from service.cdc.errors import MessageFormatError
from service.cdc.events import SourceMessage
from service.cdc.large_message import (
    Compression,
    LargeMessages,
    claim_check_location,
    decompressed_value,
    object_name,
    unwrapped,
)
from service.core.errors import InvalidInputError

__all__ = ["READ_ATTEMPTS", "ClaimCheckStorageError", "storage_directory", "whole"]

READ_ATTEMPTS = 3
_RETRY_SECONDS = 0.2


class ClaimCheckStorageError(InvalidInputError):
    """A ``claim-check-storage-uri`` flatavro cannot read from."""

    code = "invalid_claim_check_storage"


def storage_directory(uri: str) -> Path:
    """The directory a ``file://`` claim-check storage URI names.

    Raises:
        ClaimCheckStorageError: another scheme, or a URI with a host.
    """
    parts = urlsplit(uri)
    if parts.scheme != "file" or parts.netloc not in ("", "localhost"):
        raise ClaimCheckStorageError(
            f"claim-check-storage-uri {uri!r}: flatavro reads claim-check objects from a "
            f"file:///path directory (a mount of the changefeed's storage); "
            f"{parts.scheme or 'a relative path'} is not supported", uri=uri)
    return Path(unquote(parts.path))


def whole(message: SourceMessage, settings: LargeMessages, *, framed: bool) -> SourceMessage:
    """`message` as the changefeed would have written it without large-message handling
    (`framed`: values in the Open Protocol's framing).

    Raises:
        MessageFormatError: a value that does not decompress, a claim-check location without
            a configured storage, an object that is missing, unreadable or not what the
            settings say (each naming the location and why).
    """
    value = message.value
    if value is not None and settings.compression is not Compression.NONE:
        value = decompressed_value(value, settings.compression, framed=framed)
        message = SourceMessage(message.index, message.key, value)
    location = claim_check_location(message)
    if location is None:
        return message
    if not settings.claim_check_storage_uri:
        raise MessageFormatError(
            f"the message carries the claim-check location {location!r} but no "
            f"claim-check-storage-uri is set: the row is in that object, not in the message",
            field="claimCheckLocation", location=location)
    name = object_name(location)
    stored = _read(storage_directory(settings.claim_check_storage_uri) / name,
                   location=location)
    key, full = unwrapped(stored, settings, location=location, framed=framed)
    return SourceMessage(message.index, message.key if key is None else key, full)


def _read(path: Path, *, location: str) -> bytes:
    for attempt in range(1, READ_ATTEMPTS + 1):
        try:
            return path.read_bytes()
        except FileNotFoundError:
            raise MessageFormatError(
                f"claim-check object {location!r} is not in the storage ({path} does not "
                f"exist)", field="claimCheckLocation", location=location) from None
        except OSError as exc:
            failure = exc
            time.sleep(_RETRY_SECONDS * attempt if attempt < READ_ATTEMPTS else 0)
    raise MessageFormatError(
        f"claim-check object {location!r} cannot be read from {path} after {READ_ATTEMPTS} "
        f"attempts: {failure.strerror or failure}", field="claimCheckLocation",
        location=location)
