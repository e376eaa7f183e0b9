"""Row values: plain JSON -> Avro datum -> fastavro binary -> datum -> plain JSON, and errors."""

from __future__ import annotations

import io
from typing import Any

import fastavro
import pytest

from service.core.avro_decimal import decimal_to_bytes
from service.core.ddl import table_from_ddl
from service.core.errors import RowValidationError
from service.core.options import SchemaOptions
from service.core.schema import generate_schemas
from service.core.values import RowCodec, commit_physical_time, extension_values

PRECISE = SchemaOptions()
STRINGS = SchemaOptions.from_strings(decimal_handling_mode="string",
                                     bigint_unsigned_handling_mode="string")

EDGE_DDL = """
CREATE TABLE db.edge (
  id INT NOT NULL PRIMARY KEY,
  i_min INT, i_max INT, ti TINYINT, tu TINYINT UNSIGNED, si SMALLINT, mi MEDIUMINT UNSIGNED,
  iu INT UNSIGNED, bi_min BIGINT, bi_max BIGINT, bu BIGINT UNSIGNED, bu_zero BIGINT UNSIGNED,
  f FLOAT, d DOUBLE,
  dec_big DECIMAL(65,30), dec_neg DECIMAL(10,2), dec_zero DECIMAL(5,0),
  bit64 BIT(64), bit1 BIT(1), bit10 BIT(10),
  zd DATE, zdt DATETIME, zts TIMESTAMP(6), t_min TIME(6), t_max TIME, yr YEAR,
  s4 VARCHAR(10), txt TEXT, bin VARBINARY(8), blb BLOB, bn BINARY(3),
  e ENUM('a','b'), st SET('x','y','z'), st_empty SET('x','y'), js JSON, vec VECTOR(3),
  n_null INT
)"""
EDGE_TABLE = table_from_ddl(EDGE_DDL)

EDGE_ROW: dict[str, Any] = {
    "id": 1, "i_min": -2147483648, "i_max": 2147483647, "ti": -128, "tu": 255,
    "si": -32768, "mi": 16777215, "iu": 4294967295,
    "bi_min": -9223372036854775808, "bi_max": 9223372036854775807,
    "bu": 18446744073709551615, "bu_zero": 0, "f": 3.14, "d": -1.7976931348623157e308,
    "dec_big": "99999999999999999999999999999999999.999999999999999999999999999999",
    "dec_neg": "-12345678.90", "dec_zero": "0",
    "bit64": "//////////8=", "bit1": "AA==", "bit10": "Aqs=",
    "zd": "0000-00-00", "zdt": "0000-00-00 00:00:00", "zts": "2024-03-11 08:51:01.461270",
    "t_min": "-838:59:59.000000", "t_max": "838:59:59", "yr": 0,
    "s4": "😀👍🏽中文", "txt": "line\nbreak \u0000 nul", "bin": "/wCA/w==", "blb": "",
    "bn": "YQAA", "e": "b", "st": "x,z", "st_empty": "", "js": '{"k": [1, 2.5, null]}',
    "vec": "[1,2,3]", "n_null": None,
}


def roundtrip(options: SchemaOptions, row: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
    codec = RowCodec.for_value(EDGE_TABLE, options)
    schema = fastavro.parse_schema(generate_schemas(EDGE_TABLE, options).value_schema)
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, schema, codec.to_datum(row))
    datum = fastavro.schemaless_reader(io.BytesIO(buf.getvalue()), schema, None)
    return codec.from_datum(datum), buf.getvalue()


MIN_ROW = dict(
    EDGE_ROW, dec_big="-99999999999999999999999999999999999.999999999999999999999999999999",
    dec_neg="-0.01", bu=9223372036854775808, bit10="A/8=", bit64="AAAAAAAAAAA=",
    t_min="00:00:00.000000", zts="1970-01-01 00:00:01.000000", txt="", st="x,y,z", f=-3.4028235e38,
)


