"""avro_diagnosis: the field, byte offset and plain reason of a body that does not decode,
over every Avro type flat-avro records use, on bodies fastavro wrote."""

from __future__ import annotations

import io
from typing import Any

import fastavro
import pytest

from service.core.avro_binary import long_bytes
from service.core.avro_diagnosis import Diagnosis, FieldSpec, diagnose, field_offset
from service.core.framing import HEADER_SIZE, frame

SPECS = (
    FieldSpec("i", "int", None),
    FieldSpec("l", "long", None),
    FieldSpec("f", "float", 0),
    FieldSpec("d", "double", 0),
    FieldSpec("s", "string", 0),
    FieldSpec("b", "bytes", 0),
    FieldSpec("t", "string", 1),  # null as the second branch
)
SCHEMA = fastavro.parse_schema({"type": "record", "name": "r", "fields": [
    {"name": "i", "type": "int"}, {"name": "l", "type": "long"},
    {"name": "f", "type": ["null", "float"]}, {"name": "d", "type": ["null", "double"]},
    {"name": "s", "type": ["null", "string"]}, {"name": "b", "type": ["null", "bytes"]},
    {"name": "t", "type": ["string", "null"]},
]})
DATUM = {"i": -1, "l": 1 << 40, "f": 1.5, "d": 2.5, "s": "é", "b": b"\x00\xff", "t": None}
STARTS = [5, 6, 12, 17, 26, 30, 34]
"""Where each field of GOOD starts: header 5, int 1, long 6, then branch + value each."""


def framed(datum: dict[str, Any]) -> bytes:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, SCHEMA, datum)
    return frame(7, buf.getvalue())


GOOD = framed(DATUM)


@pytest.mark.parametrize("datum", [DATUM, dict(DATUM, f=None, d=None, s=None, b=None, t="x"),
                                   dict(DATUM, i=-(1 << 31), l=-(1 << 63), s="", b=b"")],
                         ids=["values", "nulls", "extremes"])
def test_a_body_fastavro_wrote_reads_well(datum: dict[str, Any]) -> None:
    assert diagnose(framed(datum), HEADER_SIZE, fields=SPECS) is None


def test_field_offsets_are_where_each_field_starts() -> None:
    assert len(GOOD) == 35
    assert [field_offset(GOOD, HEADER_SIZE, fields=SPECS, name=s.name) for s in SPECS] == STARTS
    assert field_offset(GOOD[:20], HEADER_SIZE, fields=SPECS, name="t") is None  # cut before it


def replaced(at: int, new: bytes, *, drop: int = 0) -> bytes:
    return GOOD[:at] + new + GOOD[at + drop:]


CASES = [
    ("empty body", GOOD[:5],
     Diagnosis("i", 5, "field `i`: ran out of bytes at byte 5 reading the int that starts "
                       "at byte 5 (message is 5 bytes)")),
    ("long cut", GOOD[:8],
     Diagnosis("l", 8, "field `l`: ran out of bytes at byte 8 reading the long that starts "
                       "at byte 6 (message is 8 bytes)")),
    ("varint too long", replaced(5, b"\x80" * 10 + b"\x01", drop=1),
     Diagnosis("i", 5, "field `i`: the int at byte 5 is a varint longer than 10 bytes")),
    ("float cut", GOOD[:15],
     Diagnosis("f", 15, "field `f`: ran out of bytes at byte 15 reading the 4-byte float "
                        "that starts at byte 13 (message is 15 bytes)")),
    ("union branch 2", replaced(12, b"\x04", drop=1),
     Diagnosis("f", 12, "field `f`: union branch 2 at byte 12 does not exist (the field is "
                        "null or float: branch 0 or 1)")),
    ("union branch -1", replaced(17, b"\x01", drop=1),
     Diagnosis("d", 17, "field `d`: union branch -1 at byte 17 does not exist (the field is "
                        "null or double: branch 0 or 1)")),
    ("double cut", GOOD[:25],
     Diagnosis("d", 25, "field `d`: ran out of bytes at byte 25 reading the 8-byte double "
                        "that starts at byte 18 (message is 25 bytes)")),
    ("invalid UTF-8 first byte", replaced(28, b"\xfe\xff", drop=2),
     Diagnosis("s", 28, "field `s`: string is not valid UTF-8 at byte 28")),
    ("invalid UTF-8 second byte", replaced(28, b"a\xff", drop=2),
     Diagnosis("s", 29, "field `s`: string is not valid UTF-8 at byte 29")),
    ("string length past the end", GOOD[:27] + long_bytes(50) + b"ab",
     Diagnosis("s", 30, "field `s`: ran out of bytes at byte 30: the string at byte 27 says "
                        "50 byte(s), 2 are left (message is 30 bytes)")),
    ("negative bytes length", replaced(31, long_bytes(-3), drop=1),
     Diagnosis("b", 31, "field `b`: negative length -3 for the bytes value at byte 31")),
    ("null-second union cut", GOOD[:34],
     Diagnosis("t", 34, "field `t`: ran out of bytes at byte 34 reading the union branch "
                        "that starts at byte 34 (message is 34 bytes)")),
    ("left over", GOOD + b"\x00\x00",
     Diagnosis(None, 35, "2 byte(s) left over after the record (it ends at byte 35, message "
                         "is 37 bytes)")),
]


@pytest.mark.parametrize(("data", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_each_failure_names_field_offset_and_reason(data: bytes, expected: Diagnosis) -> None:
    assert diagnose(data, HEADER_SIZE, fields=SPECS) == expected


@pytest.mark.parametrize("cut", range(HEADER_SIZE, len(GOOD)))
def test_every_cut_runs_out_at_the_end_in_the_field_that_holds_it(cut: int) -> None:
    found = diagnose(GOOD[:cut], HEADER_SIZE, fields=SPECS)
    assert found is not None
    holder = max(i for i, start in enumerate(STARTS) if start <= cut)
    assert (found.field, found.offset) == (SPECS[holder].name, cut)
    assert "ran out of bytes" in found.reason and f"message is {cut} bytes" in found.reason


def test_offsets_count_from_the_data_given() -> None:
    body = GOOD[HEADER_SIZE:]
    found = diagnose(body[:3], 0, fields=SPECS)
    assert found == Diagnosis("l", 3, "field `l`: ran out of bytes at byte 3 reading the long "
                                      "that starts at byte 1 (message is 3 bytes)")
