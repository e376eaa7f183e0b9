"""A TiDB database's history as TiCDC's Canal-JSON changefeed writes it (one source topic, DDL
broadcast to every partition, a key's rows in one partition), and the tables it leaves,
computed by hand: what the whole-database stream tests feed the bridge and compare with.

Columns cover what the stream must carry exactly: BIGINT UNSIGNED keys above 2^63 (flat-avro
``long``, wrapped), DECIMAL(12,2) (Avro decimal), DATE and DATETIME(3) (TiCDC writes strings),
INT UNSIGNED (``long``). A keyless table (no primary key) is a change log of inserts."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

PARTITIONS = 3
DATABASE = "shop"
TYPES = {"id": "bigint unsigned", "name": "varchar(20)", "amount": "decimal(12,2)",
         "day": "date", "at": "datetime(3)", "qty": "int unsigned"}
COLUMNS = "name VARCHAR(20), amount DECIMAL(12,2), day DATE, at DATETIME(3), qty INT UNSIGNED"
NOTE_TYPE = "varchar(8)"
NOTE_DEFAULT = "x"
"""``ALTER TABLE ... ADD COLUMN note VARCHAR(8) NULL DEFAULT 'x'``: the rows already there read
'x', as TiDB shows them."""

Row = dict[str, str | None]


def _message(table: str, kind: str, *, ts: int, keyed: bool, types: dict[str, str] | None,
             rows: list[Row] | None = None, old: list[Row] | None = None,
             sql: str = "") -> bytes:
    return json.dumps({
        "id": 0, "database": DATABASE, "table": table,
        "pkNames": (["id"] if keyed else []) if types else None, "isDdl": bool(sql),
        "type": kind, "es": ts >> 18, "ts": 0, "sql": sql,
        "sqlType": {c: 4 for c in types} if types else None, "mysqlType": types,
        "data": rows, "old": old, "_tidb": {"commitTs": ts}}).encode()


@dataclass
class _Table:
    keyed: bool
    types: dict[str, str]
    rows: dict[int, Row] = field(default_factory=dict)  # keyed: by id
    log: list[Row] = field(default_factory=list)  # keyless: every insert


@dataclass
class CanalDatabase:
    """The source history, by Canal-JSON partition, and each table's state after it."""

    rng: random.Random
    tables: dict[str, _Table] = field(default_factory=dict)
    pending: dict[int, list[bytes]] = field(default_factory=dict)
    ts: int = 440_000_000_000_000_000
    serial: int = 0

    def _tick(self) -> int:
        self.ts += 1 << 18  # one millisecond of TiDB's physical clock
        return self.ts

    def _send(self, partition: int, message: bytes) -> None:
        self.pending.setdefault(partition, []).append(message)

    def _ddl(self, table: str, sql: str, kind: str) -> None:
        ts = self._tick()
        for partition in range(PARTITIONS):  # TiCDC broadcasts DDL to every partition
            self._send(partition, _message(table, kind, ts=ts, keyed=False, types=None,
                                           sql=sql))

    def create(self, table: str, *, keyed: bool) -> None:
        """``CREATE TABLE``."""
        key = "id BIGINT UNSIGNED PRIMARY KEY" if keyed else "id BIGINT UNSIGNED"
        self._ddl(table, f"CREATE TABLE {DATABASE}.{table} ({key}, {COLUMNS})", "CREATE")
        self.tables[table] = _Table(keyed, dict(TYPES))

    def add_note(self, table: str) -> None:
        """``ALTER TABLE ... ADD COLUMN note VARCHAR(8) NULL DEFAULT 'x'``."""
        self._ddl(table, f"ALTER TABLE {DATABASE}.{table} ADD COLUMN note VARCHAR(8) NULL "
                         f"DEFAULT '{NOTE_DEFAULT}'", "ALTER")
        state = self.tables[table]
        state.types["note"] = NOTE_TYPE
        for row in [*state.rows.values(), *state.log]:
            row["note"] = NOTE_DEFAULT

    def _row(self, key: int) -> Row:
        self.serial += 1
        n, rng = self.serial, self.rng
        row: Row = {"id": str(key), "name": f"n{n}",
                    "amount": f"{rng.randrange(-10**7, 10**7) / 100:.2f}",
                    "day": f"20{rng.randrange(10, 30)}-{rng.randrange(1, 13):02d}-"
                           f"{rng.randrange(1, 29):02d}",
                    "at": f"2024-0{rng.randrange(1, 10)}-1{rng.randrange(10)} "
                          f"{rng.randrange(24):02d}:{rng.randrange(60):02d}:"
                          f"{rng.randrange(60):02d}.{rng.randrange(1000):03d}",
                    "qty": str(rng.choice([0, 7, 2**31 + n, 2**32 - 1]))}
        if rng.random() < 0.1:
            row["amount"] = None
        return row

    def changes(self, table: str, count: int) -> None:
        """`count` random changes: inserts, updates and deletes of keyed tables (keys above
        2^63 among them), inserts of keyless ones."""
        state = self.tables[table]
        for _ in range(count):
            ts = self._tick()
            if not state.keyed:
                row = self._row(self.rng.randrange(2**64))
                if "note" in state.types:
                    row["note"] = f"k{self.serial}"
                state.log.append(row)
                self._send(self.serial % PARTITIONS,
                           _message(table, "INSERT", ts=ts, keyed=False, types=state.types,
                                    rows=[row]))
                continue
            key = self.rng.choice([self.rng.randrange(40), 2**63 + self.rng.randrange(20)])
            old = state.rows.get(key)
            if old is not None and self.rng.random() < 0.25:
                del state.rows[key]
                message = _message(table, "DELETE", ts=ts, keyed=True, types=state.types,
                                   rows=[old])
            else:
                row = self._row(key)
                if "note" in state.types:
                    row["note"] = f"u{self.serial % 1000}"
                state.rows[key] = row
                message = _message(table, "UPDATE" if old else "INSERT", ts=ts, keyed=True,
                                   types=state.types, rows=[row],
                                   old=[old] if old else None)
            self._send(key % PARTITIONS, message)

    def take(self) -> dict[int, list[bytes]]:
        """The messages written since the last `take`, by source partition."""
        taken, self.pending = self.pending, {}
        return taken

    def expected(self, table: str) -> list[tuple[str | None, ...]]:
        """The table's rows as the stream must leave them (columns in `columns` order), each
        value as `normal` writes it, sorted."""
        state = self.tables[table]
        rows = state.rows.values() if state.keyed else state.log
        return sorted(tuple(_expected(c, row.get(c)) for c in state.types) for row in rows)

    def columns(self, table: str) -> list[str]:
        """The table's columns."""
        return list(self.tables[table].types)


def _expected(column: str, value: str | None) -> str | None:
    if value is None:
        return None
    if column == "id":  # BIGINT UNSIGNED in flat-avro's long mode: wrapped to int64
        number = int(value)
        return str(number - 2**64 if number >= 2**63 else number)
    if column == "amount":
        return str(Decimal(value))
    return value


def normal(rows: list[dict[str, Any]], columns: list[str]) -> list[tuple[str | None, ...]]:
    """Rows read back (delta-rs), as `CanalDatabase.expected` writes them, sorted."""
    return sorted(tuple(None if row[c] is None else str(row[c]) for c in columns)
                  for row in rows)
