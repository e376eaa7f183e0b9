"""The compiled reader (`service.core._flatread`): fastavro's values on every body it reads,
and nothing read that fastavro refuses (it leaves every doubtful body to fastavro)."""

from __future__ import annotations

import io
import math
import struct
from typing import Any

import fastavro
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from service.core import record_codec
from service.core.record_codec import RecordCodec
from service.core.schema import generate_schemas
from tests.core.test_record_codec import EXTENDED
from tests.core.test_values import EDGE_ROW, EDGE_TABLE, MIN_ROW, PRECISE, STRINGS
from tests.support.hypothesis_profile import examples

try:
    from service.core._flatread import Reader
except ImportError:  # every test below fails, the first one saying why
    Reader = None

TYPES = ("int", "long", "float", "double", "string", "bytes")
VALUES = {
    "int": st.integers(-(2**31), 2**31 - 1),
    "long": st.integers(-(2**63), 2**63 - 1),
    "float": st.floats(width=32, allow_nan=True, allow_infinity=True),
    "double": st.floats(allow_nan=True, allow_infinity=True),
    "string": st.text(max_size=40),
    "bytes": st.binary(max_size=40),
}


def test_the_compiled_reader_is_built() -> None:
    """`make` builds it (a C compiler is on this machine); without it every body would quietly
    take the slower fastavro path, so the suite insists."""
    assert record_codec.FAST_READER, (
        "service/core/_flatread.c was not built: reinstall with `make` (pip install -e .) on a "
        "machine with a C compiler and Python headers")


Layout = list[tuple[str, str, int | None]]


@st.composite
def layouts_and_rows(draw: st.DrawFn) -> tuple[Layout, dict[str, Any]]:
    count = draw(st.integers(1, 8))
    layout: Layout = [(f"f{i}", draw(st.sampled_from(TYPES)), draw(st.sampled_from([None, 0, 1])))
                      for i in range(count)]
    row = {}
    for name, avro_type, branch in layout:
        value = VALUES[avro_type]
        row[name] = draw(value if branch is None else st.none() | value)
    return layout, row


def avro_schema(layout: Layout) -> Any:
    def field_type(avro_type: str, branch: int | None) -> Any:
        if branch is None:
            return avro_type
        return ["null", avro_type] if branch == 0 else [avro_type, "null"]

    return fastavro.parse_schema({"type": "record", "name": "r", "fields": [
        {"name": n, "type": field_type(t, b)} for n, t, b in layout]})


def fastavro_read(schema: Any, body: bytes) -> dict[str, Any] | None:
    """fastavro's datum of the whole body, or None when it refuses it or leaves bytes over."""
    stream = io.BytesIO(body)
    try:
        datum = fastavro.schemaless_reader(stream, schema, None)
    except Exception:  # noqa: BLE001 - any refusal counts as one
        return None
    return datum if stream.tell() == len(body) else None


