"""Errors of the protocol decoders: a message that is not what its protocol says it is."""

from __future__ import annotations

from service.core.errors import InvalidInputError

__all__ = ["MessageFormatError"]


class MessageFormatError(InvalidInputError):
    """A message breaks its protocol (bad JSON, framing, type code, value).

    Details name what is at fault: ``field`` (a JSON path in the message), ``column``,
    ``offset`` (a byte offset, for binary framing) and ``part`` (key or value). The converter
    adds the message's index in the batch.
    """

    code = "invalid_cdc_message"
