"""The bridge's conversion step: source records through the `Converter`, with the records
that cannot be converted found and set aside (or where the bridge stops), typed.

A registry refusal (an incompatible schema, a topic bound to another table, a schema it
finds invalid) is found by converting the records one by one; any other error of the
registry stops the bridge with nothing of the batch committed, as the next run can convert
them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from service.bridge.errors import BridgeError, BridgeStopped
from service.bridge.options import BridgeOptions
from service.bridge.source import SourceRecord
from service.cdc.catalog import Protocol
from service.codec.claim_check import prefetch
from service.codec.convert import Converted, Converter, ConvertInput, Unconvertible
from service.core.errors import InvalidInputError, ServiceError
from service.registry.errors import IncompatibleSchemaError
from service.registry.tables import TopicBindingError

__all__ = ["Conversion", "ConversionStep", "Stop"]

# What the registry refuses about one table (its new schema incompatible, its topic bound to
# another table, a schema it finds invalid): the messages of that table are unconvertible.
_REFUSALS = (InvalidInputError, IncompatibleSchemaError, TopicBindingError)


@dataclass(frozen=True, slots=True)
class Conversion:
    """Records converted but for the bad ones.

    Attributes:
        records: the records, partition by partition, in order.
        kept: the index in `records` of each record the converter converted, in order.
        bad: index in `records` -> why that record cannot be converted.
        converted: what the converter made of the kept records.
    """

    records: Sequence[SourceRecord]
    kept: Sequence[int]
    bad: Mapping[int, str]
    converted: Converted

    def held(self) -> dict[int, int]:
        """Per partition, the index in `records` of its first pending record: it and the
        records after it wait for their table schema."""
        cut: dict[int, int] = {}
        for pending in self.converted.pending:
            index = self.kept[pending.source_index]
            cut.setdefault(self.records[index].partition, index)
        return cut

    def committable(self, index: int, held: Mapping[int, int]) -> bool:
        """Whether the record at `index` comes before its partition's first held one."""
        return index < held.get(self.records[index].partition, len(self.records))

    def held_from(self, held: Mapping[int, int]) -> dict[int, int | None]:
        """Per partition of the records, the offset its queue is held from (None: none)."""
        return {partition: self.records[held[partition]].offset if partition in held else None
                for partition in {r.partition for r in self.records}}


@dataclass(frozen=True, slots=True)
class Stop:
    """Records that cannot be converted, with no dead-letter topic to set them aside: the
    bridge commits every partition's records before its first bad one, then stops.

    Attributes:
        records: the records, partition by partition, in order.
        bad: index in `records` -> why that record cannot be converted.
    """

    records: Sequence[SourceRecord]
    bad: Mapping[int, str]

    def _first(self) -> dict[int, int]:
        first: dict[int, int] = {}
        for index in sorted(self.bad):
            first.setdefault(self.records[index].partition, index)
        return first

    def before(self) -> list[SourceRecord]:
        """The records before the first bad one of their partition."""
        first, end = self._first(), len(self.records)
        return [r for i, r in enumerate(self.records) if i < first.get(r.partition, end)]

    def error(self) -> BridgeStopped:
        """The error the bridge stops with, naming the first bad record (lowest partition)."""
        index = min(self._first().values(),
                    key=lambda i: (self.records[i].partition, self.records[i].offset))
        record = self.records[index]
        others = f" ({len(self.bad) - 1} more in this batch)" if len(self.bad) > 1 else ""
        return BridgeStopped(f"partition {record.partition} offset {record.offset}: "
                             f"{self.bad[index]}{others}; everything before it is committed "
                             f"(pass --dead-letter-topic to set such messages aside)")


class ConversionStep:
    """Converts source records with the bridge's options, finding the ones that cannot be."""

    def __init__(self, options: BridgeOptions, converter: Converter) -> None:
        self.options, self.converter = options, converter

    async def convert(self, records: Sequence[SourceRecord], *,
                      set_aside: bool) -> Conversion | Stop:
        """Convert `records`. Bad ones found are set aside and the rest converted again,
        until it converts (`set_aside`); without `set_aside` the first bad ones found are a
        `Stop`.

        Raises:
            BridgeError: the registry fails (nothing of the batch can be committed).
        """
        bad: dict[int, str] = {}
        while True:
            kept = [i for i in range(len(records)) if i not in bad]
            outcome = await self._attempt([records[i] for i in kept], batch=records)
            if isinstance(outcome, Converted):
                return Conversion(records, kept, bad, outcome)
            for index, reason in outcome.items():
                bad.setdefault(kept[index], reason)
            if not set_aside:
                return Stop(records, bad)

    async def _attempt(self, records: Sequence[SourceRecord], *,
                       batch: Sequence[SourceRecord]) -> Converted | dict[int, str]:
        """Convert `records`, or say which cannot be (index -> reason)."""
        try:
            outcome = await self._convert(records)
        except _REFUSALS as exc:  # one table's schema refused: find its records
            found = await self._refused(records)
            if not found:
                raise _whole_batch(batch[0], exc) from exc
            return found
        if isinstance(outcome, Unconvertible):
            reasons: dict[int, str] = {}
            for problem in outcome.problems:
                for index in problem.indices:
                    reasons.setdefault(index, problem.reason)
            return reasons
        return outcome

    async def _convert(self, records: Sequence[SourceRecord]) -> Converted | Unconvertible:
        """Convert records in order; an error of the registry itself (unavailable,
        read-only, its store) stops the bridge with nothing of the batch committed."""
        options = self.options
        messages = [(r.key, r.value) for r in records]
        # S3 claim-check objects read in the background while the batch converts
        prefetch(messages, options.large_messages,
                 framed=options.protocol is Protocol.OPEN_PROTOCOL)
        try:
            return await self.converter.attempt(options.protocol, ConvertInput(
                messages, "raw", options.topic_rule,
                options.register, options.schema_options, options.key_columns,
                large_messages=options.large_messages))
        except _REFUSALS:
            raise
        except ServiceError as exc:
            raise _whole_batch(records[0], exc) from exc

    async def _refused(self, records: Sequence[SourceRecord]) -> dict[int, str]:
        """Which records the registry refuses, found by converting them one by one in order
        (only after a refusal; what converts is registered as it would be anyway)."""
        found: dict[int, str] = {}
        for index, record in enumerate(records):
            try:
                outcome = await self._convert([record])
            except _REFUSALS as exc:
                found[index] = f"the schema registry refused its table's schema: {exc}"
                continue
            if isinstance(outcome, Unconvertible):
                found[index] = outcome.problems[0].reason
        return found


def _whole_batch(first: SourceRecord, exc: Exception) -> BridgeError:
    return BridgeError(f"the batch from partition {first.partition} offset {first.offset} "
                       f"cannot be converted: {exc}; nothing of it is committed, restart the "
                       f"bridge to resume")

