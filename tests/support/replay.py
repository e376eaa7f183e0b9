"""TiCDC's at-least-once delivery for fault-injection tests: a TiDB table's history in commit
order, and what TiCDC's Kafka sink sends from it when its changefeed restarts (everything after
the checkpoint again, so older commits arrive at larger offsets; pingcap/ticdc#4051).

Pure Python; the tests encode the changes with the service and produce them to a real broker.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from service.core.values import PHYSICAL_SHIFT

_START_MS = 1_764_000_000_000


@dataclass(frozen=True, slots=True)
class Change:
    """One committed row change of the source table."""

    ts: int  # the commit ts (TSO)
    key: int
    op: str  # insert, update or delete
    row: dict[str, Any] | None = field(default=None)  # the row after it (None: delete)

    def record(self) -> dict[str, Any]:
        """The change as the service's encode endpoint takes it."""
        return {"op": self.op, "commit_ts": self.ts,
                "row": self.row if self.row is not None else {"id": self.key}}


def history(rng: random.Random, *, keys: int, commits: int) -> list[Change]:
    """`commits` changes of a table ``(id INT PRIMARY KEY, name VARCHAR, qty INT)`` in commit
    order: inserts of absent keys, updates and deletes of present ones, re-inserts of deleted
    ones."""
    rows: dict[int, dict[str, Any]] = {}
    changes: list[Change] = []
    physical = _START_MS
    for number in range(commits):
        physical += rng.randint(1, 5)
        ts = (physical << PHYSICAL_SHIFT) + rng.randint(0, 999)
        key = rng.randrange(keys)
        op = "insert" if key not in rows else rng.choice(["update", "update", "delete"])
        if op == "delete":
            del rows[key]
            changes.append(Change(ts, key, op))
        else:
            rows[key] = {"id": key, "name": f"n{number}", "qty": number}
            changes.append(Change(ts, key, op, rows[key]))
    return changes


def final_state(changes: list[Change]) -> dict[int, Change]:
    """The source table at the end: each present key's last change."""
    state: dict[int, Change] = {}
    for change in changes:
        if change.op == "delete":
            state.pop(change.key, None)
        else:
            state[change.key] = change
    return state


def last_rows(changes: list[Change]) -> dict[int, Change]:
    """Each key's last upsert (what a soft delete keeps)."""
    return {c.key: c for c in changes if c.op != "delete"}


def scd2(changes: list[Change]) -> set[tuple[Any, ...]]:
    """The source's history as ``--history`` keeps it, when each message's Kafka timestamp is
    its commit's physical time: each upsert a version (key, name, from, to, current, ended),
    ended by the key's next upsert or by a delete at the delete's physical time (logical 0)."""
    versions: list[list[Any]] = []
    open_version: dict[int, list[Any]] = {}
    for change in changes:
        last = open_version.pop(change.key, None)
        if change.op == "delete":
            assert last is not None
            last[3], last[5] = max(last[2], (change.ts >> PHYSICAL_SHIFT) << PHYSICAL_SHIFT), True
            continue
        assert change.row is not None
        if last is not None:
            last[3] = change.ts
        open_version[change.key] = [change.key, change.row["name"], change.ts, None, False,
                                    False]
        versions.append(open_version[change.key])
    for version in open_version.values():
        version[4] = True
    return {tuple(v) for v in versions}


def sends(changes: list[Change], rng: random.Random, *, restarts: int) -> list[Change]:
    """What TiCDC sends: the history up to a random point, then after a restart everything
    after a checkpoint some changes earlier, again, `restarts` times."""
    sent: list[Change] = []
    position = 0
    count = len(changes)
    for point in sorted(rng.sample(range(count // 5, count), restarts)):
        point = max(point, position + 1)
        sent += changes[position:point]
        position = max(0, point - rng.randint(4, max(5, count // 4)))  # the checkpoint
    return sent + changes[position:]


def replayed_stale(sent: list[Change]) -> tuple[int, int]:
    """How many sent changes are older than a change of their key sent before them, and how
    many of those are upserts of a key whose delete was sent before (the cases the guard is
    for)."""
    newest: dict[int, Change] = {}
    stale = resurrecting = 0
    for change in sent:
        seen = newest.get(change.key)
        if seen is not None and change.ts < seen.ts:
            stale += 1
            resurrecting += change.op != "delete" and seen.op == "delete"
        if seen is None or change.ts > seen.ts:
            newest[change.key] = change
    return stale, resurrecting


def by_partition(sent: list[Change], partitions: int) -> list[list[Change]]:
    """The sent changes of each partition (a key's partition: key modulo `partitions`, as
    TiCDC's index-value dispatcher keeps a key in one partition), in send order."""
    return [[c for c in sent if c.key % partitions == p] for p in range(partitions)]
