"""Handle-key-only messages made whole from the upstream TiDB (--upstream-tidb-dsn), as TiCDC's
own consumer reads them (``set @@tidb_snapshot``, then the row by its key: the new image at the
commit ts, the old one at commit ts - 1).

Without a server: the messages built from the rows of TiCDC's vectors
(golden/large_message/v9.0.0-beta.2.pre) are the messages TiCDC sent whole (the Open Protocol's
byte for byte; Canal-JSON's and Simple's JSON but for their build times); DSNs are shown without
their password; an unreachable TiDB is named, password hidden. Against a real tidb-server
(deploy/tidb/tidb.sh, the `upstream_tidb` fixture): the vectors' table is made in TiDB, the
vectors' events run there, and the handle-key-only messages, their commit ts rewritten to
TiDB's, convert to the flat-avro the whole messages give (the insert's row as of the insert, not
the later update); a row not there at that ts and a snapshot older than the GC safe point are
refused naming table, key, commit ts and why; `flatavro convert --upstream-tidb-dsn` does the
same."""

from __future__ import annotations

import base64
import functools
import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from service.cdc.catalog import Protocol
from service.cdc.errors import MessageFormatError
from service.cdc.events import SourceMessage
from service.cdc.handle_key_only import Column, completed, key_only, lookups
from service.cdc.large_message import LargeMessages
from service.codec import upstream
from service.codec.claim_check import whole
from service.codec.convert import ConvertInput
from service.codec.upstream import (
    UpstreamTiDBError,
    UpstreamTiDBUnavailableError,
    checked_dsn,
    shown_dsn,
)
from service.core.options import SchemaOptions
from tests.cli.test_schema_cmd import run as run_cli
from tests.support.cdc import DEFAULT_RULE, Harness
from tests.support.harness import free_port, run
from tests.support.tidb import UpstreamTiDB

GOLDEN = Path(__file__).parent / "golden" / "large_message" / "v9.0.0-beta.2.pre"
PROTOCOLS = ("canal-json", "open-protocol", "simple")
KINDS = ("insert", "update", "delete")
# lm.t as information_schema describes it (the vectors' CREATE TABLE).
COLUMNS = [Column("id", "int", "int(11)", False, "PRI", None),
           Column("k", "varchar", "varchar(16)", False, "UNI", "utf8mb4"),
           Column("note", "varchar", "varchar(32)", True, "", "utf8mb4"),
           Column("big", "longtext", "longtext", True, "", "utf8mb4")]
TABLE = ("CREATE TABLE lm.t (id INT PRIMARY KEY, k VARCHAR(16) NOT NULL, note VARCHAR(32), "
         "big LONGTEXT, UNIQUE KEY uk_k (k))")
# Fields a changefeed fills with the time it built the message.
BUILD_TIMES = ("ts", "buildTs")


@functools.cache
def _vectors() -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = orjson.loads((GOLDEN / "messages.json").read_bytes())[
        "messages"]
    return messages


def vector_bytes(message: dict[str, Any], part: str) -> bytes | None:
    text = message.get(part)
    if text is None:
        return None
    return base64.b64decode(text) if message.get(f"{part}_base64") else text.encode()


def key_only_vector(protocol: str, kind: str) -> dict[str, Any]:
    """The large row's handle-key-only message of `kind` (no compression)."""
    [found] = [m for m in _vectors()[1:] if m["label"] == f"{protocol}_handle-key-only_none"
               and m["event_kind"] == kind and m["commit_ts"] != _small_insert_ts(protocol)]
    return found


def _small_insert_ts(protocol: str) -> int:
    return int(next(m["commit_ts"] for m in _vectors()
                    if m["label"] == f"{protocol}_handle-key-only_none"))


