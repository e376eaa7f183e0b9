"""Avro ``decimal`` bytes: the unscaled value as a minimal big-endian two's complement integer.

Byte layout (Avro 1.12 spec, "Decimal"): a ``bytes`` value holding ``unscaled`` in big-endian
two's complement, as few bytes as keep its sign (``-128`` -> ``80``, ``128`` -> ``00 80``); the
scale is the schema's, never on the wire. Everything here is exact: no `decimal` context
rounding.
"""

from __future__ import annotations

import decimal

__all__ = ["decimal_to_bytes", "decimal_from_bytes", "decimal_text", "unscaled_value"]


def decimal_to_bytes(unscaled: int) -> bytes:
    """Minimal big-endian two's complement of an unscaled decimal (``-128`` -> ``80``)."""
    size = ((unscaled if unscaled >= 0 else ~unscaled).bit_length() + 8) // 8
    return unscaled.to_bytes(size, "big", signed=True)


def decimal_from_bytes(raw: bytes, scale: int) -> decimal.Decimal:
    """The decimal whose unscaled value is the big-endian two's complement `raw` (exact)."""
    unscaled = int.from_bytes(raw, "big", signed=True)
    digits = tuple(int(d) for d in str(abs(unscaled)))
    return decimal.Decimal((1 if unscaled < 0 else 0, digits, -scale))


def decimal_text(unscaled: int, scale: int) -> str:
    """The plain text (``-0.05``) of ``unscaled * 10**-scale``, exact, with `scale` digits."""
    digits = str(abs(unscaled)).rjust(scale + 1, "0")
    text = f"{digits[:-scale]}.{digits[-scale:]}" if scale else digits
    return "-" + text if unscaled < 0 else text


def unscaled_value(number: decimal.Decimal, scale: int) -> int:
    """The integer ``number * 10**scale`` computed exactly (no context rounding)."""
    sign, digits, exponent = number.as_tuple()
    assert isinstance(exponent, int)
    magnitude = int("".join(map(str, digits)) or "0")
    shift = exponent + scale
    factor: int = 10 ** abs(shift)
    magnitude = magnitude * factor if shift >= 0 else magnitude // factor
    return -magnitude if sign else magnitude
