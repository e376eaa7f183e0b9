"""The installed ``flatavro convert`` command: NDJSON in, NDJSON out, honest exit codes."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from service.api.models import CONVERT_EXAMPLES
from service.core.ddl import table_from_ddl
from tests.cdc.builders import canal_messages
from tests.cdc.test_ddl_follow import TS, TYPES, TYPES_2, insert
from tests.cli.test_schema_cmd import run
from tests.support.cdc import frame_open_protocol

ROOT_GOLDEN = Path(__file__).parents[1] / "cdc" / "golden"
PRICES = table_from_ddl("CREATE TABLE shop.prices (id INT PRIMARY KEY, price DECIMAL(10,2))")


def _ndjson(path: Path, messages: list[dict[str, str | None]]) -> str:
    path.write_text("".join(json.dumps(m) + "\n" for m in messages), encoding="utf-8")
    return str(path)


def test_canal_json_to_ndjson(tmp_path: Path) -> None:
    source = _ndjson(tmp_path / "in.ndjson", CONVERT_EXAMPLES["canal-json"]["value"]["messages"])
    registry = str(tmp_path / "r.sqlite")
    refused = run("convert", "--protocol", "canal-json", "--registry-file", registry, source)
    assert refused.returncode == 2 and refused.stdout == ""
    assert "[unconvertible_messages]" in refused.stderr and "register" in refused.stderr
    done = run("convert", "--protocol", "canal-json", "--registry-file", registry,
               "--register", "--enable-tidb-extension", source)
    assert done.returncode == 0, done.stderr
    [line] = done.stdout.splitlines()
    message = json.loads(line)
    assert message["topic"] == "tidb_test_tp_int" and message["value_schema_id"] == 2


def test_open_protocol_lines_in_base64(tmp_path: Path) -> None:
    key, value = frame_open_protocol(
        ['{"ts":415508881418485761,"scm":"test","tbl":"t1","t":1}', '{"ts":1,"t":3}'],
        ['{"u":{"id":{"t":3,"h":true,"f":10,"v":4},"val":{"t":15,"f":64,"v":"ee"}}}', ""])
    source = _ndjson(tmp_path / "in.ndjson", [{"key": key, "value": value}])
    done = run("convert", "--protocol", "open-protocol", "--encoding", "base64",
               "--registry-file", str(tmp_path / "r.sqlite"), "--register", source)
    assert done.returncode == 0, done.stderr
    assert [json.loads(x)["op"] for x in done.stdout.splitlines()] == ["insert"]
    assert json.loads(done.stderr.splitlines()[0])["skipped"]["kind"] == "watermark"


def test_pending_rows_exit_3(tmp_path: Path) -> None:
    insert = CONVERT_EXAMPLES["simple"]["value"]["messages"][1]
    source = _ndjson(tmp_path / "in.ndjson", [insert])
    done = run("convert", "--protocol", "simple", "--registry-file",
               str(tmp_path / "r.sqlite"), source)
    assert done.returncode == 3 and done.stdout == ""
    assert json.loads(done.stderr)["pending"]["schema_version"] == 447984074911121426


def test_a_bad_input_line_is_named(tmp_path: Path) -> None:
    source = tmp_path / "in.ndjson"
    source.write_text('{"value": "{}"}\n[1]\n', encoding="utf-8")
    done = run("convert", "--protocol", "simple", "--registry-file",
               str(tmp_path / "r.sqlite"), str(source))
    assert done.returncode == 2 and done.stdout == "" and "line 2" in done.stderr


def _decimal_insert() -> dict[str, str | None]:
    """A Canal-JSON INSERT in TiCDC's default mode: ``decimal`` without precision or scale."""
    [value] = canal_messages(PRICES, [("insert", {"id": 1, "price": "9.90"}, None, 1 << 40)])
    return {"key": None, "value": value}


def test_hints_name_the_command_line_flags(tmp_path: Path) -> None:
    source = _ndjson(tmp_path / "in.ndjson", [_decimal_insert()])
    convert = ["convert", "--protocol", "canal-json", "--registry-file",
               str(tmp_path / "r.sqlite"), source]
    unregistered = run(*convert)
    [line] = unregistered.stderr.splitlines()
    assert unregistered.returncode == 2 and "[unconvertible_messages]" in line
    assert "convert with --register" in line and "register=true" not in line
    no_precision = run(*convert, "--register")
    [line] = no_precision.stderr.splitlines()
    assert no_precision.returncode == 2 and "[unconvertible_messages]" in line
    assert "--decimal-handling-mode string" in line and "decimal_handling_mode" not in line
    done = run(*convert, "--register", "--decimal-handling-mode", "string")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["topic"] == "tidb_shop_prices"


def test_a_registry_file_in_a_missing_directory_is_refused(tmp_path: Path) -> None:
    source = _ndjson(tmp_path / "in.ndjson", [_decimal_insert()])
    typo = tmp_path / "regsitry" / "r.sqlite"
    done = run("convert", "--protocol", "canal-json", "--registry-file", str(typo),
               "--register", "--decimal-handling-mode", "string", source)
    assert (done.returncode, done.stdout) == (2, "")
    [line] = done.stderr.splitlines()
    assert line.startswith("flatavro: error [registry_store_unavailable]: ")
    assert str(typo) in line and "--registry-file" in line
    assert not typo.parent.exists()


@pytest.mark.parametrize("where", ["under a file", "not a database", "a directory"])
def test_a_registry_file_that_cannot_be_used_is_refused(tmp_path: Path, where: str) -> None:
    source = Path(_ndjson(tmp_path / "in.ndjson", [_decimal_insert()]))
    before = source.read_bytes()
    path = {"under a file": source / "r.sqlite", "not a database": source,
            "a directory": tmp_path}[where]
    done = run("convert", "--protocol", "canal-json", "--registry-file", str(path), str(source))
    assert (done.returncode, done.stdout) == (2, "")
    [line] = done.stderr.splitlines()
    assert "[registry_store_unavailable]" in line and str(path) in line
    assert source.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["in.ndjson"]