def whole_vector(protocol: str, kind: str) -> tuple[bytes | None, bytes]:
    """The same event's whole message: the claim-check object TiCDC stored for it."""
    [found] = [m for m in _vectors() if m["label"] == f"{protocol}_claim-check_none_raw-false"
               and m["event_kind"] == kind and m.get("claim_check_objects")]
    stored = orjson.loads(found["claim_check_objects"][0]["bytes"])
    key = None if stored["key"] is None else base64.b64decode(stored["key"])
    return key, base64.b64decode(stored["value"])


def retimed(data: bytes | None, *, was: int, now: int) -> bytes | None:
    """`data` with the commit ts `was` replaced by `now` (an Open Protocol frame's length
    set again)."""
    if data is None:
        return None
    if data[:8] == (1).to_bytes(8, "big"):  # an Open Protocol key: version, length, JSON
        body = data[16:].replace(str(was).encode(), str(now).encode())
        return data[:8] + len(body).to_bytes(8, "big") + body
    if data[:1] != b"{":  # an Open Protocol value frame
        body = data[8:].replace(str(was).encode(), str(now).encode())
        return len(body).to_bytes(8, "big") + body
    return data.replace(str(was).encode(), str(now).encode())


def _json(protocol: str, value: bytes) -> dict[str, Any]:
    document: dict[str, Any] = orjson.loads(value[8:] if protocol == "open-protocol" else value)
    return {k: v for k, v in document.items() if k not in BUILD_TIMES}


def _rows_of(kind: str) -> list[dict[str, Any]]:
    """The rows TiDB gives for the event (text, as MySQL's text protocol has them): Canal-JSON's
    whole message holds them so."""
    canal = orjson.loads(whole_vector("canal-json", kind)[1])
    return [canal["data"][0]] if kind != "update" else [canal["data"][0], canal["old"][0]]


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("kind", KINDS)
def test_rows_make_the_message_ticdc_sent_whole(protocol: str, kind: str) -> None:
    vector = key_only_vector(protocol, kind)
    message = SourceMessage(0, vector_bytes(vector, "key"), vector_bytes(vector, "value"))
    found = key_only(message, framed=protocol == "open-protocol")
    assert found is not None and (found.schema, found.table, found.kind) == ("lm", "t", kind)
    ts = int(vector["commit_ts"])
    assert [r.ts for r in lookups(found)] == {"insert": [ts], "update": [ts, ts - 1],
                                              "delete": [ts - 1]}[kind]
    key, value = completed(found, columns=COLUMNS, rows=_rows_of(kind))
    whole_key, whole_value = whole_vector(protocol, kind)
    if protocol == "open-protocol":
        assert (key, value) == (whole_key, whole_value)  # byte for byte
    else:
        assert key is None and _json(protocol, value) == _json(protocol, whole_value)


def test_a_type_not_built_is_refused_naming_the_column() -> None:
    vector = key_only_vector("canal-json", "insert")
    found = key_only(SourceMessage(0, None, vector_bytes(vector, "value")), framed=False)
    assert found is not None
    columns = [*COLUMNS, Column("e", "enum", "enum('a','b')", True, "", "utf8mb4")]
    with pytest.raises(MessageFormatError, match=r"column `e` is enum\('a','b'\)") as caught:
        completed(found, columns=columns, rows=[dict(_rows_of("insert")[0],
                                                     e="a")])
    assert caught.value.details["commit_ts"] == int(vector["commit_ts"])


def test_dsns_are_shown_without_their_password() -> None:
    assert shown_dsn("root:s3cr@t@tcp(10.0.0.1:4000)/test") == \
        "root:**********@tcp(10.0.0.1:4000)/test"
    assert shown_dsn("mysql://cdc:p%40ss@tidb:4000/") == "mysql://cdc:**********@tidb:4000/"
    assert shown_dsn("root@tcp(127.0.0.1:4000)/") == "root@tcp(127.0.0.1:4000)/"
    dsn = checked_dsn("cdc:pw@tcp(tidb.local:4001)/")
    assert (dsn.host, dsn.port, dsn.user, dsn.password) == ("tidb.local", 4001, "cdc", "pw")
    assert "pw" not in repr(dsn)
    dsn = checked_dsn("mysql://cdc:p%40ss@tidb:4000")
    assert (dsn.host, dsn.port, dsn.user, dsn.password) == ("tidb", 4000, "cdc", "p@ss")
    with pytest.raises(UpstreamTiDBError) as caught:
        checked_dsn("cdc:hunter2@unix(/tmp/sock)")
    assert "hunter2" not in caught.value.message and "**********" in caught.value.message
    assert "hunter2" not in repr(LargeMessages(upstream_tidb_dsn="cdc:hunter2@tcp(h:1)/"))


