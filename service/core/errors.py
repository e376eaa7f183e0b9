"""The one error hierarchy of flatavro: every failure the service reports is a `ServiceError`.

Each class carries a stable machine-readable `code` (tests and clients match on it, never on
the text) and the HTTP layer maps classes to statuses in one table. Foreign exceptions are
translated at the boundary with ``raise ... from exc``.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from typing import Any, ClassVar

__all__ = [
    "Fix",
    "ServiceError",
    "InvalidInputError",
    "InvalidTableError",
    "UnsupportedTypeError",
    "DuplicateColumnError",
    "NameCollisionError",
    "InvalidDefaultError",
    "InvalidDDLError",
    "MissingDatabaseError",
    "InvalidOptionError",
    "InvalidValueError",
    "RowValidationError",
    "InvalidTopicRuleError",
    "FramingError",
]


class Fix(StrEnum):
    """Something the caller can set to get past an error.

    Errors list theirs in `ServiceError.fix` and never spell them out in the message: the
    command line says ``--schema DB`` where HTTP says ``"database": "db"``, so each surface
    renders the hint in its own names.
    """

    DATABASE = "database"
    """Name the database of a table given without one."""
    REGISTER_TABLE = "register_table"
    """Register the table's schemas from its CREATE TABLE first."""
    REGISTER_ON_CONVERT = "register_on_convert"
    """Let convert register the schemas of tables the registry does not have yet."""
    DECIMAL_STRING = "decimal_handling_mode_string"
    """Generate DECIMAL columns as strings (no precision or scale needed)."""
    REGISTRY_PATH = "registry_path"
    """Point the embedded registry at a file in an existing, writable directory."""


class ServiceError(Exception):
    """Base of every flatavro error.

    Attributes:
        code: stable identifier of the failure kind (``snake_case``).
        message: one human sentence that names what is at fault.
        details: structured facts (column, position, ...) for machine consumers.
        fix: what the caller can set to get past the error, if anything (any one will do).
    """

    code: ClassVar[str] = "service_error"

    def __init__(self, message: str, *, fix: Iterable[Fix] = (), **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = {k: v for k, v in details.items() if v is not None}
        self.fix = tuple(dict.fromkeys(fix))

    def __str__(self) -> str:
        return self.message

    def to_dict(self) -> dict[str, Any]:
        """Return the error as a JSON-able mapping (`code`, `message`, the details, `fix`)."""
        out = {"code": self.code, "message": self.message, **self.details}
        if self.fix:
            out["fix"] = [f.value for f in self.fix]
        return out


class InvalidInputError(ServiceError):
    """The caller sent something that cannot be used as it is."""

    code = "invalid_input"


class InvalidTableError(InvalidInputError):
    """A table definition is malformed (missing names, bad index, bad precision...)."""

    code = "invalid_table"


class UnsupportedTypeError(InvalidTableError):
    """A column's MySQL type is unknown or has no flat-avro mapping (e.g. GEOMETRY)."""

    code = "unsupported_type"


class DuplicateColumnError(InvalidTableError):
    """Two columns of one table have the same name."""

    code = "duplicate_column"


class NameCollisionError(InvalidTableError):
    """Two column names sanitize to the same Avro field name."""

    code = "avro_name_collision"


class InvalidDefaultError(InvalidTableError):
    """A column default is not a value of the column's type."""

    code = "invalid_default"


class InvalidDDLError(InvalidTableError):
    """A DDL statement does not parse or is not a CREATE TABLE."""

    code = "invalid_ddl"


class MissingDatabaseError(InvalidTableError):
    """A table is named without its database (``CREATE TABLE t``), which TiCDC always knows."""

    code = "missing_database"


class LimitExceededError(InvalidTableError):
    """A table definition is past one of TiDB's limits (columns, identifier length, DDL size,
    indexes, columns in an index, SET members, ENUM/SET member length); `what`, `limit` and
    `value` say which."""

    code = "limit_exceeded"


class InvalidOptionError(InvalidInputError):
    """A schema-generation option has a value outside its allowed set."""

    code = "invalid_option"


class InvalidValueError(InvalidInputError):
    """One column value of a row cannot be converted to or from its Avro form."""

    code = "invalid_value"


class RowValidationError(InvalidInputError):
    """One or more column values of a row are invalid; `errors` lists every one of them."""

    code = "invalid_row"

    def __init__(self, errors: list[InvalidValueError]) -> None:
        self.errors = errors
        summary = "; ".join(e.message for e in errors)
        super().__init__(
            f"{len(errors)} invalid column value(s): {summary}",
            errors=[e.to_dict() for e in errors],
        )


class InvalidTopicRuleError(InvalidInputError):
    """A topic rule or topic name breaks the flat-avro naming policy."""

    code = "invalid_topic_rule"


class FramingError(InvalidInputError):
    """Bytes are not a Confluent or AWS Glue wire-format frame (magic byte, truncated header,
    unknown compression)."""

    code = "invalid_frame"
