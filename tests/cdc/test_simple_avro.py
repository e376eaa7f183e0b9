"""The Simple protocol's Avro encoding: the same events and the same flat-avro bytes as the
Simple-JSON twin of every message, and one-line errors naming the byte offset.

Two sources of Simple-Avro messages: golden/simple_avro/ (TiCDC's own encoder, see its
README) and `SimpleAvroWriter` (ours: every Simple-JSON golden case written as Avro).
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import orjson
import pytest

from service.cdc.catalog import Protocol
from service.cdc.errors import MessageFormatError
from service.cdc.events import SourceMessage
from service.cdc.simple import Decoder
from service.cdc.simple.avro import MESSAGE_BRANCH, avro_document, is_avro
from tests.cdc.simple_avro import SimpleAvroWriter
from tests.support.cdc import Harness

GOLDEN = Path(__file__).parent / "golden"
JSON_CASES = sorted(p for p in (GOLDEN / "simple").glob("*.json")
                    if not p.name.endswith(".expected.json"))


def _events(values: list[bytes]) -> list[Any]:
    decoder = Decoder(schema_cache_size=16)
    out: list[Any] = []
    for index, value in enumerate(values):
        decoded = decoder.decode(SourceMessage(index, None, value))
        out.extend(e.to_json() for e in decoded.events)
        if decoded.pending is not None:
            out.append({"pending": decoded.pending.to_json()})
    return out


def _convert(tmp_path: Path, name: str, values: list[bytes], register: bool
             ) -> dict[str, Any]:
    harness = Harness(tmp_path / f"{name}.sqlite")
    try:
        messages = [(None, base64.b64encode(v).decode()) for v in values]
        return harness.convert(Protocol.SIMPLE, messages, encoding="base64", register=register)
    finally:
        harness.close()


def _twins(json_values: list[bytes], avro_values: list[bytes], tmp_path: Path,
           register: bool = True) -> dict[str, Any]:
    """Assert both encodings give the same events and conversion; return the conversion."""
    assert all(is_avro(v) for v in avro_values) and not any(is_avro(v) for v in json_values)
    assert _events(avro_values) == _events(json_values)
    from_json = _convert(tmp_path, "json", json_values, register)
    from_avro = _convert(tmp_path, "avro", avro_values, register)
    assert from_avro == from_json
    return from_json


def _ticdc(case: str, encoding: str) -> list[bytes]:
    lines = (GOLDEN / "simple_avro" / f"{case}.{encoding}.ndjson").read_text("utf-8")
    values = [orjson.loads(line)["value"] for line in lines.splitlines()]
    return [base64.b64decode(v) if encoding == "avro" else v.encode() for v in values]


@pytest.mark.parametrize("case", ["seed", "types"])
def test_ticdc_simple_avro_converts_to_the_bytes_of_its_json_twin(case: str,
                                                                  tmp_path: Path) -> None:
    """TiCDC v8.3.0's own encoder, both encodings (golden/simple_avro/README.md)."""
    avro_values, json_values = _ticdc(case, "avro"), _ticdc(case, "json")
    assert all(v[:1] == b"\x16" for v in avro_values)
    converted = _twins(json_values, avro_values, tmp_path)
    assert [m["op"] for m in converted["messages"]] == (
        ["insert", "update", "delete", "insert"] + (["insert"] if case == "types" else []))


def test_ticdc_table_schemas_read_as_their_json_twins() -> None:
    """`database` -> `schema`, fsp from `length`, BIT default bytes -> number, empty fields
    left out: the Avro form's table schemas are the JSON form's, field for field."""
    for case in ("seed", "types"):
        for raw, text in zip(_ticdc(case, "avro"), _ticdc(case, "json"), strict=True):
            avro, json = avro_document(raw), orjson.loads(text)
            for field in ("tableSchema", "preTableSchema"):
                assert avro.get(field) == json.get(field)
            assert {k: v for k, v in avro.items() if k not in ("buildTs", "data", "old")} == \
                {k: v for k, v in json.items() if k not in ("buildTs", "data", "old")}
            assert avro.keys() == json.keys()


