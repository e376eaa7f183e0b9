"""Errors of batch encode/decode/convert: every bad record or message of a batch, reported at
once, and request bodies that are not the JSON the batch endpoints take."""

from __future__ import annotations

from typing import Any

from service.core.errors import Fix, InvalidInputError

__all__ = ["InvalidRequestError", "InvalidJsonError", "InvalidRecordsError",
           "InvalidMessagesError", "UnconvertibleMessagesError"]


class InvalidRequestError(InvalidInputError):
    """The request body is not the JSON document the endpoint takes (position named)."""

    code = "invalid_request"


class InvalidJsonError(InvalidRequestError):
    """The request body is not JSON: not UTF-8 (`byte_offset`) or a syntax error (`position`,
    the character; `line` and `column`, 1-based)."""

    code = "invalid_json"


class _BatchError(InvalidInputError):
    """A batch with bad entries; `errors` lists one mapping per problem, nothing is output.

    The batch's `fix` is every entry's, so a surface renders the hints once for the batch.
    """

    noun = "entries"

    def __init__(self, errors: list[dict[str, Any]], **details: Any) -> None:
        self.errors = errors
        first = errors[0]["message"]
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        super().__init__(f"{len(errors)} problem(s) in the {self.noun}: {first}{more}",
                         errors=errors, fix=[Fix(f) for e in errors for f in e.get("fix", ())],
                         **details)


class InvalidRecordsError(_BatchError):
    """Encode: records that cannot be encoded; each error has `record_index` and `column`."""

    code, noun = "invalid_records", "records"


class InvalidMessagesError(_BatchError):
    """Decode: messages that do not decode; each error has `message_index`, `part` (key or
    value), the byte `offset` in that part where the problem is and, where known, the
    `schema_id`, the `subject` it is registered under and the `field` where decoding stopped."""

    code, noun = "invalid_messages", "messages"


class UnconvertibleMessagesError(_BatchError):
    """Convert: TiCDC messages that cannot be converted; each error has `message_index` and,
    where they apply, `column`, `field` and the byte `offset`. Nothing of the batch is output."""

    code, noun = "unconvertible_messages", "messages"
