"""Large-message handling against TiCDC's own encoders (golden/large_message/
v9.0.0-beta.2.pre/README.md): every claim-check message of Canal-JSON and the Open Protocol,
with each compression and both object forms, converts to the flat-avro the whole message
gives; a compressed value that is not, a missing object, a claim-check without storage and a
location naming no object are refused, naming the location and why."""

from __future__ import annotations

import base64
import functools
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

from service.cdc.catalog import DECODERS, Protocol
from service.cdc.errors import MessageFormatError
from service.cdc.events import SourceMessage
from service.cdc.large_message import Compression, LargeMessages
from service.codec.claim_check import (
    ClaimCheckStorageError,
    checked_storage,
    storage_directory,
    whole,
)
from service.codec.convert import ConvertInput
from service.codec.errors import UnconvertibleMessagesError
from service.core.options import SchemaOptions
from tests.support.cdc import DEFAULT_RULE, Harness
from tests.support.harness import run

GOLDEN = Path(__file__).parent / "golden" / "large_message" / "v9.0.0-beta.2.pre"
BIG = 8000  # the large rows' LONGTEXT: 8000 characters


@functools.cache
def _vectors() -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = orjson.loads((GOLDEN / "messages.json").read_bytes())[
        "messages"]
    return messages


def _bytes(message: dict[str, Any], part: str) -> bytes | None:
    text = message.get(part)
    if text is None:
        return None
    return base64.b64decode(text) if message.get(f"{part}_base64") else text.encode()


def _claim_checks() -> list[str]:
    return sorted({m["label"] for m in _vectors() if "_claim-check_" in m["label"]
                   and not m.get("config_error") and not m["label"].startswith("simple")})


def _settings(label: str, storage: Path) -> LargeMessages:
    compression = Compression(label.split("_")[2])
    return LargeMessages(compression, f"file://{storage / label}", label.endswith("raw-true"))


def _convert(harness: Harness, label: str, settings: LargeMessages) -> list[dict[str, Any]]:
    messages = [m for m in _vectors() if m["label"] == label]
    protocol = Protocol(messages[0]["protocol"])
    request = ConvertInput([(_bytes(m, "key"), _bytes(m, "value")) for m in messages], "raw",
                           DEFAULT_RULE, True, SchemaOptions(), large_messages=settings)
    done = run(harness.converter.convert(protocol, request))
    return [{k: v for k, v in r.items() if not k.endswith("schema_id")}
            for r in harness.decode(done)]


@pytest.mark.parametrize("label", _claim_checks())
def test_claim_check_messages_convert_whole(label: str, tmp_path: Path) -> None:
    rows = _convert(Harness(tmp_path / "r.db"), label,
                    _settings(label, GOLDEN / "claim_check_storage"))
    assert [r["op"] for r in rows] == ["upsert", "upsert", "upsert", "delete"]
    assert [r["key"] for r in rows] == [{"id": 1}, {"id": 2}, {"id": 2}, {"id": 2}]
    assert rows[0]["value"] == {"id": 1, "k": "small-é", "note": "small row", "big": "tiny"}
    large, updated = rows[1]["value"], rows[2]["value"]
    assert (large["k"], large["note"], len(large["big"])) == ("large", "large row ✓", BIG)
    assert updated == dict(large, note="updated")
    plain = "_".join(label.split("_")[:2]) + "_none_raw-false"
    if label != plain:  # every compression and object form: the same rows
        assert rows == _convert(Harness(tmp_path / "p.db"), plain,
                                _settings(plain, GOLDEN / "claim_check_storage"))


def _message(label: str, index: int) -> SourceMessage:
    found = [m for m in _vectors() if m["label"] == label][index]
    return SourceMessage(index, _bytes(found, "key"), _bytes(found, "value"))


