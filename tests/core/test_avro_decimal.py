"""Avro decimal bytes: minimal two's complement, and exact text and unscaled values."""

from __future__ import annotations

import decimal

import pytest

from service.core.avro_decimal import (
    decimal_from_bytes,
    decimal_text,
    decimal_to_bytes,
    unscaled_value,
)


@pytest.mark.parametrize(
    ("unscaled", "hex_bytes"),
    [(0, "00"), (1, "01"), (-1, "ff"), (127, "7f"), (128, "0080"), (-128, "80"),
     (-129, "ff7f"), (255, "00ff"), (32767, "7fff"), (-32768, "8000")],
)
def test_decimal_bytes_are_minimal_twos_complement(unscaled: int, hex_bytes: str) -> None:
    assert decimal_to_bytes(unscaled).hex() == hex_bytes


@pytest.mark.parametrize(
    ("unscaled", "scale", "text"),
    [(0, 0, "0"), (0, 2, "0.00"), (-5, 2, "-0.05"), (12345, 2, "123.45"), (7, 0, "7"),
     (-1234567890, 2, "-12345678.90"), (10**30, 3, "1" + "0" * 27 + ".000")],
)
def test_decimal_text_is_exact_with_scale_digits(unscaled: int, scale: int, text: str) -> None:
    assert decimal_text(unscaled, scale) == text


@pytest.mark.parametrize(
    ("number", "scale", "unscaled"),
    [("1.5", 2, 150), ("-0.05", 2, -5), ("123.456", 2, 12345), ("1E+3", 1, 10000),
     ("0", 4, 0), ("99999999999999999999.99", 2, 9999999999999999999999)],
)
def test_unscaled_value_is_exact(number: str, scale: int, unscaled: int) -> None:
    assert unscaled_value(decimal.Decimal(number), scale) == unscaled


@pytest.mark.parametrize("unscaled", [0, 1, -1, 128, -129, 10**20 + 7, -(10**25)])
def test_bytes_read_back_to_the_same_decimal(unscaled: int) -> None:
    number = decimal_from_bytes(decimal_to_bytes(unscaled), 3)
    assert unscaled_value(number, 3) == unscaled
    assert str(number) == str(decimal.Decimal(unscaled).scaleb(-3))