@pytest.mark.parametrize("options", [PRECISE, STRINGS], ids=["precise-long", "string-string"])
@pytest.mark.parametrize("row", [EDGE_ROW, MIN_ROW], ids=["max", "min"])
def test_edge_values_survive_a_fastavro_round_trip(
    options: SchemaOptions, row: dict[str, Any]
) -> None:
    back, _ = roundtrip(options, row)
    assert back == row


def test_bigint_unsigned_long_mode_wraps_at_two_to_the_63() -> None:
    datum = RowCodec.for_value(EDGE_TABLE, PRECISE).to_datum(MIN_ROW)
    assert datum["bu"] == -9223372036854775808


def test_extension_values() -> None:
    ts = 447984084414103554
    assert extension_values(update=False, commit_ts=ts) == {
        "_tidb_op": "c", "_tidb_commit_ts": ts, "_tidb_commit_physical_time": ts >> 18}
    assert extension_values(update=True, commit_ts=ts)["_tidb_op"] == "u"
    # the seed's INSERT was encoded (buildTs 1708923662983) ~1.1 s after this commit time
    assert commit_physical_time(ts) == 1708923661858


def test_datum_values_are_ticdc_s() -> None:
    datum = RowCodec.for_value(EDGE_TABLE, PRECISE).to_datum(EDGE_ROW)
    assert datum["bu"] == -1  # 18446744073709551615 as the int64 bit pattern
    assert datum["bit64"] == b"\xff" * 8
    assert datum["bit1"] == b"\x00"  # at least one byte
    assert datum["bit10"] == b"\x02\xab"  # 683, leading zero bytes trimmed
    assert datum["dec_neg"] == decimal_to_bytes(-1234567890)
    assert datum["dec_zero"] == b"\x00"
    assert datum["f"] == 3.140000104904175
    strings = RowCodec.for_value(EDGE_TABLE, STRINGS).to_datum(EDGE_ROW)
    assert strings["bu"] == "18446744073709551615"
    assert strings["dec_neg"] == "-12345678.90"


def test_decimal_string_mode_pads_to_scale_and_keeps_trailing_zero_inputs() -> None:
    codec = RowCodec.for_value(EDGE_TABLE, STRINGS)
    row = dict(EDGE_ROW, dec_neg="-5.5", dec_zero=7)
    datum = codec.to_datum(row)
    assert (datum["dec_neg"], datum["dec_zero"]) == ("-5.50", "7")
    assert codec.to_datum(dict(EDGE_ROW, dec_neg="1.500"))["dec_neg"] == "1.50"


def test_non_utf8_binary_and_bit_round_trip_bytes_exactly() -> None:
    back, body = roundtrip(PRECISE, dict(EDGE_ROW, blb="gICA/v8=", bit10="AAE="))
    assert back["blb"] == "gICA/v8="
    assert back["bit10"] == "AAE="  # BIT is decoded at its full width, ceil(10/8) = 2 bytes
    assert b"\x80\x80\x80\xfe\xff" in body


def test_key_codec_reads_the_key_columns_of_a_full_row() -> None:
    codec = RowCodec.for_key(EDGE_TABLE, PRECISE)
    assert codec is not None
    assert codec.to_datum(EDGE_ROW) == {"id": 1}


def test_set_is_normalized_to_definition_order() -> None:
    datum = RowCodec.for_value(EDGE_TABLE, PRECISE).to_datum(dict(EDGE_ROW, st="z,x,z"))
    assert datum["st"] == "x,z"