def test_an_unreachable_tidb_is_named_with_the_password_hidden() -> None:
    vector = key_only_vector("simple", "insert")
    dsn = f"cdc:hunter2@tcp(127.0.0.1:{free_port()})/"
    with pytest.raises(UpstreamTiDBUnavailableError) as caught:
        whole(SourceMessage(0, None, vector_bytes(vector, "value")),
              LargeMessages(upstream_tidb_dsn=dsn), framed=False)
    text = caught.value.message
    assert "hunter2" not in text and "cdc:**********@tcp(127.0.0.1:" in text
    assert "did not answer after 3 attempts" in text and "`lm`.`t`" in text


# Against a real TiDB.


@pytest.fixture(scope="module")
def lm_table(upstream_tidb: UpstreamTiDB) -> dict[str, int]:
    """lm.t in the TiDB with the vectors' events run there: each event's commit ts."""
    upstream_tidb.run("DROP DATABASE IF EXISTS lm", "CREATE DATABASE lm", TABLE)
    big = orjson.loads(whole_vector("canal-json", "insert")[1])["data"][0]["big"]
    upstream_tidb.committed("INSERT INTO lm.t VALUES (1, 'small-é', 'small row', 'tiny')")
    return {
        "insert": upstream_tidb.committed(
            "INSERT INTO lm.t VALUES (2, 'large', 'large row ✓', %s)", big),
        "update": upstream_tidb.committed("UPDATE lm.t SET note = 'updated' WHERE id = 2"),
        "delete": upstream_tidb.committed("DELETE FROM lm.t WHERE id = 2"),
    }


def _convert(tmp_path: Path, protocol: str, messages: list[tuple[bytes | None, bytes | None]],
             settings: LargeMessages) -> list[dict[str, Any]]:
    harness = Harness(tmp_path / f"{protocol}-{len(list(tmp_path.iterdir()))}.db")
    request = ConvertInput(messages, "raw", DEFAULT_RULE, True, SchemaOptions(),
                           large_messages=settings)
    done = run(harness.converter.convert(Protocol(protocol), request))
    return [{k: v for k, v in r.items() if not k.endswith("schema_id")}
            for r in harness.decode(done)]


@pytest.mark.parametrize("protocol", ["canal-json", "open-protocol"])
def test_key_only_messages_convert_as_the_whole_ones(
        protocol: str, lm_table: dict[str, int], upstream_tidb: UpstreamTiDB,
        tmp_path: Path) -> None:
    key_only_messages, whole_messages = [], []
    for kind in KINDS:
        vector, now = key_only_vector(protocol, kind), lm_table[kind]
        was = int(vector["commit_ts"])
        key_only_messages.append((retimed(vector_bytes(vector, "key"), was=was, now=now),
                                  retimed(vector_bytes(vector, "value"), was=was, now=now)))
        key, value = whole_vector(protocol, kind)
        whole_messages.append((retimed(key, was=was, now=now),
                               retimed(value, was=was, now=now)))
    made = _convert(tmp_path, protocol, key_only_messages,
                    LargeMessages(upstream_tidb_dsn=upstream_tidb.dsn))
    assert made == _convert(tmp_path, protocol, whole_messages, LargeMessages())
    assert [r["op"] for r in made] == ["upsert", "upsert", "delete"]
    assert made[0]["value"]["note"] == "large row ✓"  # as of the insert, not the update
    assert made[1]["value"]["note"] == "updated"
    assert len(made[0]["value"]["big"]) == 8000


