"""The registry's compatibility check vs Apache avro's own checker doing the same two checks.

Registering a new version under FULL checks both directions: the new schema reads what the last
version wrote, and the last version reads the new one. Both sides check the same parsed pair
(version 2 adds one nullable column) in this process:

- ours: `service.registry.avro_checker.JavaNameChecker`, avro's checker with Java's name rule
  and each writer record's fields indexed once;
- raw: ``avro.compatibility.ReaderWriterCompatibilityChecker`` as the package ships it, whose
  field lookup builds the writer's name-to-field dict again for every reader field.

At 64 columns (a usual table) and at 4,096 (the most TiDB allows). Prints checks/s and the
ratio ours/raw, best of interleaved rounds. Run: ``python -m bench.bench_compatibility``.
"""

from __future__ import annotations

import json
import time

import avro.schema
from avro.compatibility import ReaderWriterCompatibilityChecker, SchemaCompatibilityType

from service.core.ddl import table_from_ddl
from service.core.schema import generate_schemas
from service.registry.avro_checker import JavaNameChecker

TYPES = ["INT", "BIGINT UNSIGNED", "VARCHAR(255)", "DECIMAL(12,2)", "DATETIME(3)", "TEXT",
         "ENUM('a','b','c')", "DOUBLE", "DATE", "JSON"]


def wide_ddl(columns: int, *, extra: str = "") -> str:
    """A CREATE TABLE of `columns` columns of varied types (the key included), then `extra`."""
    body = ", ".join(f"c{i:05d} {TYPES[i % len(TYPES)]}" for i in range(columns - 1))
    return f"CREATE TABLE bench.wide (id BIGINT PRIMARY KEY, {body}{extra})"


def _pair(columns: int) -> tuple[avro.schema.Schema, avro.schema.Schema]:
    """Versions 1 and 2 of a table of `columns` columns in version 2."""
    old, new = (generate_schemas(table_from_ddl(ddl)).value_schema
                for ddl in (wide_ddl(columns - 1), wide_ddl(columns - 1,
                                                            extra=", extra INT NULL")))
    return avro.schema.parse(json.dumps(old)), avro.schema.parse(json.dumps(new))


def _full_check(checker: type[ReaderWriterCompatibilityChecker], old: avro.schema.Schema,
                new: avro.schema.Schema) -> float:
    """Seconds for both directions, each with a fresh checker (as a registration does)."""
    start = time.perf_counter()
    for reader, writer in ((new, old), (old, new)):
        verdict = checker().get_compatibility(reader, writer)
        assert verdict.compatibility is SchemaCompatibilityType.compatible, verdict.messages
    return time.perf_counter() - start


def main() -> None:
    for columns, rounds in ((64, 200), (4096, 3)):
        old, new = _pair(columns)
        ours, raw = float("inf"), float("inf")
        for _ in range(rounds):
            ours = min(ours, _full_check(JavaNameChecker, old, new))
            raw = min(raw, _full_check(ReaderWriterCompatibilityChecker, old, new))
        print(f"FULL check of a {columns:,}-column table, JavaNameChecker:   "
              f"{1 / ours:10,.1f} checks/s ({ours * 1000:,.1f} ms)")
        print(f"FULL check of a {columns:,}-column table, avro's own checker: "
              f"{1 / raw:10,.1f} checks/s ({raw * 1000:,.1f} ms)")
        print(f"ratio ours/raw ({columns:,} columns): {raw / ours:.2f}")


if __name__ == "__main__":
    main()
