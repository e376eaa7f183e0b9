"""The golden-file matrix: tables x option combinations, and where each expected file lives."""

from __future__ import annotations

import itertools
from pathlib import Path

from service.core.ddl import table_from_ddl
from service.core.options import SchemaOptions
from service.core.schema import generate_schemas
from service.core.schema_text import schema_text
from service.core.table import Table
from service.core.table_json import table_from_json_text

GOLDEN_DIR = Path(__file__).parent
TABLES = ("all_types", "unique_key_only", "no_key")

OPTION_CASES: dict[str, SchemaOptions] = {
    f"ext-{'on' if ext else 'off'}_decimal-{dec}_bigint-{big}": SchemaOptions.from_strings(
        enable_tidb_extension=ext, decimal_handling_mode=dec, bigint_unsigned_handling_mode=big
    )
    for ext, dec, big in itertools.product((False, True), ("precise", "string"),
                                           ("long", "string"))
}
OPTION_CASES["ext-off_decimal-precise_bigint-long_ns-1-tenant.a"] = SchemaOptions(
    namespace="1-tenant.a"
)


def load_table(table: str, source: str) -> Table:
    """Read one golden table from its TableSchema JSON (``table.json``) or DDL (``sql``)."""
    text = (GOLDEN_DIR / "tables" / f"{table}.{source}").read_text(encoding="utf-8")
    return table_from_json_text(text) if source == "table.json" else table_from_ddl(text)


def generate(table: str, options: SchemaOptions, *, source: str) -> dict[str, str]:
    """Generate both schemas of a golden table as TiCDC's text (``null`` for no key)."""
    pair = generate_schemas(load_table(table, source), options)
    key = "null" if pair.key_schema is None else schema_text(pair.key_schema)
    return {"key": key, "value": schema_text(pair.value_schema)}


def expected_path(table: str, label: str, kind: str) -> Path:
    """Where the expected key or value schema of one (table, options) case is stored."""
    return GOLDEN_DIR / "schemas" / table / f"{label}.{kind}.avsc"
