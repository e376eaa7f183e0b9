"""docs/flat-avro.md §7: Confluent wire framing, byte for byte."""

from __future__ import annotations

import pytest

from service.core.errors import FramingError
from service.core.framing import HEADER_SIZE, MAGIC_BYTE, frame, unframe


def test_frame_layout_is_magic_then_big_endian_id_then_body() -> None:
    assert frame(1, b"\x02\x04") == b"\x00\x00\x00\x00\x01\x02\x04"
    assert frame(0x01020304, b"") == bytes.fromhex("0001020304")
    assert frame(2**31 - 1, b"x") == bytes.fromhex("007fffffff") + b"x"
    assert (MAGIC_BYTE, HEADER_SIZE) == (0, 5)


def test_unframe_splits_id_and_body() -> None:
    parsed = unframe(bytes.fromhex("00000001c8") + b"body")
    assert (parsed.schema_id, parsed.body) == (456, b"body")
    assert unframe(b"\x00\x00\x00\x00\x07").body == b""


@pytest.mark.parametrize(
    ("message", "offset"),
    [(b"", 0), (b"\x00", 1), (b"\x00\x00\x00\x01", 4)],
)
def test_truncated_header_names_the_offset(message: bytes, offset: int) -> None:
    with pytest.raises(FramingError) as err:
        unframe(message)
    assert err.value.details["offset"] == offset
    assert err.value.code == "invalid_frame"


def test_wrong_magic_byte_is_refused_at_offset_zero() -> None:
    with pytest.raises(FramingError) as err:
        unframe(b"\x01\x00\x00\x00\x01abc")
    assert err.value.details["offset"] == 0
    assert "0x01" in err.value.message


def test_ids_outside_the_signed_int32_range() -> None:
    with pytest.raises(FramingError):
        frame(2**31, b"")
    with pytest.raises(FramingError):
        frame(-1, b"")
    with pytest.raises(FramingError) as err:
        unframe(b"\x00\xff\xff\xff\xff")
    assert err.value.details["offset"] == 1