def test_ticdc_64_bit_values() -> None:
    """BIGINT UNSIGNED and BIT(64) 2^64-1 and 2^63 arrive as -1 and -2^63 and are read back."""
    rows = [e for e in _events(_ticdc("types", "avro")) if e["kind"] in ("insert", "update")]
    assert rows[0]["row"]["u"] == rows[0]["row"]["b"] == (1 << 64) - 1
    assert rows[1]["row"]["u"] == rows[1]["row"]["b"] == 1 << 63
    assert rows[0]["row"]["f"] == 0.1 and rows[0]["row"]["dt"] == "2024-02-29 23:59:59.123"


@pytest.mark.parametrize("path", JSON_CASES, ids=lambda p: p.stem)
def test_every_simple_json_golden_case_written_as_avro_converts_alike(
        path: Path, tmp_path: Path) -> None:
    case = orjson.loads(path.read_bytes())
    writer = SimpleAvroWriter()
    for other in JSON_CASES:  # a DML whose BOOTSTRAP is in another case
        for message in orjson.loads(other.read_bytes())["messages"]:
            for field in ("tableSchema", "preTableSchema"):
                if message.get(field):
                    writer.learn(message[field])
    avro_values = [writer.write(m) for m in case["messages"]]
    json_values = [orjson.dumps(m) for m in case["messages"]]
    _twins(json_values, avro_values, tmp_path, case.get("register", False))


def test_avro_datum_reads_as_the_json_document() -> None:
    case = orjson.loads((GOLDEN / "simple" / "seed_sequence.json").read_bytes())
    writer = SimpleAvroWriter()
    bootstrap = avro_document(writer.write(case["messages"][0]))
    assert bootstrap == case["messages"][0]
    ddl = avro_document(writer.write(case["messages"][1]))
    assert ddl == case["messages"][1]
    watermark = avro_document(writer.write(case["messages"][-1]))
    assert watermark == case["messages"][-1]


# --- TiCDC-side facts, on our writer's messages ---------------------------------------------

def _schema(columns: list[tuple[str, dict[str, Any], Any]], version: int = 7
            ) -> dict[str, Any]:
    return {"schema": "db", "table": "t", "tableID": 9, "version": version,
            "columns": [{"name": n, "dataType": dt, "nullable": n != "id", "default": d}
                        for n, dt, d in columns],
            "indexes": [{"name": "PRIMARY", "unique": True, "primary": True,
                         "nullable": False, "columns": ["id"]}]}


BIN = {"charset": "binary", "collate": "binary"}
WIDE = _schema([
    ("id", {"mysqlType": "bigint", **BIN, "length": 20, "unsigned": True}, None),
    ("b", {"mysqlType": "bit", **BIN, "length": 64, "unsigned": True}, 255),
    ("f", {"mysqlType": "float", **BIN, "length": 12}, None),
    ("s", {"mysqlType": "set", "charset": "utf8mb4", "collate": "utf8mb4_bin", "length": 1,
           "elements": [f"m{i}" for i in range(64)]}, None),
    ("dt", {"mysqlType": "datetime", **BIN, "length": 23, "decimal": 3},
     "2020-01-01 00:00:00.000"),
    ("tm", {"mysqlType": "time", **BIN, "length": 17, "decimal": 6}, None),
    ("d", {"mysqlType": "decimal", **BIN, "length": 10, "decimal": 2}, "3.14"),
    ("bl", {"mysqlType": "blob", **BIN, "length": 65535}, None),
])


def _boot(schema: dict[str, Any]) -> dict[str, Any]:
    return {"version": 1, "type": "BOOTSTRAP", "commitTs": 0, "buildTs": 5,
            "tableSchema": schema}


def _insert(data: dict[str, Any], version: int = 7) -> dict[str, Any]:
    return {"version": 1, "database": "db", "table": "t", "tableID": 9, "type": "INSERT",
            "commitTs": 1 << 40, "buildTs": 5, "schemaVersion": version, "data": data}


