"""RecordCodec: rows encoded against a registered schema, byte-compared with fastavro."""

from __future__ import annotations

import io
from typing import Any

import fastavro
import pytest

from service.core.avro_binary import long_bytes
from service.core.errors import RowValidationError
from service.core.framing import HEADER_SIZE, frame
from service.core.options import SchemaOptions
from service.core.record_codec import BodyDecodeError, RecordCodec
from service.core.record_schema import NotFlatAvroError, record_layout
from service.core.schema import generate_schemas
from service.core.values import RowCodec
from tests.core.test_values import EDGE_ROW, EDGE_TABLE, MIN_ROW, PRECISE, STRINGS

EXTENDED = SchemaOptions(enable_tidb_extension=True)


def fastavro_bytes(schema: dict[str, Any], datum: dict[str, Any]) -> bytes:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(schema), datum)
    return buf.getvalue()


@pytest.mark.parametrize("options", [PRECISE, STRINGS, EXTENDED],
                         ids=["precise-long", "string-string", "extension"])
@pytest.mark.parametrize("row", [EDGE_ROW, MIN_ROW], ids=["max", "min"])
def test_bytes_equal_fastavro_and_decode_back(options: SchemaOptions, row: dict[str, Any]
                                              ) -> None:
    schema = generate_schemas(EDGE_TABLE, options).value_schema
    datum = RowCodec.for_value(EDGE_TABLE, options).to_datum(row)
    extension = {"_tidb_op": "u", "_tidb_commit_ts": 449_000_000_000_000_000,
                 "_tidb_commit_physical_time": 449_000_000_000_000_000 >> 18}
    if options.enable_tidb_extension:
        datum.update(extension)
    codec = RecordCodec(schema)
    body = codec.encode(row, update=True, commit_ts=449_000_000_000_000_000)
    assert body == fastavro_bytes(schema, datum)
    expected = dict(row, **extension) if options.enable_tidb_extension else row
    assert codec.decode(body) == expected


def test_key_record_reads_a_whole_row() -> None:
    pair = generate_schemas(EDGE_TABLE, PRECISE)
    assert pair.key_schema is not None
    codec = RecordCodec(pair.key_schema, allow_extra=True)
    body = codec.encode(EDGE_ROW)
    assert body == long_bytes(1)
    assert codec.decode(body) == {"id": 1}


def test_layout_keeps_what_the_schema_records() -> None:
    layout = record_layout(generate_schemas(EDGE_TABLE, PRECISE).value_schema)
    by_name = {f.column.name: f for f in layout.fields}
    assert (by_name["dec_neg"].column.type.precision, by_name["dec_neg"].column.type.scale) \
        == (10, 2)
    assert by_name["e"].column.type.elements == ("a", "b")
    assert by_name["bit10"].column.type.bit_width == 10
    assert by_name["id"].null_branch is None and by_name["i_min"].null_branch == 0
    assert not layout.extension


def test_temporal_fraction_is_kept_as_written_when_the_schema_does_not_say() -> None:
    codec = RecordCodec(generate_schemas(EDGE_TABLE, PRECISE).value_schema)
    row = dict(EDGE_ROW, zdt="2024-02-29 10:00:00.5", zts="2024-03-11T08:51:01")
    back = codec.decode(codec.encode(row))
    assert (back["zdt"], back["zts"]) == ("2024-02-29 10:00:00.5", "2024-03-11 08:51:01")


def test_every_bad_column_is_reported() -> None:
    codec = RecordCodec(generate_schemas(EDGE_TABLE, PRECISE).value_schema)
    row = dict(EDGE_ROW, id=None, ti="x", dec_neg="1.234", e="c", zd="2023-02-29", nope=1)
    with pytest.raises(RowValidationError) as caught:
        codec.encode(row)
    assert {e.details["column"] for e in caught.value.errors} == \
        {"id", "ti", "dec_neg", "zd", "e", "nope"}


@pytest.mark.parametrize("extra", [b"\x00", b"\x00\x00\x00"])
def test_left_over_bytes_are_refused_with_the_offset(extra: bytes) -> None:
    codec = RecordCodec(generate_schemas(EDGE_TABLE, PRECISE).value_schema)
    body = codec.encode(EDGE_ROW)
    with pytest.raises(BodyDecodeError) as caught:
        codec.decode(body + extra)
    assert caught.value.offset == len(body)


def test_truncated_body_is_refused() -> None:
    codec = RecordCodec(generate_schemas(EDGE_TABLE, PRECISE).value_schema)
    with pytest.raises(BodyDecodeError):
        codec.decode(codec.encode(EDGE_ROW)[:-3])


