"""Errors of the protocol decoders: a message that is not what its protocol says it is."""

from __future__ import annotations

from typing import Any

import orjson

from service.core.errors import InvalidInputError

__all__ = ["MessageFormatError", "json_object_value"]


class MessageFormatError(InvalidInputError):
    """A message breaks its protocol (bad JSON, framing, type code, value).

    Details name what is at fault: ``field`` (a JSON path in the message), ``column``,
    ``offset`` (a byte offset, for binary framing) and ``part`` (key or value). The converter
    adds the message's index in the batch.
    """

    code = "invalid_cdc_message"


def json_object_value(value: bytes | None, protocol: str) -> dict[str, Any]:
    """The JSON object a JSON protocol's message value holds.

    Raises:
        MessageFormatError: no value, not JSON (with the character position), not an object.
    """
    if not value:
        raise MessageFormatError(f"a {protocol} message needs a value", part="value")
    try:
        document = orjson.loads(value)
    except orjson.JSONDecodeError as exc:
        raise MessageFormatError(f"the value is not JSON ({exc.msg} at character {exc.pos})",
                                 part="value", position=exc.pos) from exc
    if not isinstance(document, dict):
        raise MessageFormatError("the value is not a JSON object", part="value")
    return document