def test_unsigned_64_bit_float32_fsp_and_bit_default(tmp_path: Path) -> None:
    """BIGINT UNSIGNED, BIT(64) and a 64-member SET arrive as signed longs, FLOAT as a 32-bit
    float, DATETIME(3)/TIME(6) without `decimal`, a BIT default as raw (non-UTF-8) bytes."""
    top = str((1 << 64) - 1)
    documents = [_boot(WIDE), _insert({
        "id": top, "b": top, "f": "0.1", "s": top, "dt": "2024-02-29 23:59:59.123",
        "tm": "-838:59:58.999999", "d": "-12.50", "bl": base64.b64encode(b"\xff\x00").decode()}),
        _insert({"id": "1", "b": "0", "f": "3.4028235e+38", "s": "0", "dt": None, "tm": None,
                 "d": None, "bl": None})]
    writer = SimpleAvroWriter()
    avro_values = [writer.write(d) for d in documents]
    schema = avro_document(avro_values[0])["tableSchema"]
    assert schema == WIDE  # `database` -> `schema`, fsp from `length`, BIT default b"\xff"
    converted = _twins([orjson.dumps(d) for d in documents], avro_values, tmp_path)
    assert len(converted["messages"]) == 2
    [row] = [e["row"] for e in _events(avro_values[:2]) if e["kind"] == "insert"]
    assert row["id"] == row["b"] == row["s"] == (1 << 64) - 1 and row["f"] == 0.1


def test_data_map_order_does_not_matter() -> None:
    """goavro writes maps in random order; the row is the same."""
    writer = SimpleAvroWriter()
    boot = writer.write(_boot(WIDE))
    forward = writer.write(_insert({"id": "1", "f": "1.5", "d": "1.00"}))
    reverse = writer.write(_insert({"d": "1.00", "f": "1.5", "id": "1"}))
    assert forward != reverse
    assert _events([boot, forward]) == _events([boot, reverse])


# --- Errors: one line, with the byte offset ------------------------------------------------

def _error(value: bytes, decoder: Decoder | None = None) -> MessageFormatError:
    with pytest.raises(MessageFormatError) as caught:
        (decoder or Decoder()).decode(SourceMessage(0, None, value))
    assert "\n" not in caught.value.message
    return caught.value


def _good() -> tuple[Decoder, bytes]:
    writer = SimpleAvroWriter()
    decoder = Decoder()
    decoder.decode(SourceMessage(0, None, writer.write(_boot(WIDE))))
    return decoder, writer.write(_insert({"id": "1", "bl": base64.b64encode(b"xyz").decode()}))


def test_cut_off_datum_names_the_field_and_offset() -> None:
    decoder, value = _good()
    cut = value.index(b"xyz") + 2  # inside the BLOB's 3 bytes
    error = _error(value[:cut], decoder)
    assert error.message == (
        f"not a Simple-protocol Avro message: the value ends at byte {cut}, inside the 3-byte "
        f"binary value that starts at byte {cut - 3} (field `payload/data/bl`)")
    assert error.details == {"part": "value", "offset": cut, "field": "payload/data/bl"}
    end = _error(value[:-2], decoder)  # the data map's end and `old` cut off
    assert end.details == {"part": "value", "offset": len(value) - 2, "field": "payload/data"}


def test_bytes_after_the_datum() -> None:
    decoder, value = _good()
    error = _error(value + b"\x00\x00", decoder)
    assert error.message == ("not a Simple-protocol Avro message: 2 bytes after the datum's "
                             f"end at byte {len(value)}")
    assert error.details["offset"] == len(value)


def test_other_union_branch_and_bad_indexes() -> None:
    _, value = _good()
    other = _error(bytes([(MESSAGE_BRANCH - 1) << 1]) + value[1:])
    assert other.details["offset"] == 0
    assert "union branch 10 (DML), not 11 (Message)" in other.message
    bad_enum = _error(value[:1] + b"\x7e" + value[2:])  # MessageType index 63
    assert bad_enum.details == {"part": "value", "offset": 1, "field": "type"}
    assert "enum index 63 at byte 1 is not one of its 4 symbols" in bad_enum.message
    bad_branch = _error(value[:2] + b"\x0e" + value[3:])  # payload branch 7
    assert bad_branch.details["offset"] == 2 and bad_branch.details["field"] == "payload"


def test_control_byte_start_is_read_as_avro_and_json_still_json() -> None:
    assert "not a Simple-protocol Avro message" in _error(b"\x01garbage").message
    assert "not JSON" in _error(b"{nope").message


def test_non_utf8_string_value() -> None:
    writer = SimpleAvroWriter()
    decoder = Decoder()
    decoder.decode(SourceMessage(0, None, writer.write(_boot(WIDE))))
    value = writer.write(_insert({"id": "1", "d": "9.99"}))
    at = value.index(b"9.99")
    error = _error(value[:at] + b"\xff" + value[at + 1:], decoder)
    assert error.details["offset"] == at - 1 and error.details["field"] == "payload/data/d"
    assert "is not UTF-8" in error.message
