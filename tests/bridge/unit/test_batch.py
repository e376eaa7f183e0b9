"""`Batch`: what a transaction commits, taken from conversions cut at held records."""

from __future__ import annotations

from service.bridge.batch import Batch
from service.bridge.conversion import Conversion
from service.cdc.events import EventKind, Pending
from service.codec.convert import Converted, Skipped
from tests.bridge.unit.fakes import output, record


def test_a_conversion_adds_what_comes_before_each_partitions_held_record() -> None:
    records = [record(0, 10), record(0, 11), record(1, 20), record(1, 21), record(1, 22)]
    # the converter saw records 0, 2, 3, 4 (record 1 was set aside); record 3 is pending
    converted = Converted(
        [output("a", 0), output("b", 1, key=None), output("a", 3)],
        [Skipped(0, EventKind.DDL, "s", "t", 1, "ddl"), Skipped(3, EventKind.DDL, "s", "t", 1,
                                                                "ddl")],
        [Pending(2, "s", "t", 1, "unknown")])
    batch = Batch()
    held_from = batch.take(Conversion(records, [0, 2, 3, 4], {1: "bad"}, converted))
    assert held_from == {0: None, 1: 21}
    assert batch.sources == 3 and batch.offsets == {0: 12, 1: 21}
    assert batch.dead == [(record(0, 11), "bad")]
    assert [(o.schemas.topic, o.source_index, p) for o, p in batch.outputs] == [
        ("a", 0, 0), ("b", 1, 1)]
    assert [s.source_index for s in batch.skipped] == [0]
    assert batch.topics() == {"a", "b"}


def test_a_record_set_aside_commits_past_it() -> None:
    batch = Batch()
    batch.set_aside(record(2, 41), "too late")
    assert batch.dead == [(record(2, 41), "too late")]
    assert batch.offsets == {2: 42} and batch.sources == 1 and batch.outputs == []
