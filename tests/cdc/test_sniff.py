"""A message read with the wrong protocol says which protocol it looks like."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from service.cdc.catalog import Protocol
from service.cdc.events import SourceMessage
from service.cdc.sniff import likely_protocol
from service.codec.errors import UnconvertibleMessagesError
from tests.support.cdc import Harness, frame_open_protocol

ROOT = Path(__file__).resolve().parents[2]
CANAL = json.loads((ROOT / "examples" / "canal-insert.json").read_text())["messages"][0]["value"]
SIMPLE = json.dumps({"version": 1, "type": "WATERMARK", "commitTs": 447984114025889793})
DEBEZIUM = json.dumps({"payload": {"source": {"commit_ts": 1}, "op": "m"}})
OPEN_KEY, OPEN_VALUE = frame_open_protocol(
    ['{"ts":415508881418485761,"scm":"test","tbl":"t1","t":1}'],
    ['{"u":{"id":{"t":3,"h":true,"v":1}}}'])


@pytest.mark.parametrize(("key", "value", "expected"), [
    (None, CANAL.encode(), Protocol.CANAL_JSON),
    (None, SIMPLE.encode(), Protocol.SIMPLE),
    (None, DEBEZIUM.encode(), Protocol.DEBEZIUM),
    (base64.b64decode(OPEN_KEY), base64.b64decode(OPEN_VALUE), Protocol.OPEN_PROTOCOL),
    (None, b'{"id": 1}', None),
    (None, b"not json", None),
    (None, None, None),
])
def test_likely_protocol(key: bytes | None, value: bytes | None,
                         expected: Protocol | None) -> None:
    assert likely_protocol(SourceMessage(0, key, value)) is expected


def test_canal_json_read_as_open_protocol_names_canal_json(harness: Harness) -> None:
    with pytest.raises(UnconvertibleMessagesError) as refused:
        harness.convert(Protocol.OPEN_PROTOCOL, [(None, CANAL)])
    [error] = refused.value.to_dict()["errors"]
    assert error["message"] == (
        "message 0: an Open Protocol message needs a key; the message looks like Canal-JSON, "
        "not Open Protocol: is the protocol canal-json?")
    assert error["likely_protocol"] == "canal-json" and error["part"] == "key"


def test_open_protocol_read_as_canal_json_names_open_protocol(harness: Harness) -> None:
    with pytest.raises(UnconvertibleMessagesError) as refused:
        harness.convert(Protocol.CANAL_JSON, [(OPEN_KEY, OPEN_VALUE)], encoding="base64")
    [error] = refused.value.to_dict()["errors"]
    assert error["message"].endswith("is the protocol open-protocol?")


def test_debezium_read_as_canal_json_names_debezium(harness: Harness) -> None:
    with pytest.raises(UnconvertibleMessagesError) as refused:
        harness.convert(Protocol.CANAL_JSON, [(None, DEBEZIUM)])
    [error] = refused.value.to_dict()["errors"]
    assert error["message"].endswith("the message looks like Debezium, not Canal-JSON: is the "
                                     "protocol debezium?")
