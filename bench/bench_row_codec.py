"""Row conversion + Avro encoding vs fastavro alone encoding already-converted datums.

The table is the issue's benchmark shape: 20 columns, two DECIMALs and one DATETIME. Both sides
encode the same 1,000-record batch with fastavro's ``schemaless_writer`` in this process; ours
also converts each plain-JSON row (validation included). Prints records/s and the ratio.
Run: ``make bench``.
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable

import fastavro

from service.core.ddl import table_from_ddl
from service.core.options import SchemaOptions
from service.core.schema import generate_schemas
from service.core.values import RowCodec

DDL = """CREATE TABLE bench.orders (
  id BIGINT PRIMARY KEY, customer_id BIGINT NOT NULL, sku VARCHAR(64) NOT NULL,
  qty INT NOT NULL, price DECIMAL(12,2) NOT NULL, tax DECIMAL(10,4), created DATETIME(3),
  state ENUM('new','paid','sent'), note TEXT, flags TINYINT UNSIGNED, weight DOUBLE,
  ratio FLOAT, region CHAR(2), code VARCHAR(16), a1 INT, a2 INT, a3 BIGINT, a4 SMALLINT,
  b1 VARCHAR(32), b2 VARCHAR(32))"""
BATCH = 1_000
ROUNDS = 20


def rows() -> list[dict[str, object]]:
    return [
        {"id": i, "customer_id": i * 7, "sku": f"SKU-{i:08d}", "qty": i % 13,
         "price": f"{i % 10000}.{i % 100:02d}", "tax": f"0.{i % 10000:04d}",
         "created": "2024-03-11 08:51:01.461", "state": ("new", "paid", "sent")[i % 3],
         "note": "a short note about the order", "flags": i % 256, "weight": i * 0.25,
         "ratio": 0.5, "region": "EU", "code": f"C{i}", "a1": i, "a2": -i, "a3": i * 1000,
         "a4": i % 1000, "b1": "x" * 10, "b2": "y" * 20}
        for i in range(BATCH)
    ]


def best_rate(work: Callable[[], None]) -> float:
    best = float("inf")
    for _ in range(ROUNDS):
        start = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - start)
    return BATCH / best


def main() -> None:
    table = table_from_ddl(DDL)
    schema = fastavro.parse_schema(generate_schemas(table).value_schema)
    codec = RowCodec.for_value(table, SchemaOptions())
    plain = rows()
    datums = [codec.to_datum(r) for r in plain]

    def raw() -> None:
        for d in datums:
            fastavro.schemaless_writer(io.BytesIO(), schema, d)

    def ours() -> None:
        for r in plain:
            fastavro.schemaless_writer(io.BytesIO(), schema, codec.to_datum(r))

    raw_rate, our_rate = best_rate(raw), best_rate(ours)
    print(f"fastavro schemaless_writer, converted datums: {raw_rate:12,.0f} records/s")
    print(f"RowCodec.to_datum + schemaless_writer:        {our_rate:12,.0f} records/s")
    print(f"ratio ours/raw: {our_rate / raw_rate:.2f}")


if __name__ == "__main__":
    main()