@pytest.mark.parametrize(("label", "settings", "text"), [
    ("canal-json_claim-check_snappy_raw-false", LargeMessages(Compression.LZ4),
     "the value is not lz4-compressed"),
    ("canal-json_claim-check_none_raw-false", LargeMessages(),
     "no claim-check-storage-uri is set"),
    ("canal-json_claim-check_none_raw-false",
     LargeMessages(claim_check_storage_uri="file:///nonexistent-flatavro"),
     "is not in the storage (/nonexistent-flatavro/"),
    ("canal-json_claim-check_none_raw-true",
     LargeMessages(claim_check_storage_uri=f"file://{GOLDEN}/claim_check_storage/"
                   "canal-json_claim-check_none_raw-true"),
     "is not TiCDC's {\"key\", \"value\"} JSON"),
    ("canal-json_claim-check_none_raw-false",
     LargeMessages(claim_check_storage_uri=f"file://{GOLDEN}/claim_check_storage/"
                   "canal-json_claim-check_snappy_raw-false", claim_check_raw_value=False),
     "is not in the storage"),
])
def test_what_cannot_be_made_whole_is_refused_naming_why(label: str, settings: LargeMessages,
                                                         text: str) -> None:
    with pytest.raises(MessageFormatError) as caught:
        whole(_message(label, 1), settings, framed=False)
    assert text in str(caught.value)


def test_a_truncated_object_and_a_bad_location_are_refused(tmp_path: Path,
                                                          harness: Harness) -> None:
    label = "canal-json_claim-check_snappy_raw-true"
    storage = tmp_path / label
    shutil.copytree(GOLDEN / "claim_check_storage" / label, storage)
    for stored in storage.iterdir():
        stored.write_bytes(stored.read_bytes()[:100])  # cut short
    with pytest.raises(UnconvertibleMessagesError) as caught:
        _convert(harness, label, _settings(label, tmp_path))
    problems = caught.value.to_dict()["errors"]
    assert [p["message_index"] for p in problems] == [1, 2, 3]
    assert all("is not snappy-compressed" in p["message"] and p["location"].endswith(".json")
               for p in problems)
    value = orjson.loads(_message("canal-json_claim-check_none_raw-false", 1).value or b"")
    value["_tidb"]["claimCheckLocation"] = "file:///tmp/.."
    with pytest.raises(MessageFormatError, match="names no object"):
        whole(SourceMessage(0, None, orjson.dumps(value)),
              LargeMessages(claim_check_storage_uri=f"file://{tmp_path}"), framed=False)


def test_file_and_s3_storages_are_read() -> None:
    """test_claim_check_s3.py reads s3:// on a real store."""
    assert storage_directory("file:///mnt/claims") == Path("/mnt/claims")
    assert checked_storage("file:///mnt/claims") == Path("/mnt/claims")
    with pytest.raises(ClaimCheckStorageError, match="not a file:///path directory"):
        storage_directory("s3://bucket/claims")
    with pytest.raises(ClaimCheckStorageError, match="gs is not supported"):
        checked_storage("gs://bucket/claims")


@pytest.mark.parametrize("label", sorted({m["label"] for m in _vectors() if m["label"].startswith(
    "simple_claim-check_")}))
def test_simple_claim_checks_are_made_whole(label: str) -> None:
    """Simple rows wait for their table's schema (no BOOTSTRAP here): the message made whole
    is checked, its row complete and its location gone."""
    settings = _settings(label, GOLDEN / "claim_check_storage")
    document = orjson.loads(whole(_message(label, 1), settings, framed=False).value or b"")
    assert "claimCheckLocation" not in document and not document.get("handleKeyOnly")
    assert len(document["data"]["big"]) == BIG and document["data"]["note"] == "large row ✓"


@pytest.mark.parametrize("label", sorted({m["label"] for m in _vectors()
                                          if "_handle-key-only_" in m["label"]}))
def test_handle_key_only_messages_are_refused_naming_table_key_and_commit_ts(label: str
                                                                            ) -> None:
    found = [m for m in _vectors() if m["label"] == label][1]  # the large row's insert
    settings = LargeMessages(Compression(label.rsplit("_", 1)[1]))
    message = whole(_message(label, 1), settings,
                    framed=found["protocol"] == "open-protocol")
    decoder = DECODERS[Protocol(found["protocol"])](schema_cache_size=4)
    with pytest.raises(MessageFormatError) as caught:
        decoder.decode(message)
    details = caught.value.details
    assert (details["schema"], details["table"]) == ("lm", "t")
    assert details["commit_ts"] == int(found["commit_ts"])
    assert str(details["key"]["id"]) == "2"  # as the protocol writes it (text or number)
    assert f"commit ts {found['commit_ts']}" in caught.value.message
