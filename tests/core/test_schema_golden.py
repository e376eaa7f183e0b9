"""Golden files: generated schemas equal the expected TiCDC text, from JSON and from DDL."""

from __future__ import annotations

import json
from pathlib import Path

import avro.schema
import fastavro
import pytest

from service.core.options import SchemaOptions
from service.core.schema import generate_schemas
from service.core.schema_text import schema_text
from service.core.table_json import table_from_json_text
from tests.core.golden.cases import OPTION_CASES, TABLES, expected_path, generate

CASES = [(t, label) for t in TABLES for label in OPTION_CASES]
TICDC = Path(__file__).parent / "golden" / "ticdc"


@pytest.mark.parametrize(("table", "label"), CASES)
@pytest.mark.parametrize("source", ["table.json", "sql"])
def test_schemas_match_golden_files(table: str, label: str, source: str) -> None:
    got = generate(table, OPTION_CASES[label], source=source)
    for kind in ("key", "value"):
        expected = expected_path(table, label, kind).read_text(encoding="utf-8").strip()
        assert got[kind] == expected, f"{table} {label} {kind} from {source}"


@pytest.mark.parametrize(("table", "label"), CASES)
def test_every_golden_schema_parses_with_fastavro_and_apache_avro(table: str, label: str) -> None:
    for kind in ("key", "value"):
        text = expected_path(table, label, kind).read_text(encoding="utf-8")
        schema = json.loads(text)
        if schema is None:
            continue
        fastavro.parse_schema(schema)
        parsed = avro.schema.parse(text)
        assert parsed.fullname == f"{schema['namespace']}.{schema['name']}"


@pytest.mark.parametrize(
    ("options", "golden"),
    [
        (SchemaOptions(), "rowtoavroschema.value.avsc"),
        (SchemaOptions(enable_tidb_extension=True), "rowtoavroschema.extension.value.avsc"),
    ],
)
def test_ticdc_own_golden_schema_is_reproduced_byte_for_byte(
    options: SchemaOptions, golden: str
) -> None:
    """TiCDC's avro_test_data.go golden (avroTestColumns with nullable twins), to the byte."""
    table = table_from_json_text((TICDC / "rowtoavroschema.table.json").read_text())
    pair = generate_schemas(table, options)
    assert schema_text(pair.value_schema) == (TICDC / golden).read_text().strip()
    assert pair.key_schema is None


def test_key_and_value_share_name_and_namespace() -> None:
    table = table_from_json_text((Path(__file__).parent / "golden/tables/all_types.table.json")
                                 .read_text())
    pair = generate_schemas(table)
    assert pair.key_schema is not None
    assert (pair.key_schema["name"], pair.key_schema["namespace"]) == (
        pair.value_schema["name"], pair.value_schema["namespace"])
    assert pair.key_columns == ("id", "k2")
