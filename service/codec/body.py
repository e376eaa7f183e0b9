"""Request bodies of the batch endpoints: a JSON object, and bytes carried as base64 or hex."""

from __future__ import annotations

import binascii
from collections.abc import Callable
from typing import Any

import orjson

from service.codec.errors import InvalidJsonError, InvalidRequestError

__all__ = ["parse_json_body", "text_encoder", "text_decoder"]

_ENCODERS: dict[str, Callable[[bytes], str]] = {
    "base64": lambda raw: binascii.b2a_base64(raw, newline=False).decode("ascii"),
    "hex": bytes.hex,
}
_DECODERS: dict[str, Callable[[str], bytes]] = {
    "base64": lambda text: binascii.a2b_base64(text, strict_mode=True),
    "hex": bytes.fromhex,
}


def parse_json_body(body: bytes) -> dict[str, Any]:
    """Parse a request body that must be a JSON object (the one parser of JSON bodies).

    Raises:
        InvalidJsonError: not UTF-8 (the byte offset named) or not JSON (orjson's reason, the
            character position, line and column).
        InvalidRequestError: JSON, but not an object.
    """
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise _syntax_error(body, exc) from exc
    if not isinstance(document, dict):
        raise InvalidRequestError(
            f"the body must be a JSON object, not {type(document).__name__}", field="body")
    return document


def _syntax_error(body: bytes, exc: orjson.JSONDecodeError) -> InvalidJsonError:
    """The error of a body orjson refused; only a failure is decoded again (to find a bad
    UTF-8 byte), so a good body is read once."""
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as bad:
        return InvalidJsonError(
            f"the body is not UTF-8: byte {bad.object[bad.start]:#04x} at byte offset "
            f"{bad.start} ({bad.reason})", byte_offset=bad.start)
    return InvalidJsonError(
        f"the body is not JSON: {exc.msg} at line {exc.lineno}, column {exc.colno} "
        f"(character {exc.pos})", position=exc.pos, line=exc.lineno, column=exc.colno)


def _encoding(document: dict[str, Any]) -> str:
    name = document.get("encoding", "base64")
    if not isinstance(name, str) or name not in _ENCODERS:
        raise InvalidRequestError(f"encoding must be base64 or hex, not {name!r}",
                                  field="encoding")
    return str(name)


def text_encoder(document: dict[str, Any]) -> Callable[[bytes], str]:
    """The bytes -> text function the document's ``encoding`` names (default base64)."""
    return _ENCODERS[_encoding(document)]


def text_decoder(document: dict[str, Any]) -> Callable[[str], bytes]:
    """The text -> bytes function the document's ``encoding`` names (default base64)."""
    return _DECODERS[_encoding(document)]