def test_simple_key_only_messages_are_made_whole(lm_table: dict[str, int],
                                                 upstream_tidb: UpstreamTiDB) -> None:
    """Simple rows wait for their table's schema (no BOOTSTRAP in the vectors): the messages
    made whole are checked against TiCDC's whole ones."""
    settings = LargeMessages(upstream_tidb_dsn=upstream_tidb.dsn)
    for kind in KINDS:
        vector, now = key_only_vector("simple", kind), lm_table[kind]
        was = int(vector["commit_ts"])
        made = whole(SourceMessage(0, None, retimed(vector_bytes(vector, "value"), was=was,
                                                     now=now)), settings, framed=False)
        want = retimed(whole_vector("simple", kind)[1], was=was, now=now)
        assert _json("simple", made.value or b"") == _json("simple", want or b"")


def test_a_row_not_there_at_the_commit_ts_is_refused(lm_table: dict[str, int],
                                                     upstream_tidb: UpstreamTiDB) -> None:
    vector = key_only_vector("canal-json", "delete")
    was, early = int(vector["commit_ts"]), lm_table["insert"]  # before the insert: no row yet
    value = retimed(vector_bytes(vector, "value"), was=was, now=early)
    with pytest.raises(MessageFormatError) as caught:
        whole(SourceMessage(0, None, value), LargeMessages(upstream_tidb_dsn=upstream_tidb.dsn),
              framed=False)
    details = caught.value.details
    assert (details["schema"], details["table"], details["commit_ts"]) == ("lm", "t", early)
    assert details["key"] == {"id": "2"} and details["read_ts"] == early - 1
    assert f"table `lm`.`t`, key {{\"id\":\"2\"}}, commit ts {early}" in caught.value.message
    assert f"no row with that key at ts {early - 1}" in caught.value.message


def test_a_snapshot_older_than_the_gc_safe_point_is_refused(
        lm_table: dict[str, int], upstream_tidb: UpstreamTiDB) -> None:
    vector = key_only_vector("open-protocol", "insert")
    was, now = int(vector["commit_ts"]), lm_table["insert"]
    message = SourceMessage(0, retimed(vector_bytes(vector, "key"), was=was, now=now),
                            retimed(vector_bytes(vector, "value"), was=was, now=now))
    safe_point = ("INSERT HIGH_PRIORITY INTO mysql.tidb VALUES ('tikv_gc_safe_point', '{0}', "
                  "'') ON DUPLICATE KEY UPDATE variable_value = '{0}'")
    upstream_tidb.run(safe_point.format("20990101-00:00:00 +0000"))
    try:
        with pytest.raises(MessageFormatError) as caught:
            whole(message, LargeMessages(upstream_tidb_dsn=upstream_tidb.dsn), framed=True)
    finally:
        upstream_tidb.run(safe_point.format("20000101-00:00:00 +0000"))
    assert caught.value.details["tidb_error"] == 8055
    assert caught.value.details["commit_ts"] == now
    assert "snapshot is older than the GC safe point" in caught.value.message


def test_flatavro_convert_reads_the_rows(lm_table: dict[str, int],
                                         upstream_tidb: UpstreamTiDB, tmp_path: Path) -> None:
    messages = []
    for kind in KINDS:
        vector = key_only_vector("canal-json", kind)
        value = retimed(vector_bytes(vector, "value"), was=int(vector["commit_ts"]),
                         now=lm_table[kind])
        messages.append(json.dumps({"key": None, "value": (value or b"").decode()}))
    source = tmp_path / "in.ndjson"
    source.write_text("\n".join(messages) + "\n", encoding="utf-8")
    common = ["convert", "--protocol", "canal-json", "--enable-tidb-extension",
              "--registry-file", str(tmp_path / "r.sqlite"), "--register", str(source)]
    refused = run_cli(*common)
    assert refused.returncode == 2 and "--upstream-tidb-dsn" in refused.stderr
    done = run_cli(*common, "--upstream-tidb-dsn", upstream_tidb.dsn)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr
    assert [json.loads(x)["op"] for x in done.stdout.splitlines()] == [
        "insert", "update", "delete"]
    down = run_cli(*common, "--upstream-tidb-dsn", f"root:hunter2@tcp(127.0.0.1:{free_port()})/")
    assert down.returncode != 0 and "hunter2" not in down.stderr + down.stdout
    assert "root:**********@tcp(127.0.0.1:" in down.stderr


