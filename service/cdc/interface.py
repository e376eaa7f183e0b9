"""The interface every protocol decoder implements."""

from __future__ import annotations

from typing import Protocol

from service.cdc.events import DecodedMessage, SourceMessage

__all__ = ["ProtocolDecoder"]


class ProtocolDecoder(Protocol):
    """Turns the Kafka messages of one TiCDC protocol into `ChangeEvent`s.

    A decoder may keep state between calls (the Simple protocol caches table schemas); one
    instance serves one stream of messages in order.
    """

    def decode(self, message: SourceMessage) -> DecodedMessage:
        """The events of one message, or why its row change is pending.

        Raises:
            MessageFormatError: the message breaks the protocol (the error names the field,
                column and, for binary framing, the byte offset).
        """
        ...