BAD_VALUES = [
    ("id", None, "NOT NULL"),
    ("ti", 128, "out of range"),
    ("tu", -1, "out of range"),
    ("iu", 4294967296, "out of range"),
    ("bu", 18446744073709551616, "out of range"),
    ("bi_min", "12", "integer"),
    ("i_max", True, "integer"),
    ("f", "3.14", "number"),
    ("f", 1e39, "FLOAT"),
    ("dec_neg", "123456789.00", "integer digits"),
    ("dec_neg", "1e400", "out of range for DECIMAL(10,2): at most 8 integer digits"),
    ("dec_neg", "-123456789.5", "out of range for DECIMAL(10,2): at most 8 integer digits"),
    ("dec_neg", 10**70, "out of range for DECIMAL(10,2)"),
    ("dec_neg", "1.005", "fractional digits"),
    ("dec_neg", "1e-400", "would be rounded"),
    ("d", float("inf"), "inf is out of range for DOUBLE"),
    ("d", float("-inf"), "-inf is out of range for DOUBLE"),
    ("f", float("inf"), "inf is out of range for FLOAT"),
    ("i_max", 1.5, "1.5 is not an integer"),
    ("bi_min", float("inf"), "out of range"),
    ("bi_max", 1e19, "out of range for BIGINT"),
    ("dec_neg", 1.5, "decimal string"),
    ("dec_neg", "abc", "not a decimal"),
    ("dec_neg", "NaN", "finite"),
    ("e", "c", "not a member"),
    ("e", "", "not a member"),
    ("st", "x,w", "not a member"),
    ("bin", "not base64!", "base64"),
    ("bin", "AAAAAAAAAAAA", "exceed"),
    ("bit1", "Ag==", "BIT(1)"),
    ("bit10", 2048, "BIT(10)"),
    ("s4", "x" * 11, "exceed VARCHAR(10)"),
    ("zd", "2021-02-29", "calendar"),
    ("zdt", "2020-01-01 24:00:00", "range"),
    ("t_max", "839:00:00", "range"),
    ("t_max", "10:00:00.5", "fractional"),
    ("yr", 1900, "YEAR"),
    ("js", "{not json", "JSON"),
    ("js", {"a": 1}, "string"),
]


@pytest.mark.parametrize(("column", "value", "reason"), BAD_VALUES)
def test_bad_values_are_refused_naming_the_column(column: str, value: Any, reason: str) -> None:
    codec = RowCodec.for_value(EDGE_TABLE, PRECISE)
    with pytest.raises(RowValidationError) as err:
        codec.to_datum(dict(EDGE_ROW, **{column: value}))
    [error] = err.value.errors
    assert error.details["column"] == column
    assert error.code == "invalid_value"
    assert reason in error.message


def test_every_bad_column_is_listed_and_unknown_and_missing_columns_count() -> None:
    codec = RowCodec.for_value(EDGE_TABLE, PRECISE)
    row = dict(EDGE_ROW, ti=1000, e="nope", extra_col=1)
    del row["id"]
    with pytest.raises(RowValidationError) as err:
        codec.to_datum(row)
    assert [e.details["column"] for e in err.value.errors] == ["id", "ti", "e", "extra_col"]
    assert err.value.code == "invalid_row"
    assert "missing" in err.value.errors[0].message


def test_missing_nullable_column_is_null() -> None:
    row = dict(EDGE_ROW)
    del row["n_null"]
    assert RowCodec.for_value(EDGE_TABLE, PRECISE).to_datum(row)["n_null"] is None


PRICE_TABLE = table_from_ddl("CREATE TABLE db.p (price DECIMAL(12,2))")


@pytest.mark.parametrize(("text", "reason"), [
    ("1e400", "1E+400 is out of range for DECIMAL(12,2): at most 10 integer digits (it has 401)"),
    ("12345678901.5",
     "12345678901.5 is out of range for DECIMAL(12,2): at most 10 integer digits (it has 11)"),
    ("9999999999.999",
     "9999999999.999 has more fractional digits than DECIMAL(12,2) keeps (2); it would be "
     "rounded"),
])
def test_decimal_out_of_range_is_not_called_rounding(text: str, reason: str) -> None:
    with pytest.raises(RowValidationError) as err:
        RowCodec.for_value(PRICE_TABLE, PRECISE).to_datum({"price": text})
    assert [e.details["reason"] for e in err.value.errors] == [reason]


@pytest.mark.parametrize(("text", "kept"), [
    ("0e400", "0.00"), ("9999999999.990", "9999999999.99"), ("-1E+9", "-1000000000.00"),
    ("0.10", "0.10"),
])
def test_decimals_that_fit_are_kept_exactly(text: str, kept: str) -> None:
    assert RowCodec.for_value(PRICE_TABLE, STRINGS).to_datum({"price": text}) == {"price": kept}
