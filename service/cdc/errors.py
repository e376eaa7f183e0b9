"""Errors of the protocol decoders: a message that is not what its protocol says it is."""

from __future__ import annotations

from typing import Any

import orjson

from service.core.errors import InvalidInputError

__all__ = ["MessageFormatError", "handle_key_only", "json_object_or_empty", "json_object_value"]


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


def json_object_or_empty(value: bytes | None) -> dict[str, Any]:
    """`value` parsed as a JSON object, else an empty one (for a look at a message's shape
    before its decoder reads it, never for the decoding itself)."""
    if not value or not value.lstrip().startswith(b"{"):
        return {}
    try:
        document = orjson.loads(value)
    except orjson.JSONDecodeError:
        return {}
    return document if isinstance(document, dict) else {}


def handle_key_only(where: tuple[str, str], *, key: Any, commit_ts: int, flag: str,
                    **details: Any) -> MessageFormatError:
    """The refusal of a ``large-message-handle-option=handle-key-only`` message (`flag`: the
    protocol's field), naming the table (`where`: database, table), the key and the commit ts
    (what a dead letter needs to find the row again)."""
    schema, table = where
    return MessageFormatError(
        f"table `{schema}`.`{table}`, key {orjson.dumps(key).decode()}, commit ts {commit_ts}: "
        f"the message carries only the handle key (large-message handling `{flag}`); the row "
        f"is not in it: set --upstream-tidb-dsn to read it from the upstream TiDB at that "
        f"commit ts",
        schema=schema, table=table, key=key, commit_ts=commit_ts, **details)
