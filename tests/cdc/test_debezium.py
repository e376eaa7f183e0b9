"""The Debezium decoder on its own: what it refuses (naming the field and column), what it
takes from a DDL event's tableChanges, replays of a table's DDL, and what a row alone leaves
unknown. TiCDC's own encoder's output is checked in tests/cdc/test_debezium_ticdc.py."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from service.cdc.catalog import Protocol
from service.cdc.debezium import Decoder
from service.cdc.debezium.columns import split_members
from service.cdc.errors import MessageFormatError
from service.cdc.events import EventKind, SourceMessage
from service.codec.errors import UnconvertibleMessagesError
from service.core.ddl import table_from_ddl
from service.core.options import SchemaOptions
from tests.cdc import builders
from tests.support.cdc import Harness

DDL = ("CREATE TABLE shop.items (id INT UNSIGNED PRIMARY KEY, price DECIMAL(10,4), "
       "at DATETIME(2), d DOUBLE, name VARCHAR(8), raw VARBINARY(4), big BIGINT UNSIGNED)")
TABLE = table_from_ddl(DDL)
TS = 449_522_326_498_394_113
ROW = {"id": 7, "price": "12.5000", "at": "2024-02-29 13:14:15.25", "d": 1.5, "name": "é",
       "raw": "/wA=", "big": 18446744073709551615}


def _message(index: int, pair: tuple[str, str]) -> SourceMessage:
    return SourceMessage(index, pair[0].encode(), pair[1].encode())


def _insert(ts: int = TS, row: dict[str, Any] | None = None) -> tuple[str, str]:
    return builders.debezium_messages(TABLE, [("insert", row or ROW, None, ts)])[0]


def _without_tidb_type(pair: tuple[str, str]) -> tuple[str, str]:
    value = orjson.loads(pair[1])
    for image in value["schema"]["fields"]:
        for field in image["fields"]:
            field.pop("tidb_type")
    return pair[0], orjson.dumps(value).decode()


def test_a_ddl_event_gives_the_exact_types_its_rows_need() -> None:
    decoder = Decoder()
    ddl = decoder.decode(_message(0, builders.debezium_ddl(TABLE, DDL, TS - 1))).events[0]
    assert (ddl.kind, ddl.schema, ddl.table, ddl.query) == (EventKind.DDL, "shop", "items", DDL)
    row = decoder.decode(_message(1, _insert())).events[0]
    assert row.kind is EventKind.INSERT and row.commit_ts == TS
    assert row.row == {"id": 7, "price": "12.5000", "at": "2024-02-29 13:14:15.25",
                       "d": 1.5, "name": "é", "raw": b"\xff\x00",
                       "big": 18446744073709551615}
    assert row.definition is not None and row.definition.key == ("id",)
    assert row.definition.missing == ()


def test_a_row_alone_refuses_the_values_that_need_facts_it_lacks() -> None:
    with pytest.raises(MessageFormatError) as caught:
        Decoder().decode(_message(0, _insert()))
    assert caught.value.details["column"] == "price"
    assert caught.value.details["field"] == "payload/after/price"
    assert "DECIMAL precision and scale" in caught.value.message
    # the same row without DECIMAL and DATETIME values decodes (tidb_type says the rest)
    row = Decoder().decode(_message(0, _insert(row={**ROW, "price": None, "at": None})))
    assert row.events[0].row is not None and row.events[0].row["big"] == 18446744073709551615


def test_without_tidb_type_a_row_lists_what_its_definition_lacks() -> None:
    pair = _without_tidb_type(_insert(row={**ROW, "price": None, "at": None, "d": None,
                                          "name": None, "raw": None}))
    event = Decoder().decode(_message(0, pair)).events[0]
    assert event.definition is not None
    missing = {(m.column, m.fact.split(" (")[0]) for m in event.definition.missing}
    assert missing == {("id", "the integer type"), ("big", "the integer type"),
                       ("d", "whether it is DOUBLE or DECIMAL"),
                       ("price", "whether it is DOUBLE or DECIMAL"),
                       ("name", "whether it is text or binary"),
                       ("raw", "whether it is text or binary")}
    with pytest.raises(MessageFormatError, match="whether it is text or binary"):
        Decoder().decode(_message(0, _without_tidb_type(_insert(row={
            **ROW, "price": None, "at": None, "d": None}))))


def test_a_row_read_again_after_an_alter_gets_the_types_of_its_commit_ts() -> None:
    decoder = Decoder()
    decoder.decode(_message(0, builders.debezium_ddl(TABLE, DDL, TS - 10)))
    wider = table_from_ddl(DDL.replace("DATETIME(2)", "DATETIME(1)"))
    decoder.decode(_message(1, builders.debezium_ddl(wider, "ALTER ...", TS + 10)))
    old = decoder.decode(_message(2, _insert(TS))).events[0]
    assert old.row is not None and old.row["at"] == "2024-02-29 13:14:15.25"
    new = decoder.decode(_message(3, builders.debezium_messages(
        wider, [("insert", ROW, None, TS + 11)])[0])).events[0]
    assert new.row is not None and new.row["at"] == "2024-02-29 13:14:15.2"
    # the first DDL read again changes nothing
    decoder.decode(_message(4, builders.debezium_ddl(TABLE, DDL, TS - 10)))
    again = decoder.decode(_message(5, builders.debezium_messages(
        wider, [("insert", ROW, None, TS + 12)])[0])).events[0]
    assert again.row is not None and again.row["at"] == "2024-02-29 13:14:15.2"


@pytest.mark.parametrize(("change", "field", "text"), [
    (lambda v: v["payload"].update(op="x"), "payload/op", "unknown `op` 'x'"),
    (lambda v: v["payload"]["source"].pop("commit_ts"), "payload/source/commit_ts", "TSO"),
    (lambda v: v["payload"].update(after=None), "payload/after", "needs `after`"),
    (lambda v: v["payload"]["after"].update(extra=1), "payload/after/extra", "not in its"),
    (lambda v: v["payload"]["after"].update(id="7"), "payload/after/id", "not an integer"),
    (lambda v: v["payload"]["after"].update(raw="%%"), "payload/after/raw", "raw"),
    (lambda v: v.pop("schema"), "schema", "no DDL event"),
    (lambda v: v["schema"]["fields"][1]["fields"][0].update(type="int8", tidb_type=None),
     "schema/fields/after/fields/0", "unknown Debezium field type"),
])
def test_bad_messages_name_their_field(change: Any, field: str, text: str) -> None:
    value = orjson.loads(_insert(row={**ROW, "price": None, "at": None})[1])
    change(value)
    with pytest.raises(MessageFormatError) as caught:
        Decoder().decode(SourceMessage(0, _insert()[0].encode(), orjson.dumps(value)))
    assert caught.value.details.get("field") == field and text in caught.value.message


def test_a_watermark_and_a_tombstone_free_delete() -> None:
    decoder = Decoder()
    decoder.decode(_message(0, builders.debezium_ddl(TABLE, DDL, TS - 1)))
    delete = builders.debezium_messages(TABLE, [("delete", None, ROW, TS)])[0]
    event = decoder.decode(_message(1, delete)).events[0]
    assert event.kind is EventKind.DELETE and event.old_row is not None
    assert event.old_row["id"] == 7
    mark = {"payload": {"source": {"commit_ts": TS + 5, "db": "", "table": ""}, "op": "m"}}
    watermark = decoder.decode(SourceMessage(2, None, orjson.dumps(mark))).events[0]
    assert (watermark.kind, watermark.commit_ts) == (EventKind.WATERMARK, TS + 5)


def test_enum_members_keep_their_escaped_commas() -> None:
    assert split_members("a\\,b,c,\\d") == ("a,b", "c", "\\d")


def test_the_converter_follows_the_ddl_and_a_bad_message_is_listed(harness: Harness) -> None:
    options = SchemaOptions.from_strings(enable_tidb_extension=True)
    messages: list[tuple[str | None, str | None]] = [
        builders.debezium_ddl(TABLE, DDL, TS - 1), _insert(),
        builders.debezium_messages(TABLE, [("update", {**ROW, "name": "x"}, ROW, TS + 1)])[0]]
    done = harness.convert(Protocol.DEBEZIUM, messages, register=True, options=options)
    assert [s["reason"].split(";")[0] for s in done["skipped"]] == [
        "a DDL event produces no flat-avro message"]
    rows = harness.decode(done)
    assert [r["value"]["name"] for r in rows] == ["é", "x"]
    assert rows[0]["value"]["price"] == "12.5000"
    assert rows[0]["value"]["big"] == 18446744073709551615
    with pytest.raises(UnconvertibleMessagesError) as caught:
        harness.convert(Protocol.DEBEZIUM, [(None, '{"payload": []}')])
    problem = caught.value.to_dict()["errors"][0]
    assert problem["message_index"] == 0 and problem["field"] == "payload"


STAMPED = table_from_ddl("CREATE TABLE shop.stamps (id INT PRIMARY KEY, at TIMESTAMP(3), "
                         "plain TIMESTAMP)")


@pytest.mark.parametrize(("tz", "at", "plain"), [
    ("UTC", "2024-03-10 06:59:59.120", "2024-11-03 05:30:00"),
    ("Asia/Shanghai", "2024-03-10 14:59:59.120", "2024-11-03 13:30:00"),
    # New York: 06:59:59Z is 01:59:59 EST, before the spring gap; 05:30Z is 01:30 EST, the
    # second 01:30 of the autumn fold (a plain text, as TiDB's own TIMESTAMP text is).
    ("America/New_York", "2024-03-10 01:59:59.120", "2024-11-03 01:30:00"),
])
def test_timestamps_come_back_in_the_changefeeds_time_zone(tz: str, at: str,
                                                           plain: str) -> None:
    """TiCDC's Debezium encoder writes TIMESTAMP in UTC (`...Z`); an avro changefeed writes
    the changefeed's time zone: `tz` (TiCDC's consumers' --tz) takes the value back there,
    with the column's digits."""
    utc = {"id": 1, "at": "2024-03-10 06:59:59.120", "plain": "2024-11-03 05:30:00"}
    decoder = Decoder(tz=tz)
    decoder.decode(_message(0, builders.debezium_ddl(STAMPED, "CREATE TABLE shop.stamps "
                                                     "(id INT PRIMARY KEY, at TIMESTAMP(3), "
                                                     "plain TIMESTAMP)", TS - 1)))
    [pair] = builders.debezium_messages(STAMPED, [("insert", utc, None, TS)])
    [row] = decoder.decode(_message(1, pair)).events
    assert row.row == {"id": 1, "at": at, "plain": plain}


def test_an_unknown_time_zone_is_refused_by_name() -> None:
    from service.core.errors import InvalidOptionError

    with pytest.raises(InvalidOptionError, match="Mars/Olympus") as refused:
        Decoder(tz="Mars/Olympus")
    assert refused.value.details["option"] == "tz"
