"""``POST /v1/convert/{protocol}`` over HTTP: the README's curl example on a real socket,
whole-batch refusal naming message index / byte offset / column, auth for register=true,
pending and skipped events."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from fastapi.testclient import TestClient

from service.api.models import CONVERT_EXAMPLES
from service.api.settings import Settings
from tests.support.api import KEY, ClientFactory
from tests.support.harness import ServedApp

CANAL: dict[str, Any] = CONVERT_EXAMPLES["canal-json"]["value"]
CANAL_MESSAGE = orjson.loads(CANAL["messages"][0]["value"])
TP_INT_DDL = "CREATE TABLE test.tp_int (id INT PRIMARY KEY, c_int INT)"


def canal(**changes: Any) -> dict[str, str]:
    return {"value": orjson.dumps(CANAL_MESSAGE | changes).decode()}


def test_readme_curl_example_over_a_socket(served: ServedApp) -> None:
    with httpx.Client(base_url=served.url, timeout=10) as http:
        done = http.post("/v1/convert/canal-json", json=CANAL)
        assert done.status_code == 200, done.text
        [message] = done.json()["messages"]
        assert message["topic"] == "tidb_test_tp_int" and message["op"] == "insert"
        decoded = http.post("/v1/decode", json={"messages": [
            {"key": message["key"], "value": message["value"]}]}).json()["messages"][0]
    assert decoded["key"] == {"id": 2}
    assert decoded["value"] == {"id": 2, "c_int": 2147483647}


def test_every_bad_message_is_named_and_nothing_is_converted(client: TestClient) -> None:
    client.post("/v1/tables/register", json={"ddl": TP_INT_DDL})
    bad_value = canal(data=[{"id": "3", "c_int": "twelve"}])
    response = client.post("/v1/convert/canal-json", json={"messages": [
        canal(), {"value": "{not json"}, bad_value, canal(data=[{"id": "4", "c_nope": "1"}])]})
    assert response.status_code == 422
    problem = response.json()
    assert problem["code"] == "unconvertible_messages"
    assert problem["failed_messages"] == [1, 2, 3] and problem["converted"] == 0
    by_index = {e["message_index"]: e for e in problem["errors"]}
    assert by_index[1]["code"] == "invalid_cdc_message" and by_index[1]["position"] == 1
    assert by_index[2]["column"] == "c_int" and by_index[2]["field"] == "data/0/c_int"
    assert by_index[3]["column"] == "c_nope"


def _open_protocol(key: bytes, value: bytes) -> dict[str, Any]:
    return {"messages": [{"key": base64.b64encode(key).decode(),
                          "value": base64.b64encode(value).decode()}], "encoding": "base64"}


def test_open_protocol_framing_errors_name_the_byte_offset(client: TestClient) -> None:
    event = b'{"ts":1,"t":3}'
    good_key = (1).to_bytes(8, "big") + len(event).to_bytes(8, "big") + event
    cases = {
        "past the buffer": (good_key[:-3], b"", 8),
        "version 2": ((2).to_bytes(8, "big") + good_key[8:], b"", 0),
        "cut length": (good_key + b"\x00\x00", b"", 30),
    }
    for why, (key, value, offset) in cases.items():
        response = client.post("/v1/convert/open-protocol", json=_open_protocol(key, value))
        assert response.status_code == 422, why
        [error] = response.json()["errors"]
        assert (error["message_index"], error["part"], error["offset"]) == (0, "key", offset), \
            why
    unpaired = _open_protocol(good_key + good_key[8:], (0).to_bytes(8, "big"))
    [error] = client.post("/v1/convert/open-protocol", json=unpaired).json()["errors"]
    assert error["part"] == "value" and "pair by position" in error["message"]


def test_register_needs_a_write_key(make_client: ClientFactory) -> None:
    client = make_client(api_keys=KEY)
    refused = client.post("/v1/convert/canal-json", json=CANAL)
    assert refused.status_code == 401 and refused.json()["code"] == "unauthorized"
    allowed = client.post("/v1/convert/canal-json", json=CANAL, headers={"X-API-Key": KEY})
    assert allowed.status_code == 200
    read_only = client.post("/v1/convert/canal-json", json=CANAL | {"register": False})
    assert read_only.status_code == 200  # registered now: no write needed


def test_unregistered_topic_without_register(client: TestClient) -> None:
    response = client.post("/v1/convert/canal-json", json=CANAL | {"register": False})
    assert response.status_code == 422
    [error] = response.json()["errors"]
    assert error["code"] == "no_schema" and error["topic"] == "tidb_test_tp_int"


def test_the_registered_schema_wins(client: TestClient) -> None:
    ddl = "CREATE TABLE test.t (id INT PRIMARY KEY, d DECIMAL(12,2), e ENUM('x','y'))"
    assert client.post("/v1/tables/register", json={"ddl": ddl}).status_code == 200
    message = {"database": "test", "table": "t", "isDdl": False, "type": "INSERT",
               "pkNames": ["id"], "mysqlType": {"id": "int", "d": "decimal", "e": "enum"},
               "data": [{"id": "1", "d": "10.50", "e": "2"}], "old": None, "es": 1}
    response = client.post("/v1/convert/canal-json", json={
        "messages": [{"value": orjson.dumps(message).decode()}], "register": True})
    assert response.status_code == 200, response.text
    [converted] = response.json()["messages"]
    decoded = client.post("/v1/decode", json={"messages": [converted]}).json()["messages"][0]
    assert decoded["value"] == {"id": 1, "d": "10.50", "e": "y"}


def test_simple_pending_and_skipped(client: TestClient) -> None:
    [bootstrap, insert] = CONVERT_EXAMPLES["simple"]["value"]["messages"]
    first = client.post("/v1/convert/simple", json={"messages": [insert], "register": True})
    assert first.status_code == 200
    assert first.json()["messages"] == []
    [pending] = first.json()["pending"]
    assert pending["source_index"] == 0 and "not known yet" in pending["reason"]
    second = client.post("/v1/convert/simple",
                         json={"messages": [bootstrap, insert], "register": True}).json()
    assert [m["source_index"] for m in second["messages"]] == [1]
    assert second["skipped"][0]["kind"] == "bootstrap"


def test_unknown_protocol_is_refused(client: TestClient) -> None:
    response = client.post("/v1/convert/avro", json=CANAL)
    assert response.status_code == 422


SIMPLE_AVRO = Path(__file__).parents[1] / "cdc" / "golden" / "simple_avro"


def _lines(path: Path) -> list[dict[str, str | None]]:
    return [orjson.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize("case", ["seed", "types"])
def test_simple_avro_converts_to_the_bytes_of_its_json_twin(make_client: ClientFactory,
                                                            tmp_path: Path, case: str) -> None:
    """TiCDC's own Simple encoder, both encodings (golden/simple_avro): the same response."""
    from_json = make_client().post("/v1/convert/simple", json={
        "messages": _lines(SIMPLE_AVRO / f"{case}.json.ndjson"), "register": True})
    other = make_client(registry_db_path=str(tmp_path / "avro.sqlite"))
    from_avro = other.post("/v1/convert/simple", json={
        "messages": _lines(SIMPLE_AVRO / f"{case}.avro.ndjson"), "encoding": "base64",
        "register": True})
    assert from_json.status_code == from_avro.status_code == 200, from_avro.text
    assert from_avro.json() == from_json.json()
    assert len(from_avro.json()["messages"]) >= 4


