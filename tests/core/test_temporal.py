"""Temporal strings: accepted spellings, TiCDC's output form, refusals."""

from __future__ import annotations

import pytest

from service.core.mysql_types import MySQLType
from service.core.temporal import TemporalFormatError, normalize_temporal


@pytest.mark.parametrize(
    ("text", "base", "fsp", "out"),
    [
        ("2020-1-2", MySQLType.DATE, 0, "2020-01-02"),
        ("0000-00-00", MySQLType.DATE, 0, "0000-00-00"),
        ("2020-02-29 23:59:59", MySQLType.DATETIME, 0, "2020-02-29 23:59:59"),
        ("2020-01-01T01:02:03.5", MySQLType.DATETIME, 3, "2020-01-01 01:02:03.500"),
        ("2020-01-01", MySQLType.TIMESTAMP, 6, "2020-01-01 00:00:00.000000"),
        ("2020-01-01 00:00:00.100", MySQLType.DATETIME, 1, "2020-01-01 00:00:00.1"),
        ("-838:59:59", MySQLType.TIME, 6, "-838:59:59.000000"),
        ("838:59:59", MySQLType.TIME, 0, "838:59:59"),
        ("1 02:00:00", MySQLType.TIME, 0, "26:00:00"),
        ("-00:00:00", MySQLType.TIME, 0, "00:00:00"),
        ("12:30", MySQLType.TIME, 0, "12:30:00"),
    ],
)
def test_normalize(text: str, base: MySQLType, fsp: int, out: str) -> None:
    assert normalize_temporal(text, base, fsp=fsp) == out


@pytest.mark.parametrize(
    ("text", "base", "fsp"),
    [("2021-13-01", MySQLType.DATE, 0), ("1900-02-29", MySQLType.DATE, 0),
     ("2020-01-01 00:60:00", MySQLType.DATETIME, 0), ("12:00:00", MySQLType.DATE, 0),
     ("2020-01-01 00:00:00.1234567", MySQLType.DATETIME, 6),
     ("838:59:59.5", MySQLType.TIME, 1), ("10:61:00", MySQLType.TIME, 0)],
)
def test_refuse(text: str, base: MySQLType, fsp: int) -> None:
    with pytest.raises(TemporalFormatError):
        normalize_temporal(text, base, fsp=fsp)
