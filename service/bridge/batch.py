"""`Batch`: what one Kafka transaction of the bridge commits: the flat-avro messages, the
dead letters, the source offsets, and the counts progress reports."""

from __future__ import annotations

from dataclasses import dataclass, field

from service.bridge.conversion import Conversion
from service.bridge.source import SourceRecord
from service.codec.convert import Output, Skipped

__all__ = ["Batch"]


@dataclass(slots=True)
class Batch:
    """What one transaction commits.

    Attributes:
        outputs: the flat-avro messages, each with the source partition it came from.
        dead: the records set aside, each with why.
        offsets: source partition -> the offset to commit (the next one to read).
        sources: how many source records the batch settles.
        skipped: the events that produce no message (DDL, watermark, BOOTSTRAP).
    """

    outputs: list[tuple[Output, int]] = field(default_factory=list)
    dead: list[tuple[SourceRecord, str]] = field(default_factory=list)
    offsets: dict[int, int] = field(default_factory=dict)
    sources: int = 0
    skipped: list[Skipped] = field(default_factory=list)

    def topics(self) -> set[str]:
        """The target topics of the outputs."""
        return {output.schemas.topic for output, _ in self.outputs}

    def set_aside(self, record: SourceRecord, reason: str) -> None:
        """Send `record` to the dead-letter topic and commit past it."""
        self.dead.append((record, reason))
        self.offsets[record.partition] = record.offset + 1
        self.sources += 1

    def take(self, conversion: Conversion) -> dict[int, int | None]:
        """Add what `conversion` settles: each partition up to its first held record (bad
        records set aside); returns per partition the offset its queue is held from (None:
        nothing held)."""
        records, kept, held = conversion.records, conversion.kept, conversion.held()
        for index, record in enumerate(records):
            if not conversion.committable(index, held):
                continue
            self.sources += 1
            self.offsets[record.partition] = record.offset + 1
            if index in conversion.bad:
                self.dead.append((record, conversion.bad[index]))
        converted = conversion.converted
        self.outputs.extend((output, records[kept[output.source_index]].partition)
                            for output in converted.messages
                            if conversion.committable(kept[output.source_index], held))
        self.skipped.extend(s for s in converted.skipped
                            if conversion.committable(kept[s.source_index], held))
        return conversion.held_from(held)
