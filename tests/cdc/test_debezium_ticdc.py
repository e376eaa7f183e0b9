"""TiCDC's own Debezium encoder as ground truth: the messages tiflow v9.0.0-beta.2.pre (the
v8.5 line's codec) wrote for 90 statements (golden/debezium/v9.0.0-beta.2.pre/README.md), in
each of its 8 option combinations, convert to the same flat-avro rows as the Canal-JSON
messages TiCDC wrote for the same row events, except where the Debezium encoder lost what the
row held (`LOSSY`: each such statement and what happens to it)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import orjson
import pytest

from service.cdc.catalog import Protocol
from service.codec.errors import UnconvertibleMessagesError
from service.core.options import SchemaOptions
from tests.support.cdc import Harness
from tests.support.harness import run

VECTORS = Path(__file__).parent / "golden" / "debezium" / "v9.0.0-beta.2.pre" / "messages.json"
LABELS = [f"schema-{s}_oldvalue-{o}_ext-{e}" for s in ("on", "off") for o in ("on", "off")
          for e in ("on", "off")]
OPTIONS = SchemaOptions.from_strings(enable_tidb_extension=True)
DEFAULT_SPLIT = "split (output-raw-change-event=false, default)"

# What TiCDC's Debezium encoder loses (docs/flat-avro.md, "Debezium"), by statement: the
# columns whose flat-avro value differs from the Canal-JSON message's, or the column the
# message is refused for, or None: TiCDC's encoder wrote no message.
LOSSY: dict[int, tuple[str, frozenset[str] | str | None]] = {
    12: ("refused", "d38_0"),  # 38 nines as a double: 1e38, 39 digits
    23: ("refused", "e"),  # an invalid ENUM value (Canal-JSON's is refused too)
    32: ("differs", frozenset({"d", "dt0", "dt6", "ts0"})),  # zero dates; 0001 -> 2001
    33: ("no message", None),  # DATETIME with month 0: the encoder fails
    34: ("differs", frozenset({"d"})),  # DATE with month 0: null
    35: ("differs", frozenset({"d", "dt0", "dt3", "dt6"})),  # years below 100: +1900/+2000
    46: ("refused", "vb"),  # NULL of a VARBINARY with a default: its raw text, not base64
    47: ("no message", None),  # NULL of an ENUM with a default: the encoder fails
    48: ("no message", None),  # the same for a SET
    49: ("differs", frozenset({"i", "vc"})),  # NULL of a column with a default: the default
    50: ("refused", "vb"),  # as 46 (the row's image)
}
_REFUSED = frozenset(seq for seq, (what, _) in LOSSY.items() if what == "refused")


@functools.cache
def _vectors() -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = orjson.loads(VECTORS.read_bytes())["messages"]
    return messages


def _stream(protocol: str, label: str) -> list[dict[str, Any]]:
    """The messages a topic of that changefeed holds, in order: the row events as the Kafka
    sink sends them (a key-changing update split), and for Debezium the DDL events (encoded
    once per schema setting: the DDL encoder reads no other option)."""
    ddl_label = label.replace("oldvalue-off", "oldvalue-on").replace("ext-on", "ext-off")
    picked = [m for m in _vectors() if m["protocol"] == protocol and m["value"] is not None
              and m.get("update_handling") in (None, "as-is", DEFAULT_SPLIT)
              and (m["label"] == label or (protocol == "debezium" and m["event_kind"] == "ddl"
                                           and m["label"] == ddl_label))]
    return sorted(picked, key=lambda m: (m["seq"], m["event_index"]))


def _convert(harness: Harness, protocol: str, messages: list[dict[str, Any]]
             ) -> dict[tuple[int, int], list[tuple[Any, ...]]]:
    """The flat-avro rows (op, value, key) of each row event, converted in one batch."""
    done = harness.convert(Protocol(protocol), [(m.get("key"), m["value"]) for m in messages],
                           register=True, options=OPTIONS)
    rows: dict[tuple[int, int], list[tuple[Any, ...]]] = {}
    for converted, decoded in zip(done["messages"], harness.decode(done), strict=True):
        source = messages[converted["source_index"]]
        rows.setdefault((source["seq"], source["event_index"]), []).append(
            (decoded["op"], decoded["value"], decoded["key"], converted["commit_ts"]))
    return rows


def _subjects(harness: Harness) -> list[tuple[str, int, str]]:
    """Every registered version: subject, version and schema text."""
    return [(r.subject, r.version, r.schema) for r in run(harness.registry.schemas())]


@pytest.mark.parametrize("label", LABELS)
def test_debezium_converts_as_canal_json_does_but_for_what_it_lost(
        label: str, tmp_path: Path) -> None:
    dbz, canal = Harness(tmp_path / "d.db"), Harness(tmp_path / "c.db")
    stream = [m for m in _stream("debezium", label) if m["seq"] not in _REFUSED]
    got = _convert(dbz, "debezium", stream)
    want = _convert(canal, "canal-json", [m for m in _stream("canal-json", "ext-on")
                                          if m["seq"] not in _REFUSED])
    assert {s for s, _ in want} - {s for s, _ in got} == {
        s for s, (what, _) in LOSSY.items() if what == "no message"}
    compared = 0
    for event, rows in got.items():
        what, columns = LOSSY.get(event[0], ("same", None))
        if what == "differs":
            assert isinstance(columns, frozenset)
            differing = {c for (_, mine, _, _), (_, theirs, _, _) in zip(rows, want[event],
                                                                         strict=True)
                         for c in mine if mine[c] != theirs[c]}
            assert differing == columns, event
        else:
            assert rows == want[event], event
            compared += 1
    assert compared > 50
    # the same tables registered the same schemas, version for version
    assert _subjects(dbz) == _subjects(canal)


@pytest.mark.parametrize("seq", sorted(_REFUSED))
def test_what_the_encoder_lost_is_refused_naming_the_column(seq: int, tmp_path: Path) -> None:
    stream = _stream("debezium", LABELS[0])
    table = next(m["table"] for m in stream if m["seq"] == seq)
    ddl = [m for m in stream if m["event_kind"] == "ddl" and m["table"] == table]
    rows = [m for m in stream if m["seq"] == seq]
    with pytest.raises(UnconvertibleMessagesError) as caught:
        Harness(tmp_path / "r.db").convert(
            Protocol.DEBEZIUM, [(m.get("key"), m["value"]) for m in ddl + rows],
            register=True, options=OPTIONS)
    [error] = caught.value.to_dict()["errors"]
    assert error["column"] == LOSSY[seq][1] and error["message_index"] == len(ddl)
