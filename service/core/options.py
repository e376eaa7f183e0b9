"""The flat-avro encoder options TiCDC exposes, as one immutable value object."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TypeVar

from service.core.errors import InvalidOptionError

__all__ = ["DecimalHandlingMode", "BigintUnsignedHandlingMode", "SchemaOptions", "TicdcRelease"]

_E = TypeVar("_E", bound=enum.Enum)


class DecimalHandlingMode(enum.Enum):
    """``avro-decimal-handling-mode``: DECIMAL as Avro decimal bytes, or as a string."""

    PRECISE = "precise"
    STRING = "string"


class BigintUnsignedHandlingMode(enum.Enum):
    """``avro-bigint-unsigned-handling-mode``: BIGINT UNSIGNED as a wrapping long, or a string."""

    LONG = "long"
    STRING = "string"


class TicdcRelease(enum.Enum):
    """The TiCDC release line whose schemas to write, where releases differ
    (docs/flat-avro.md, "Where TiCDC releases differ"): NEWEST (pingcap/ticdc v8.5.4 and
    later, tiflow master); TIFLOW_V8_5_2 (tiflow v8.5.2 to v8.5.7, and v9.0.0-beta.2.pre): a
    nullable column with the text default ``'null'`` is ``["null", T]``; TIFLOW_V8_3 (tiflow
    v8.3 to v8.5.1): such a table cannot be encoded, and a NOT NULL column added without a
    DEFAULT takes its origin default as the field's default."""

    NEWEST = "newest"
    TIFLOW_V8_5_2 = "tiflow-v8.5.2"
    TIFLOW_V8_3 = "tiflow-v8.3"


@dataclass(frozen=True, slots=True)
class SchemaOptions:
    """How key/value schemas and values are produced (TiCDC's sink options).

    Attributes:
        enable_tidb_extension: append ``_tidb_op``, ``_tidb_commit_ts`` and
            ``_tidb_commit_physical_time`` to value schemas.
        decimal_handling_mode: PRECISE (bytes + decimal logical type) or STRING.
        bigint_unsigned_handling_mode: LONG (int64 bit pattern) or STRING.
        namespace: the first part of every record namespace (TiCDC's changefeed namespace).
        ticdc_release: the TiCDC release line whose schemas to write (`TicdcRelease`).
    """

    enable_tidb_extension: bool = False
    decimal_handling_mode: DecimalHandlingMode = DecimalHandlingMode.PRECISE
    bigint_unsigned_handling_mode: BigintUnsignedHandlingMode = BigintUnsignedHandlingMode.LONG
    namespace: str = "default"
    ticdc_release: TicdcRelease = TicdcRelease.NEWEST

    @classmethod
    def from_strings(
        cls,
        *,
        enable_tidb_extension: bool = False,
        decimal_handling_mode: str = "precise",
        bigint_unsigned_handling_mode: str = "long",
        namespace: str = "default",
        ticdc_release: str = "newest",
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
            ticdc_release=_member(TicdcRelease, ticdc_release, option="ticdc_release"),
        )


def _member(kind: type[_E], value: str, *, option: str) -> _E:
    try:
        return kind(value)
    except ValueError as exc:
        allowed = "|".join(m.value for m in kind)
        raise InvalidOptionError(
            f"option `{option}` is {value!r}; allowed: {allowed}", option=option
        ) from exc
