"""`ConversionStep`, `Conversion` and `Stop`: records through a scripted converter, bad ones
found by index and reason (no batch position in the reason), refusals found one by one."""

from __future__ import annotations

import asyncio

import pytest

from service.bridge.conversion import Conversion, ConversionStep, Stop
from service.bridge.errors import BridgeError, BridgeStopped
from service.codec.convert import Converted, MessageProblem, Unconvertible
from service.core.errors import InvalidInputError
from tests.bridge.unit.fakes import FakeConverter, options, output, record


def convert(values: list[bytes], *, set_aside: bool = True
            ) -> tuple[Conversion | Stop, FakeConverter]:
    converter = FakeConverter()
    step = ConversionStep(options(), converter)
    records = [record(i % 2, 100 + i, v) for i, v in enumerate(values)]
    return asyncio.run(step.convert(records, set_aside=set_aside)), converter


def test_a_batch_that_converts_keeps_every_record() -> None:
    result, converter = convert([b"ok", b"skip", b"ok"])
    assert isinstance(result, Conversion)
    assert result.kept == [0, 1, 2] and result.bad == {}
    assert [o.source_index for o in result.converted.messages] == [0, 2]
    assert converter.calls == [[b"ok", b"skip", b"ok"]]


def test_bad_records_are_set_aside_with_their_reason_and_the_rest_converted_again() -> None:
    result, converter = convert([b"ok", b"bad", b"ok", b"bad"])
    assert isinstance(result, Conversion)
    assert result.bad == {1: "bad value", 3: "bad value"}  # the reason, no "message 1: "
    assert result.kept == [0, 2]
    assert converter.calls == [[b"ok", b"bad", b"ok", b"bad"], [b"ok", b"ok"]]


def test_without_set_aside_the_first_bad_records_are_a_stop() -> None:
    result, converter = convert([b"ok", b"ok", b"bad", b"ok", b"ok"], set_aside=False)
    assert isinstance(result, Stop) and result.bad == {2: "bad value"}
    assert len(converter.calls) == 1
    # partition 0 holds records 0, 2, 4 and stops at 2; partition 1 is whole
    assert [(r.partition, r.offset) for r in result.before()] == [(0, 100), (1, 101), (1, 103)]
    error = result.error()
    assert isinstance(error, BridgeStopped)
    assert str(error) == ("partition 0 offset 102: bad value; everything before it is committed "
                          "(pass --dead-letter-topic to set such messages aside)")


def test_a_stop_names_the_lowest_partition_and_counts_the_others() -> None:
    records = [record(1, 5), record(0, 9), record(1, 6), record(0, 10)]
    stop = Stop(records, {0: "first", 1: "second", 3: "third"})
    assert str(stop.error()).startswith("partition 0 offset 9: second (2 more in this batch);")
    assert stop.before() == []


def test_a_problem_affecting_later_messages_sets_them_all_aside() -> None:
    class Affecting(FakeConverter):
        async def attempt(self, protocol, request):
            values = [v for _, v in request.messages]
            self.calls.append(values)
            if len(values) == 3:
                return Unconvertible((MessageProblem(0, InvalidInputError("no schema"),
                                                     topic="t", affected=(2,)),))
            return Converted([output("out", 0)], [], [])

    step = ConversionStep(options(), Affecting())
    result = asyncio.run(step.convert([record(0, 1), record(0, 2), record(0, 3)],
                                      set_aside=True))
    assert isinstance(result, Conversion)
    assert result.bad == {0: "no schema", 2: "no schema"} and result.kept == [1]


def test_a_refused_schema_is_found_record_by_record() -> None:
    result, converter = convert([b"ok", b"refused", b"bad", b"ok"])
    assert isinstance(result, Conversion)
    assert result.bad == {
        1: "the schema registry refused its table's schema: name: VARCHAR -> INT is not "
           "BACKWARD compatible",
        2: "bad value"}
    assert converter.calls == [[b"ok", b"refused", b"bad", b"ok"], [b"ok"], [b"refused"],
                               [b"bad"], [b"ok"], [b"ok", b"ok"]]


def test_a_refusal_no_single_record_shows_stops_the_bridge_naming_the_batch() -> None:
    class RefusesBatches(FakeConverter):
        async def attempt(self, protocol, request):
            from service.registry.errors import IncompatibleSchemaError

            if len(request.messages) > 1:
                raise IncompatibleSchemaError("refused together")
            return Converted([], [], [])

    step = ConversionStep(options(), RefusesBatches())
    with pytest.raises(BridgeError, match=r"^the batch from partition 0 offset 7 cannot be "
                                          r"converted: refused together; nothing of it is "
                                          r"committed, restart the bridge to resume$"):
        asyncio.run(step.convert([record(0, 7), record(0, 8)], set_aside=True))


def test_a_registry_failure_stops_the_bridge_with_nothing_committed() -> None:
    with pytest.raises(BridgeError, match=r"^the batch from partition 0 offset 100 cannot be "
                                          r"converted: the registry is down;") as caught:
        convert([b"ok", b"down"])
    assert not isinstance(caught.value, BridgeStopped)


def test_a_conversion_is_cut_at_each_partitions_first_pending_record() -> None:
    records = [record(0, 10), record(0, 11), record(0, 12), record(1, 20), record(1, 21)]
    # record 1 was set aside: the converter saw 0, 2, 3, 4; its 1 (record 2) and 3 (record 4)
    # are pending
    from service.cdc.events import Pending

    converted = Converted([], [], [Pending(1, "s", "t", 1, "r"), Pending(3, "s", "t", 1, "r")])
    conversion = Conversion(records, [0, 2, 3, 4], {1: "bad"}, converted)
    held = conversion.held()
    assert held == {0: 2, 1: 4}
    assert [conversion.committable(i, held) for i in range(5)] == [True, True, False, True,
                                                                    False]
    assert conversion.held_from(held) == {0: 12, 1: 21}
    assert Conversion(records, [0, 1, 2, 3, 4], {}, Converted([], [], [])).held_from({}) == {
        0: None, 1: None}
