"""The conformance suite every protocol in the catalog passes: the same logical changes
(insert, insert with NULLs, update, key-changing update, delete; every column type), written
in each protocol as TiCDC writes it, convert to byte-identical flat-avro messages, equal to
encoding the changes directly (``ChangeWriter``, what ``/v1/topics/{topic}/encode`` does)."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

import pytest

from service.cdc.catalog import DECODERS, Protocol
from service.codec.writer import ChangeWriter
from service.core.naming import parse_topic_rule
from service.core.options import SchemaOptions
from service.core.table import Table
from tests.cdc import builders
from tests.core.test_values import EDGE_DDL, EDGE_ROW, EDGE_TABLE, MIN_ROW
from tests.support.cdc import DEFAULT_RULE, Harness
from tests.support.harness import run

OPTIONS = SchemaOptions.from_strings(enable_tidb_extension=True)
TS = 449_522_326_498_394_113
NULL_ROW = {c.name: None for c in EDGE_TABLE.columns} | {"id": 2}
UPDATED = dict(EDGE_ROW, s4="changed", dec_neg="1.50", e="a", st="")
MOVED = dict(MIN_ROW, id=3)
CHANGES: list[builders.Change] = [
    ("insert", EDGE_ROW, None, TS),
    ("insert", NULL_ROW, None, TS + 1),
    ("update", UPDATED, EDGE_ROW, TS + 2),
    ("update", MOVED, UPDATED, TS + 3),  # the key changes: DELETE id 1 + INSERT id 3
    ("delete", None, NULL_ROW, TS + 4),
]

Writer = Callable[[Table, list[builders.Change]], list[tuple[str | None, str | None]]]
WRITERS: dict[Protocol, tuple[Writer, str]] = {
    Protocol.CANAL_JSON: (
        lambda t, c: [(None, m) for m in builders.canal_messages(t, c)], "utf-8"),
    Protocol.OPEN_PROTOCOL: (lambda t, c: [builders.open_protocol_message(t, c)], "base64"),
    Protocol.SIMPLE: (lambda t, c: [(None, m) for m in builders.simple_messages(t, c)],
                      "utf-8"),
    Protocol.DEBEZIUM: (lambda t, c: [builders.debezium_ddl(t, EDGE_DDL, TS - 1),
                                      *builders.debezium_messages(t, c)], "utf-8"),
}

# What TiCDC's Debezium encoder cannot carry (docs/flat-avro.md, "Debezium"): DECIMAL as a
# double (15-17 digits), zero dates as 0 or null. Its changes use values it carries exactly.
_DEBEZIUM_EXACT = {"dec_big": "12345.5", "zd": "2024-02-29", "zdt": "2024-02-29 13:14:15"}


def _changes(protocol: Protocol) -> list[builders.Change]:
    if protocol is not Protocol.DEBEZIUM:
        return CHANGES
    return [(op, None if row is None else {**row, **_DEBEZIUM_EXACT},
             None if old is None else {**old, **_DEBEZIUM_EXACT}, ts)
            for op, row, old, ts in CHANGES]


def _reference(harness: Harness, changes: list[builders.Change] = CHANGES
               ) -> list[tuple[str, str | None, str | None]]:

    topic = parse_topic_rule(DEFAULT_RULE).expand(EDGE_TABLE.schema, EDGE_TABLE.table)
    writer = ChangeWriter(run(harness.resolver.topic(topic)))
    out = []
    for op, row, old, ts in changes:
        for kind, key, value in writer.write(op, row, old_row=old, commit_ts=ts):
            out.append((kind, None if key is None else base64.b64encode(key).decode(),
                        None if value is None else base64.b64encode(value).decode()))
    return out


def _converted(result: dict[str, Any]) -> list[tuple[str, str | None, str | None]]:
    return [(m["op"], m["key"], m["value"]) for m in result["messages"]]


def test_the_catalog_lists_every_protocol_folder() -> None:
    assert set(DECODERS) == set(Protocol) == set(WRITERS)


@pytest.mark.parametrize("protocol", list(Protocol), ids=lambda p: p.value)
def test_same_changes_give_identical_flat_avro(protocol: Protocol, harness: Harness) -> None:
    harness.register_ddl(EDGE_DDL, OPTIONS)
    expected = _reference(harness, _changes(protocol))
    assert [e[0] for e in expected] == ["insert", "insert", "update", "delete", "insert",
                                        "delete"]
    write, encoding = WRITERS[protocol]
    result = harness.convert(protocol, write(EDGE_TABLE, _changes(protocol)), encoding=encoding,
                             options=OPTIONS)
    assert _converted(result) == expected
    assert [m["commit_ts"] for m in result["messages"]] == [TS, TS + 1, TS + 2, TS + 3,
                                                            TS + 3, TS + 4]
    decoded = harness.decode(result)
    assert decoded[0]["value"]["_tidb_op"] == "c" and decoded[2]["value"]["_tidb_op"] == "u"


def test_simple_table_schema_registers_what_the_ddl_registers(harness: Harness) -> None:
    write, encoding = WRITERS[Protocol.SIMPLE]
    by_schema = harness.convert(Protocol.SIMPLE, write(EDGE_TABLE, CHANGES), encoding=encoding,
                                register=True, options=OPTIONS)
    harness.register_ddl(EDGE_DDL, OPTIONS)  # the same schemas: nothing new is registered
    assert {(m["key_schema_id"], m["value_schema_id"]) for m in by_schema["messages"]} == \
        {(1, 2)}
    assert _converted(by_schema) == _reference(harness)
