"""The flat-avro encoder options TiCDC exposes, as one immutable value object."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TypeVar

from service.core.errors import InvalidOptionError

__all__ = ["DecimalHandlingMode", "BigintUnsignedHandlingMode", "SchemaOptions"]

_E = TypeVar("_E", bound=enum.Enum)


class DecimalHandlingMode(enum.Enum):
    """``avro-decimal-handling-mode``: DECIMAL as Avro decimal bytes, or as a string."""

    PRECISE = "precise"
    STRING = "string"


class BigintUnsignedHandlingMode(enum.Enum):
    """``avro-bigint-unsigned-handling-mode``: BIGINT UNSIGNED as a wrapping long, or a string."""

    LONG = "long"
    STRING = "string"


@dataclass(frozen=True, slots=True)
class SchemaOptions:
    """How key/value schemas and values are produced (TiCDC's sink options).

    Attributes:
        enable_tidb_extension: append ``_tidb_op``, ``_tidb_commit_ts`` and
            ``_tidb_commit_physical_time`` to value schemas.
        decimal_handling_mode: PRECISE (bytes + decimal logical type) or STRING.
        bigint_unsigned_handling_mode: LONG (int64 bit pattern) or STRING.
        namespace: the first part of every record namespace (TiCDC's changefeed namespace).
    """

    enable_tidb_extension: bool = False
    decimal_handling_mode: DecimalHandlingMode = DecimalHandlingMode.PRECISE
    bigint_unsigned_handling_mode: BigintUnsignedHandlingMode = BigintUnsignedHandlingMode.LONG
    namespace: str = "default"

    @classmethod
    def from_strings(
        cls,
        *,
        enable_tidb_extension: bool = False,
        decimal_handling_mode: str = "precise",
        bigint_unsigned_handling_mode: str = "long",
        namespace: str = "default",
    ) -> SchemaOptions:
        """Build options from their wire spellings.

        Raises:
            InvalidOptionError: a mode outside its allowed values (the error names the option).
        """
        return cls(
            enable_tidb_extension=enable_tidb_extension,
            decimal_handling_mode=_member(DecimalHandlingMode, decimal_handling_mode,
                                          option="decimal_handling_mode"),
            bigint_unsigned_handling_mode=_member(BigintUnsignedHandlingMode,
                                                  bigint_unsigned_handling_mode,
                                                  option="bigint_unsigned_handling_mode"),
            namespace=namespace,
        )


def _member(kind: type[_E], value: str, *, option: str) -> _E:
    try:
        return kind(value)
    except ValueError as exc:
        allowed = "|".join(m.value for m in kind)
        raise InvalidOptionError(
            f"option `{option}` is {value!r}; allowed: {allowed}", option=option
        ) from exc