def same(a: Any, b: Any) -> bool:
    """Equal values of equal types; floats bit for bit (NaN included)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return struct.pack("<d", a) == struct.pack("<d", b)
    return bool(a == b)


@settings(max_examples=examples(300), suppress_health_check=[HealthCheck.too_slow])
@given(layouts_and_rows())
def test_reads_what_fastavro_reads(case: tuple[Layout, dict[str, Any]]) -> None:
    layout, row = case
    schema = avro_schema(layout)
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, schema, row)
    body = buf.getvalue()
    read = Reader(layout).decode(body)
    assert read is not None, "a canonical body was left to fastavro"
    assert same(read, fastavro_read(schema, body))
    framed = b"\x00\x00\x00\x00\x07" + body
    assert same(Reader(layout).decode(framed, 5), read)


@settings(max_examples=examples(600), suppress_health_check=[HealthCheck.too_slow])
@given(layouts_and_rows(), st.data())
def test_never_reads_a_body_fastavro_refuses(case: tuple[Layout, dict[str, Any]],
                                            data: st.DataObject) -> None:
    """Damaged bodies: whatever the compiled reader accepts, fastavro reads the same."""
    layout, row = case
    schema = avro_schema(layout)
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, schema, row)
    body = bytearray(buf.getvalue())
    for _ in range(data.draw(st.integers(1, 3))):
        how = data.draw(st.sampled_from(["flip", "cut", "insert", "append"]))
        at = data.draw(st.integers(0, len(body)))
        if how == "flip" and at < len(body):
            body[at] = data.draw(st.integers(0, 255))
        elif how == "cut":
            del body[at:]
        elif how == "insert":
            body[at:at] = data.draw(st.binary(min_size=1, max_size=3))
        else:
            body += data.draw(st.binary(min_size=1, max_size=3))
    read = Reader(layout).decode(bytes(body))
    assume(read is not None)
    assert same(read, fastavro_read(schema, bytes(body)))


@pytest.mark.parametrize(("layout", "body", "why"), [
    ([("a", "long", None)], b"\xff" * 10 + b"\x01", "an 11-byte varint"),
    ([("a", "long", None)], b"\xff" * 9 + b"\x02", "a varint over 64 bits"),
    ([("a", "int", None)], b"\x80\x80\x80\x80\x10", "an int over 32 bits"),
    ([("a", "string", 0)], b"\x04\x00", "a union index outside the union"),
    ([("a", "string", 0)], b"\x01\x00", "a negative union index"),
    ([("a", "string", None)], b"\x01", "a negative length"),
    ([("a", "string", None)], b"\x04\xff\xfe", "invalid UTF-8"),
    ([("a", "string", None)], b"\x06ab", "a string longer than the body"),
    ([("a", "double", None)], b"\x00" * 7, "a short double"),
    ([("a", "float", None)], b"\x00" * 3, "a short float"),
    ([("a", "long", None)], b"\x02\x00", "a byte left over"),
    ([("a", "long", None)], b"", "an empty body"),
])
def test_doubtful_bodies_are_left_to_fastavro(layout: Layout, body: bytes, why: str) -> None:
    assert Reader(layout).decode(body) is None, why


def test_a_varint_longer_than_needed_is_read_as_fastavro_reads_it() -> None:
    layout: Layout = [("a", "long", None), ("b", "int", 1)]
    body = b"\x82\x80\x00" + b"\x80\x00" + b"\xff\x80\x00"
    assert Reader(layout).decode(body) == fastavro_read(avro_schema(layout), body) \
        == {"a": 1, "b": -64}


def test_bad_layouts_are_refused_when_compiled() -> None:
    with pytest.raises(ValueError, match="not a flat-avro type"):
        Reader([("a", "boolean", None)])
    with pytest.raises(ValueError, match="null branch"):
        Reader([("a", "long", 2)])
    with pytest.raises(ValueError, match="outside the data"):
        Reader([("a", "long", None)]).decode(b"\x02", 5)


@pytest.mark.parametrize("options", [PRECISE, STRINGS, EXTENDED],
                         ids=["precise-long", "string-string", "extension"])
@pytest.mark.parametrize("row", [EDGE_ROW, MIN_ROW], ids=["max", "min"])
def test_record_codec_decodes_edge_rows_the_same_on_both_paths(options: Any, row: Any) -> None:
    schema = generate_schemas(EDGE_TABLE, options).value_schema
    fast, slow = RecordCodec(schema), RecordCodec(schema)
    slow._fast = None  # fastavro alone, as on a machine without a C compiler
    body = fast.encode(row, update=True, commit_ts=449_000_000_000_000_000)
    assert fast._fast is not None and fast._fast.decode(body) is not None
    decoded = fast.decode(body)
    assert same(decoded, slow.decode(body))
    assert not any(isinstance(v, float) and math.isnan(v) for v in decoded.values())


def test_a_body_left_to_fastavro_decodes_as_before() -> None:
    """An 11-byte varint (which fastavro reads and the compiled reader does not) still
    decodes to fastavro's value."""
    pair = generate_schemas(EDGE_TABLE, PRECISE)
    assert pair.key_schema is not None
    codec = RecordCodec(pair.key_schema, allow_extra=True)
    body = b"\x82" + b"\x80" * 9 + b"\x00"
    assert codec._fast is not None and codec._fast.decode(body) is None
    assert codec.decode(body) == {"id": 1}


ODD_VALUES = [None, True, False, 0, -1, 2**31, -(2**31) - 1, 2**63, -(2**63) - 1, 2**64, 1.5,
              float("nan"), float("inf"), 3.5e38, -3.5e38, 1e308, "", "x", "x" * 300,
              "\ud800", "12.345", "-0.01", "99999999999999999999999999", "AAA=", "not base64!",
              "2024-03-11 08:51:01.461", "10:00:00", "new", "a,b", [], {}, b"raw"]


def _outcome(codec: RecordCodec, row: dict[str, Any]) -> Any:
    try:
        return codec.encode(row, update=True, commit_ts=449_000_000_000_000_000)
    except Exception as exc:  # noqa: BLE001 - compared, type and errors
        errors = getattr(exc, "errors", None)
        return type(exc), None if errors is None else [e.to_dict() for e in errors]


@pytest.mark.parametrize("options", [PRECISE, STRINGS, EXTENDED],
                         ids=["precise-long", "string-string", "extension"])
@settings(max_examples=examples(400), suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_compiled_writer_writes_and_refuses_what_python_does(options: Any,
                                                                  data: st.DataObject) -> None:
    """Edge rows with some columns replaced by odd values (wrong types, out of range, too
    long, lone surrogates, missing, extra): the same bytes, or the same errors, on both
    paths."""
    schema = generate_schemas(EDGE_TABLE, options).value_schema
    fast, slow = RecordCodec(schema), RecordCodec(schema)
    slow._fast_writer = None
    row = dict(data.draw(st.sampled_from([EDGE_ROW, MIN_ROW])))
    for column in data.draw(st.lists(st.sampled_from(sorted(row)), max_size=4, unique=True)):
        if data.draw(st.booleans()):
            del row[column]
        else:
            row[column] = data.draw(st.sampled_from(ODD_VALUES))
    if data.draw(st.integers(0, 9)) == 0:
        row["not_a_column"] = 1
    assert _outcome(fast, row) == _outcome(slow, row)


@pytest.mark.parametrize("options", [PRECISE, STRINGS, EXTENDED],
                         ids=["precise-long", "string-string", "extension"])
@pytest.mark.parametrize("row", [EDGE_ROW, MIN_ROW], ids=["max", "min"])
def test_the_compiled_writer_takes_the_edge_rows(options: Any, row: Any) -> None:
    schema = generate_schemas(EDGE_TABLE, options).value_schema
    codec = RecordCodec(schema)
    assert codec._fast_writer is not None and codec._fast_writer.write(row) is not None