def test_simple_avro_bad_bytes_name_the_offset(client: TestClient) -> None:
    [boot, insert] = [base64.b64decode(m["value"] or "")
                      for m in _lines(SIMPLE_AVRO / "seed.avro.ndjson")[1:3]]
    response = client.post("/v1/convert/simple", json={"encoding": "base64", "messages": [
        {"value": base64.b64encode(boot).decode()},
        {"value": base64.b64encode(insert[:-4]).decode()}]})
    assert response.status_code == 422
    [error] = response.json()["errors"]
    assert error["message_index"] == 1 and error["part"] == "value"
    assert error["offset"] == len(insert) - 4
    assert error["message"] == (
        f"message 1: not a Simple-protocol Avro message: the value ends at byte "
        f"{len(insert) - 4}, where a long is due (field `payload/data/age`)")
    assert error["field"] == "payload/data/age"


def test_claim_checks_of_a_configured_storage_are_read_and_others_refused(
        make_client: ClientFactory) -> None:
    golden = Path(__file__).parents[1] / "cdc" / "golden" / "large_message" / "v9.0.0-beta.2.pre"
    label = "canal-json_claim-check_lz4_raw-false"
    storage = f"file://{golden}/claim_check_storage/{label}"
    vectors = orjson.loads((golden / "messages.json").read_bytes())["messages"]
    body = {"messages": [{"value": m["value"]} for m in vectors if m["label"] == label],
            "encoding": "base64", "register": True,
            "large_message_handle_compression": "lz4", "claim_check_storage_uri": storage}
    done = make_client(claim_check_storage_uris=storage).post("/v1/convert/canal-json",
                                                              json=body)
    assert done.status_code == 200, done.text
    assert [m["op"] for m in done.json()["messages"]] == ["insert", "insert", "update",
                                                          "delete"]
    refused = make_client().post("/v1/convert/canal-json", json=body)
    assert refused.status_code == 422
    assert refused.json()["code"] == "invalid_claim_check_storage"
    assert refused.json()["field"] == "claim_check_storage_uri"