def test_a_schema_without_tidb_types_is_not_flat_avro() -> None:
    with pytest.raises(NotFlatAvroError) as caught:
        RecordCodec({"type": "record", "name": "r", "fields": [{"name": "a", "type": "int"}]})
    assert caught.value.details["field"] == "a"


def test_a_decode_error_names_the_field_and_offset_in_plain_words() -> None:
    codec = RecordCodec(generate_schemas(EDGE_TABLE, PRECISE).value_schema)
    framed = frame(3, codec.encode(dict(EDGE_ROW, s4="abc")))
    at = framed.index(b"abc")  # s4's characters; make the second one invalid UTF-8
    broken = framed[:at + 1] + b"\xfe" + framed[at + 2:]
    with pytest.raises(BodyDecodeError) as caught:
        codec.decode(broken, HEADER_SIZE)
    assert (caught.value.field, caught.value.offset) == ("s4", at + 1)
    assert str(caught.value) == f"field `s4`: string is not valid UTF-8 at byte {at + 1}"


@pytest.mark.parametrize("options", [PRECISE, STRINGS, EXTENDED],
                         ids=["precise-long", "string-string", "extension"])
def test_every_cut_of_a_body_names_a_field_never_a_python_exception(options: SchemaOptions
                                                                    ) -> None:
    schema = generate_schemas(EDGE_TABLE, options).value_schema
    codec = RecordCodec(schema)
    body = codec.encode(EDGE_ROW)
    names = [f["name"] for f in schema["fields"]]
    for cut in range(len(body)):
        with pytest.raises(BodyDecodeError) as caught:
            codec.decode(body[:cut])
        assert caught.value.field in names and caught.value.offset == cut
        assert str(caught.value).startswith(f"field `{caught.value.field}`: ran out of bytes")
        assert "Error" not in str(caught.value) and "Expected" not in str(caught.value)


def test_a_cut_inside_a_decimal_names_the_decimal() -> None:
    codec = RecordCodec(generate_schemas(EDGE_TABLE, PRECISE).value_schema)
    body = codec.encode(EDGE_ROW)
    start = field_start(codec, body, "dec_big")
    with pytest.raises(BodyDecodeError) as caught:
        codec.decode(body[:start + 4])  # branch, length, then 2 of the decimal's bytes
    assert caught.value.field == "dec_big"
    assert "the bytes value at byte" in str(caught.value)


def field_start(codec: RecordCodec, body: bytes, name: str) -> int:
    """Where `name` starts in `body`, found by cutting the body until the error names it."""
    return next(cut for cut in range(len(body))
                if _field_of_cut(codec, body[:cut]) == name)


def _field_of_cut(codec: RecordCodec, data: bytes) -> str | None:
    try:
        codec.decode(data)
    except BodyDecodeError as exc:
        return exc.field
    return None


@pytest.mark.parametrize(("options", "column", "datum_value", "reason"), [
    (PRECISE, "bit10", b"\x04\x00", "1024 does not fit in BIT(10)"),
    (STRINGS, "bu", "12a", "'12a' is not an unsigned integer"),
    (STRINGS, "bu", "18446744073709551616", "out of range for BIGINT UNSIGNED"),
])
def test_a_value_the_column_cannot_hold_is_named_with_its_offset(
        options: SchemaOptions, column: str, datum_value: Any, reason: str) -> None:
    schema = generate_schemas(EDGE_TABLE, options).value_schema
    datum = RowCodec.for_value(EDGE_TABLE, options).to_datum(EDGE_ROW)
    body = fastavro_bytes(schema, dict(datum, **{column: datum_value}))
    codec = RecordCodec(schema)
    with pytest.raises(BodyDecodeError) as caught:
        codec.decode(body)
    assert caught.value.field == column
    assert caught.value.offset == field_start(codec, body, column)
    assert reason in str(caught.value)
    assert str(caught.value).startswith(f"field `{column}`: ")


def test_text_utf8_cannot_carry_is_named_in_plain_words() -> None:
    codec = RecordCodec(generate_schemas(EDGE_TABLE, PRECISE).value_schema)
    with pytest.raises(RowValidationError) as caught:
        codec.encode(dict(EDGE_ROW, txt="ok\ud800"))
    [error] = caught.value.errors
    assert error.details == {"column": "txt",
                             "reason": "character 2 (U+D800) is not text UTF-8 can carry"}
