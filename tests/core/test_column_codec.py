"""One column type's converters, and the fast check the compiled writer may make instead of
calling the encoder: it must accept only values the encoder returns unchanged."""

from __future__ import annotations

import math

import pytest

from service.core.column_codec import column_codec, identity
from service.core.domain import DomainError
from service.core.mysql_types import MySQLType
from service.core.options import SchemaOptions
from service.core.table import ColumnType

PRECISE = SchemaOptions()
STRINGS = SchemaOptions.from_strings(decimal_handling_mode="string",
                                     bigint_unsigned_handling_mode="string")


@pytest.mark.parametrize(("col_type", "low", "high"), [
    (ColumnType(MySQLType.TINYINT), -128, 127),
    (ColumnType(MySQLType.SMALLINT, unsigned=True), 0, 65535),
    (ColumnType(MySQLType.BIGINT), -(1 << 63), (1 << 63) - 1),
])
def test_integer_fast_check_is_the_columns_range(col_type: ColumnType, low: int,
                                                  high: int) -> None:
    codec = column_codec(col_type, PRECISE)
    assert codec.fast_check == ("int", low, high)
    assert codec.encode(low) == low and codec.encode(high) == high
    with pytest.raises(DomainError):
        codec.encode(high + 1)
    assert codec.decode is identity


def test_text_fast_check_is_the_length_limit() -> None:
    codec = column_codec(ColumnType(MySQLType.VARCHAR, length=3), PRECISE)
    assert codec.fast_check == ("text", 3)
    assert codec.encode("abc") == "abc"
    with pytest.raises(DomainError):
        codec.encode("abcd")
    unlimited = column_codec(ColumnType(MySQLType.LONGTEXT), PRECISE)
    assert unlimited.fast_check == ("text", math.inf)  # the writer checks bounds fit 64 bits


@pytest.mark.parametrize("col_type", [
    ColumnType(MySQLType.BIGINT, unsigned=True), ColumnType(MySQLType.DECIMAL, length=5,
                                                            decimal=2),
    ColumnType(MySQLType.DATETIME, decimal=3), ColumnType(MySQLType.BLOB),
    ColumnType(MySQLType.BIT, length=8), ColumnType(MySQLType.FLOAT), ColumnType(MySQLType.JSON),
])
def test_other_types_have_no_fast_check(col_type: ColumnType) -> None:
    assert column_codec(col_type, PRECISE).fast_check is None


def test_bigint_unsigned_is_the_int64_bit_pattern_or_text() -> None:
    col_type = ColumnType(MySQLType.BIGINT, unsigned=True)
    precise, strings = column_codec(col_type, PRECISE), column_codec(col_type, STRINGS)
    assert precise.encode((1 << 64) - 1) == -1 and precise.decode(-1) == (1 << 64) - 1
    assert strings.encode((1 << 64) - 1) == "18446744073709551615"
    assert strings.decode("18446744073709551615") == (1 << 64) - 1


def test_decimal_is_bytes_or_text_by_mode() -> None:
    col_type = ColumnType(MySQLType.DECIMAL, length=5, decimal=2)
    precise, strings = column_codec(col_type, PRECISE), column_codec(col_type, STRINGS)
    assert precise.encode("-1.5") == b"\xff\x6a"  # -150
    assert precise.decode(b"\xff\x6a") == "-1.50"
    assert strings.encode("-1.5") == "-1.50"