def test_the_api_allowlist_takes_s3_uris_as_written_and_hides_secrets(
        make_client: ClientFactory) -> None:
    allowed = ("s3://bkt/p?endpoint=http://127.0.0.1:1&access-key=AKIA7Q"
               "&secret-access-key=sk-9z7/+x")
    asked = allowed.replace("sk-9z7/+x", "other-secret")
    body = {"messages": [{"value": "{}"}], "claim_check_storage_uri": asked}
    refused = make_client(claim_check_storage_uris=allowed).post("/v1/convert/canal-json",
                                                                 json=body)
    assert refused.status_code == 422 and refused.json()["code"] == \
        "invalid_claim_check_storage"
    assert "other-secret" not in refused.text and "AKIA7Q" not in refused.text
    assert "secret-access-key=**********" in refused.json()["detail"]
    accepted = make_client(claim_check_storage_uris=allowed).post(
        "/v1/convert/canal-json", json=body | {"claim_check_storage_uri": allowed})
    assert accepted.json().get("code") != "invalid_claim_check_storage", accepted.text
    settings = Settings(claim_check_storage_uris=allowed)
    shown = f"{settings!r} {settings} {settings.redacted()}"
    assert "sk-9z7" not in shown and "AKIA7Q" not in shown


def test_a_claim_check_store_that_hangs_does_not_stall_the_service(tmp_path: Path) -> None:
    """A claim-check read waits on the object store: it runs off the event loop, so while an
    S3 endpoint accepts and never answers, /healthz still answers."""
    import socket
    import threading

    golden = Path(__file__).parents[1] / "cdc" / "golden" / "large_message" / "v9.0.0-beta.2.pre"
    label = "canal-json_claim-check_none_raw-false"
    vectors = orjson.loads((golden / "messages.json").read_bytes())["messages"]
    claim_check = next(m for m in vectors if m["label"] == label and "claimCheckLocation" in
                       m["value"])
    with socket.socket() as hung:
        hung.bind(("127.0.0.1", 0))
        hung.listen(8)  # accepts (the kernel does), never reads or answers
        storage = (f"s3://bkt/p?endpoint=http://127.0.0.1:{hung.getsockname()[1]}"
                   "&access-key=a&secret-access-key=b&region=us-east-1")
        settings = Settings(registry_db_path=str(tmp_path / "r.sqlite"), log_level="WARNING",
                            claim_check_storage_uris=storage)
        from service.api.app import create_app

        app = ServedApp(create_app(settings), health_path="/healthz", lifespan="on").start()
        try:
            body = {"messages": [{"value": claim_check["value"]}], "encoding": "utf-8",
                    "claim_check_storage_uri": storage}
            waiting = threading.Thread(target=lambda: httpx.post(
                f"{app.url}/v1/convert/canal-json", json=body, timeout=120), daemon=True)
            waiting.start()
            waiting.join(1.0)
            assert waiting.is_alive()  # the read is hanging on the store
            assert httpx.get(f"{app.url}/healthz", timeout=5).status_code == 200
        finally:
            app.stop()