def test_a_user_with_a_password_reads_and_a_wrong_one_stops(
        lm_table: dict[str, int], upstream_tidb: UpstreamTiDB) -> None:
    upstream_tidb.run("DROP USER IF EXISTS 'cdc'@'%'",
                      "CREATE USER 'cdc'@'%' IDENTIFIED BY 'p@ss:w/rd'",
                      "GRANT SELECT ON *.* TO 'cdc'@'%'")
    vector = key_only_vector("simple", "insert")
    value = retimed(vector_bytes(vector, "value"), was=int(vector["commit_ts"]),
                     now=lm_table["insert"])
    address = f"tcp(127.0.0.1:{upstream_tidb.port})/"
    made = whole(SourceMessage(0, None, value),
                 LargeMessages(upstream_tidb_dsn=f"cdc:p@ss:w/rd@{address}"), framed=False)
    assert orjson.loads(made.value or b"")["data"]["note"] == "large row ✓"
    with pytest.raises(UpstreamTiDBUnavailableError) as caught:
        whole(SourceMessage(0, None, value),
              LargeMessages(upstream_tidb_dsn=f"cdc:wrong-pw@{address}"), framed=False)
    assert "wrong-pw" not in caught.value.message and "cdc:**********@tcp(" in \
        caught.value.message and "1045" in caught.value.message


TYPES_TABLE = ("CREATE TABLE lm.types (id INT PRIMARY KEY, a TINYINT UNSIGNED, b BIGINT, "
               "d DOUBLE, fl FLOAT, e DATE, f DATETIME(3), g TIME, h YEAR, i CHAR(4), j TEXT, "
               "k BLOB, l JSON, n VARCHAR(8))")
TYPES_ROW = ("INSERT INTO lm.types VALUES (1, 200, -9000000000, 1.5, 0.25, '2024-02-29', "
             "'2024-02-29 12:34:56.789', '12:34:56', 2024, 'ab', 'text é', x'00ff10', "
             "'{\"a\": [1, 2]}', NULL)")


