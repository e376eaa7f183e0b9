"""Golden conversions of every example in TiCDC's protocol documents (docs/flat-avro.md §8).

Each ``golden/<protocol>/<case>.json`` holds the seed's messages (Open Protocol events as
the JSON texts of the seed's log lines, framed here) and what to register first; the
``.expected.json`` beside it holds the ChangeEvents, the conversion response and the
converted messages decoded back. ``FLATAVRO_UPDATE_GOLDEN=1`` rewrites the expected files.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

import orjson
import pytest

from service.cdc.catalog import DECODERS, Protocol
from service.cdc.events import SourceMessage
from service.codec.errors import UnconvertibleMessagesError
from service.core.options import SchemaOptions
from tests.support.cdc import Harness, frame_open_protocol

GOLDEN = Path(__file__).parent / "golden"
CASES = sorted(p for p in GOLDEN.glob("*/*.json") if not p.name.endswith(".expected.json"))
UPDATE = os.environ.get("FLATAVRO_UPDATE_GOLDEN") == "1"


def _messages(protocol: Protocol, case: dict[str, Any]) -> list[tuple[str | None, str | None]]:
    if protocol is Protocol.OPEN_PROTOCOL:
        return [frame_open_protocol(m["keys"], m["values"]) for m in case["messages"]]
    if protocol is Protocol.DEBEZIUM:  # the key and the value, each as TiCDC wrote it
        return [(m["key"], m["value"]) for m in case["messages"]]
    return [(None, orjson.dumps(m).decode()) for m in case["messages"]]


def _events(protocol: Protocol, messages: list[tuple[str | None, str | None]],
            encoding: str) -> list[Any]:
    decoder = DECODERS[protocol](schema_cache_size=16)
    out: list[Any] = []
    for index, (key, value) in enumerate(messages):
        def raw(text: str | None) -> bytes | None:
            if text is None:
                return None
            return base64.b64decode(text) if encoding == "base64" else text.encode()

        decoded = decoder.decode(SourceMessage(index, raw(key), raw(value)))
        out.extend(e.to_json() for e in decoded.events)
        if decoded.pending is not None:
            out.append({"pending": decoded.pending.to_json()})
    return out


@pytest.mark.parametrize("path", CASES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_golden_conversion(path: Path, harness: Harness) -> None:
    case = orjson.loads(path.read_bytes())
    protocol = Protocol(path.parent.name.replace("_", "-"))
    options = SchemaOptions.from_strings(**case.get("options", {}))
    for ddl in case.get("register_ddl", []):
        harness.register_ddl(ddl, options)
    encoding = "base64" if protocol is Protocol.OPEN_PROTOCOL else "utf-8"
    messages = _messages(protocol, case)
    actual: dict[str, Any] = {"events": _events(protocol, messages, encoding)}
    try:
        converted = harness.convert(protocol, messages, encoding=encoding,
                                    register=case.get("register", False), options=options)
        actual["converted"] = converted
        actual["decoded"] = harness.decode(converted)
    except UnconvertibleMessagesError as exc:
        actual["error"] = exc.to_dict()
    expected_path = path.with_name(path.stem + ".expected.json")
    if UPDATE:
        expected_path.write_bytes(orjson.dumps(actual, option=orjson.OPT_INDENT_2) + b"\n")
    expected = orjson.loads(expected_path.read_bytes())
    assert actual == expected


def test_every_protocol_has_golden_cases() -> None:
    assert {p.parent.name for p in CASES} == {p.value.replace("-", "_") for p in Protocol}