def test_a_version_evolved_from_rows_is_a_note_on_stderr(tmp_path: Path) -> None:
    registry = str(tmp_path / "r.sqlite")
    first = _ndjson(tmp_path / "1.ndjson", [insert({"id": 1, "name": "a"}, TYPES, TS + 1)])
    assert run("convert", "--protocol", "canal-json", "--registry-file", registry,
               "--register", first).returncode == 0
    later = _ndjson(tmp_path / "2.ndjson", [insert({"id": 2, "name": "b", "qty": 5}, TYPES_2,
                                                   TS + 2)])
    done = run("convert", "--protocol", "canal-json", "--registry-file", registry,
               "--register", later)
    assert done.returncode == 0, done.stderr
    notes = [json.loads(line)["note"] for line in done.stderr.splitlines() if '"note"' in line]
    assert len(notes) == 1 and "new column(s) `qty`" in notes[0] \
        and notes[0].endswith("(registered as version 2)")


def test_key_columns_on_the_command_line(tmp_path: Path) -> None:
    row = {"value": json.dumps({
        "id": 0, "database": "shop", "table": "pairs", "pkNames": [], "isDdl": False,
        "type": "INSERT", "es": 1, "ts": 0, "sql": "", "sqlType": {"a": 4, "b": 12},
        "mysqlType": {"a": "int", "b": "varchar(8)"}, "data": [{"a": "1", "b": "x"}],
        "old": None})}
    source = _ndjson(tmp_path / "in.ndjson", [row])
    registry = str(tmp_path / "r.sqlite")
    bad = run("convert", "--protocol", "canal-json", "--registry-file", registry, "--register",
              "--key-columns", "pairs=a", source)
    assert bad.returncode == 2
    assert "'pairs=a' is not SCHEMA.TABLE=COLUMN[,COLUMN...]" in bad.stderr
    done = run("convert", "--protocol", "canal-json", "--registry-file", registry, "--register",
               "--key-columns", "shop.pairs=a", source)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["key"] is not None and '"note"' not in done.stderr


SIMPLE_AVRO = Path(__file__).parents[1] / "cdc" / "golden" / "simple_avro"


def test_simple_avro_lines_in_base64_convert_like_their_json_twins(tmp_path: Path) -> None:
    """TiCDC's own Simple encoder, both encodings (golden/simple_avro): the same output."""
    outputs = []
    for encoding, name in (("utf-8", "types.json.ndjson"), ("base64", "types.avro.ndjson")):
        done = run("convert", "--protocol", "simple", "--encoding", encoding, "--register",
                   "--registry-file", str(tmp_path / f"{encoding}.sqlite"),
                   str(SIMPLE_AVRO / name))
        assert done.returncode == 0, done.stderr
        outputs.append((done.stdout, done.stderr))
    assert outputs[0] == outputs[1]
    assert [json.loads(x)["op"] for x in outputs[0][0].splitlines()] == [
        "insert", "update", "delete", "insert", "insert"]


def test_simple_avro_bad_bytes_one_line_with_the_offset(tmp_path: Path) -> None:
    source = _ndjson(tmp_path / "in.ndjson", [{"key": None, "value": "FgYG"}])  # 16 06 06
    done = run("convert", "--protocol", "simple", "--encoding", "base64", "--registry-file",
               str(tmp_path / "r.sqlite"), source)
    assert (done.returncode, done.stdout) == (2, "")
    [line] = done.stderr.splitlines()
    assert "message 0: not a Simple-protocol Avro message: the value ends at byte 3, where an " \
        "int is due (field `payload/version`)" in line


def test_open_protocol_claim_checks_with_snappy(tmp_path: Path) -> None:
    """TiCDC's own claim-check messages (golden/large_message): the whole rows come out."""
    golden = ROOT_GOLDEN / "large_message" / "v9.0.0-beta.2.pre"
    label = "open-protocol_claim-check_snappy_raw-false"
    vectors = json.loads((golden / "messages.json").read_text())["messages"]
    def b64(message: dict[str, Any], part: str) -> str:
        text = message[part]
        return text if message.get(f"{part}_base64") else base64.b64encode(
            text.encode()).decode()

    source = _ndjson(tmp_path / "in.ndjson", [{"key": b64(m, "key"), "value": b64(m, "value")}
                                              for m in vectors if m["label"] == label])
    common = ["convert", "--protocol", "open-protocol", "--encoding", "base64",
              "--registry-file", str(tmp_path / "r.sqlite"), "--register", source]
    refused = run(*common)
    assert refused.returncode == 2 and "claimCheckLocation" not in refused.stdout
    done = run(*common, "--large-message-handle-compression", "snappy",
               "--claim-check-storage-uri", f"file://{golden}/claim_check_storage/{label}")
    assert done.returncode == 0, done.stderr
    assert [json.loads(x)["op"] for x in done.stdout.splitlines()] == [
        "insert", "insert", "update", "delete"]
    bad = run(*common, "--claim-check-storage-uri", "gs://bucket/claims")
    assert bad.returncode == 2 and "gs is not supported" in bad.stderr
    secret = "s3://bucket/claims?endpoint=minio:9000&access-key=AKIA4Q&secret-access-key=s/+k"
    refused = run(*common, "--claim-check-storage-uri", secret)
    assert refused.returncode == 2 and "the endpoint must be a URL with a scheme" in \
        refused.stderr
    assert "AKIA4Q" not in refused.stderr and "s/+k" not in refused.stderr