def test_more_column_types_convert_alike_in_canal_json_and_the_open_protocol(
        upstream_tidb: UpstreamTiDB, tmp_path: Path) -> None:
    """Not checked against TiCDC's output (no vectors of these types): the messages made
    whole convert, to the same row in both protocols, with the values inserted."""
    upstream_tidb.run("CREATE DATABASE IF NOT EXISTS lm", "DROP TABLE IF EXISTS lm.types",
                      TYPES_TABLE)
    ts = upstream_tidb.committed(TYPES_ROW)
    canal = orjson.dumps({
        "id": 0, "database": "lm", "table": "types", "pkNames": ["id"], "isDdl": False,
        "type": "INSERT", "es": 1, "ts": 1, "sql": "", "sqlType": {"id": 4},
        "mysqlType": {"id": "int"}, "old": None, "data": [{"id": "1"}],
        "_tidb": {"commitTs": ts, "onlyHandleKey": True}})
    head = orjson.dumps({"ts": ts, "scm": "lm", "tbl": "types", "rid": 1, "t": 1, "ohk": True})
    body = orjson.dumps({"u": {"id": {"t": 3, "h": True, "f": 11, "v": 1}}})
    open_message = ((1).to_bytes(8, "big") + len(head).to_bytes(8, "big") + head,
                    len(body).to_bytes(8, "big") + body)
    settings = LargeMessages(upstream_tidb_dsn=upstream_tidb.dsn)
    [from_canal] = _convert(tmp_path, "canal-json", [(None, canal)], settings)
    [from_open] = _convert(tmp_path, "open-protocol", [open_message], settings)
    assert from_canal == from_open
    assert from_canal["value"] == {  # bytes are base64 in plain JSON
        "id": 1, "a": 200, "b": -9000000000, "d": 1.5, "fl": 0.25, "e": "2024-02-29",
        "f": "2024-02-29 12:34:56.789", "g": "12:34:56", "h": 2024, "i": "ab",
        "j": "text é", "k": "AP8Q", "l": '{"a": [1, 2]}', "n": None}
    simple = orjson.dumps({"version": 1, "database": "lm", "table": "types", "tableID": 1,
                           "type": "INSERT", "commitTs": ts, "buildTs": 1, "schemaVersion": 1,
                           "handleKeyOnly": True, "data": {"id": "1"}})
    made = orjson.loads(whole(SourceMessage(0, None, simple), settings, framed=False).value
                        or b"")
    assert made["data"]["k"] == "AP8Q" and made["data"]["h"] == "2024"  # blobs base64


def test_a_binary_key_is_read_by_its_bytes(upstream_tidb: UpstreamTiDB, tmp_path: Path) -> None:
    """Canal-JSON writes a binary value's bytes as ISO-8859-1 characters: read by the bytes."""
    upstream_tidb.run("CREATE DATABASE IF NOT EXISTS lm", "DROP TABLE IF EXISTS lm.bin",
                      "CREATE TABLE lm.bin (id VARBINARY(8) PRIMARY KEY, v VARCHAR(8))")
    ts = upstream_tidb.committed("INSERT INTO lm.bin VALUES (x'00ff41', 'found')")
    def message(commit_ts: int) -> bytes:
        return orjson.dumps({
            "id": 0, "database": "lm", "table": "bin", "pkNames": ["id"], "isDdl": False,
            "type": "INSERT", "es": 1, "ts": 1, "sql": "", "sqlType": {"id": 2004},
            "mysqlType": {"id": "varbinary"}, "old": None, "data": [{"id": "\x00\xffA"}],
            "_tidb": {"commitTs": commit_ts, "onlyHandleKey": True}})
    settings = LargeMessages(upstream_tidb_dsn=upstream_tidb.dsn)
    [row] = _convert(tmp_path, "canal-json", [(None, message(ts))], settings)
    assert row["value"]["v"] == "found"
    with pytest.raises(MessageFormatError) as caught:
        whole(SourceMessage(0, None, message(ts - 1)), settings, framed=False)
    assert caught.value.details["key"] == {"id": "\x00\xffA"}


def test_a_connection_lost_is_made_again(lm_table: dict[str, int],
                                         upstream_tidb: UpstreamTiDB) -> None:
    """The kept connection, killed by TiDB between two reads, fails once: dropped, the read
    tried again on a new one."""
    vector = key_only_vector("simple", "update")
    value = retimed(vector_bytes(vector, "value"), was=int(vector["commit_ts"]),
                    now=lm_table["update"])
    settings = LargeMessages(upstream_tidb_dsn=upstream_tidb.dsn)
    first = whole(SourceMessage(0, None, value), settings, framed=False)
    kept = upstream._CONNECTIONS[upstream_tidb.dsn]  # noqa: SLF001 - the one to kill
    upstream_tidb.run(f"KILL {kept.thread_id()}")
    again = whole(SourceMessage(0, None, value), settings, framed=False)
    assert again.value == first.value
    assert upstream._CONNECTIONS[upstream_tidb.dsn] is not kept  # noqa: SLF001
    assert orjson.loads(again.value or b"")["old"]["note"] == "large row ✓"
