"""MySQL temporal text: validate DATE/DATETIME/TIMESTAMP/TIME strings and print them as TiCDC does.

TiCDC writes ``YYYY-MM-DD``, ``YYYY-MM-DD HH:MM:SS[.f]`` and ``[-]HH:MM:SS[.f]`` with exactly
the column's fractional-second digits (fsp). Zero dates (``0000-00-00``) are legal MySQL values
and pass; a value with more fractional digits than the column keeps is refused, never rounded.
"""

from __future__ import annotations

import re

from service.core.mysql_types import MySQLType

__all__ = ["normalize_temporal", "TemporalFormatError"]

_DATE = r"(?P<y>\d{4})-(?P<mo>\d{1,2})-(?P<d>\d{1,2})"
_CLOCK = r"(?P<h>\d{1,2}):(?P<mi>\d{1,2}):(?P<s>\d{1,2})(?:\.(?P<f>\d{1,6})?)?"
_DATE_RE = re.compile(rf"^{_DATE}$")
_DATETIME_RE = re.compile(rf"^{_DATE}(?:[ T]{_CLOCK})?$")
# Already in TiCDC's spelling with a day every month has: returned as is (the common case).
_CANONICAL_DATETIME = re.compile(
    r"\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|1\d|2[0-8]) (?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d"
    r"(?:\.(\d{1,6}))?"
)
_TIME_RE = re.compile(
    r"^(?P<neg>-)?(?:(?P<days>\d{1,2}) )?(?P<h>\d{1,3}):(?P<mi>\d{1,2})(?::(?P<s>\d{1,2}))?"
    r"(?:\.(?P<f>\d{1,6})?)?$"
)
_MAX_TIME_SECONDS = 838 * 3600 + 59 * 60 + 59
_DAYS_IN_MONTH = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


class TemporalFormatError(ValueError):
    """A temporal string that is not a value of its column type; the text says why."""


def normalize_temporal(text: str, base: MySQLType, *, fsp: int | None) -> str:
    """Validate `text` as a value of `base` and return TiCDC's spelling of it.

    `fsp` None (a column rebuilt from a registered schema, whose fsp the schema does not
    record) keeps the fractional digits as written, up to 6.

    Raises:
        TemporalFormatError: malformed text, an impossible date or time, or more fractional
            digits than `fsp` (values are never truncated).
    """
    if base in (MySQLType.DATETIME, MySQLType.TIMESTAMP):
        return _datetime(text, base, fsp=fsp)
    if base is MySQLType.DATE:
        return _date(text)
    if base is MySQLType.TIME:
        return _time(text, fsp=fsp)
    raise TemporalFormatError(f"{base.value} is not a temporal type")


def _date(text: str) -> str:
    m = _DATE_RE.match(text)
    if not m:
        raise TemporalFormatError(f"{text!r} is not a DATE (YYYY-MM-DD)")
    return _date_part(m, text)


def _datetime(text: str, base: MySQLType, *, fsp: int | None) -> str:
    fast = _CANONICAL_DATETIME.fullmatch(text)
    if fast and (fsp is None or len(fast[1] or "") == fsp):
        return text
    m = _DATETIME_RE.match(text)
    if not m:
        raise TemporalFormatError(
            f"{text!r} is not a {base.value.upper()} (YYYY-MM-DD HH:MM:SS[.ffffff])"
        )
    date = _date_part(m, text)
    h, mi, s = (int(m[k] or 0) for k in ("h", "mi", "s"))
    if h > 23 or mi > 59 or s > 59:
        raise TemporalFormatError(f"{text!r} has a time of day out of range")
    fraction = _fraction(m["f"], fsp=fsp, text=text)
    return f"{date} {h:02d}:{mi:02d}:{s:02d}{fraction}"


def _time(text: str, *, fsp: int | None) -> str:
    m = _TIME_RE.match(text)
    if not m:
        raise TemporalFormatError(f"{text!r} is not a TIME ([-]HH:MM:SS[.ffffff])")
    h = int(m["h"]) + 24 * int(m["days"] or 0)
    mi, s = int(m["mi"]), int(m["s"] or 0)
    if mi > 59 or s > 59:
        raise TemporalFormatError(f"{text!r} has minutes or seconds out of range")
    fraction = _fraction(m["f"], fsp=fsp, text=text)
    total = h * 3600 + mi * 60 + s
    if total > _MAX_TIME_SECONDS or (total == _MAX_TIME_SECONDS and fraction.strip(".0")):
        raise TemporalFormatError(f"{text!r} is outside TIME's range -838:59:59..838:59:59")
    sign = "-" if m["neg"] and (total or fraction.strip(".0")) else ""
    return f"{sign}{h:02d}:{mi:02d}:{s:02d}{fraction}"


def _date_part(m: re.Match[str], text: str) -> str:
    y, mo, d = int(m["y"]), int(m["mo"]), int(m["d"])
    if mo > 12 or d > 31:
        raise TemporalFormatError(f"{text!r} has a month or day out of range")
    if mo and d and d > _DAYS_IN_MONTH[mo - 1]:
        raise TemporalFormatError(f"{text!r} is not a calendar date")
    if mo == 2 and d == 29 and y and not (y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)):
        raise TemporalFormatError(f"{text!r} is not a calendar date ({y} is no leap year)")
    return f"{y:04d}-{mo:02d}-{d:02d}"


def _fraction(digits: str | None, *, fsp: int | None, text: str) -> str:
    digits = digits or ""
    if fsp is None:
        fsp = len(digits)
        if fsp > 6:
            raise TemporalFormatError(f"{text!r} has {fsp} fractional-second digits; at most 6")
    if len(digits) > fsp and digits[fsp:].strip("0"):
        raise TemporalFormatError(
            f"{text!r} has {len(digits.rstrip('0'))} fractional-second digits; "
            f"the column keeps {fsp}"
        )
    return "." + digits[:fsp].ljust(fsp, "0") if fsp else ""
