"""flatavro's schemas against what TiCDC v8.3.0 itself registers (golden/ticdc/v8.3.0).

The golden files are the exact ``schema`` strings tiflow v8.3.0's avro encoder sent to the
registry, for tables created and altered by real SQL in a mock TiDB (see the folder's
README.md). For each (table version, options, key|value) this checks flatavro's schema for
the same statements and options:

1. parsed JSON equality;
2. byte identity of `schema_text` (flatavro's Go ``json.Marshal`` form) with TiCDC's text;
3. the text the embedded registry would store (Java ``Schema.toString()`` form, `stored_form`)
   for flatavro's registration (`json.dumps(..., ensure_ascii=False)`, as
   service/registry/tables.py sends it) equals the one it would store for TiCDC's text.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from service.core.alter import apply_ddl
from service.core.ddl import table_from_ddl
from service.core.errors import InvalidDefaultError
from service.core.schema import SchemaPair, generate_schemas
from service.core.schema_text import schema_text
from service.registry.canonical import stored_form
from tests.core.golden.cases import OPTION_CASES

GOLDEN = Path(__file__).parent / "golden" / "ticdc" / "v8.3.0"
TIDB = json.loads((GOLDEN / "tidb_tables.json").read_text(encoding="utf-8"))
STATEMENTS: dict[str, list[str]] = {t["case"]: t["statements"] for t in TIDB["tables"]}
FILES = sorted(p.name for p in GOLDEN.glob("*.avsc"))
LABELS = [label for label in OPTION_CASES if "_ns-" not in label]


def _split(name: str) -> tuple[str, str, str]:
    case, label, kind, _ = name.split(".")
    return case, label, kind


CASES = [pytest.param(*_split(name), id=name.removesuffix(".avsc")) for name in FILES]


@cache
def _pair(case: str, label: str) -> SchemaPair:
    statements = STATEMENTS[case]
    table = table_from_ddl(statements[0])
    for statement in statements[1:]:
        outcome = apply_ddl(table, statement, schema=table.schema, table=table.table)
        assert outcome.table is not None
        table = outcome.table
    return generate_schemas(table, OPTION_CASES[label])


def _flatavro(case: str, label: str, kind: str) -> Any:
    pair = _pair(case, label)
    return pair.key_schema if kind == "key" else pair.value_schema


def _ticdc(case: str, label: str, kind: str) -> str:
    return (GOLDEN / f"{case}.{label}.{kind}.avsc").read_text(encoding="utf-8")


def test_the_golden_set_is_complete() -> None:
    assert len(FILES) == len(STATEMENTS) * len(LABELS) * 2 == 176
    assert sorted(TIDB["files"]) == FILES
    assert {_split(n)[1] for n in FILES} == set(LABELS)


@pytest.mark.parametrize(("case", "label", "kind"), CASES)
def test_parsed_schema_equals_ticdc(case: str, label: str, kind: str) -> None:
    assert _flatavro(case, label, kind) == json.loads(_ticdc(case, label, kind))


@pytest.mark.parametrize(("case", "label", "kind"), CASES)
def test_schema_text_is_ticdc_registered_text_byte_for_byte(case: str, label: str,
                                                            kind: str) -> None:
    assert schema_text(_flatavro(case, label, kind)) == _ticdc(case, label, kind)


@pytest.mark.parametrize(("case", "label", "kind"), CASES)
def test_registry_stores_the_same_text_as_for_ticdc(case: str, label: str, kind: str) -> None:
    ours = json.dumps(_flatavro(case, label, kind), ensure_ascii=False)
    theirs = _ticdc(case, label, kind)
    assert stored_form(ours).text == stored_form(theirs).text
    assert stored_form(ours).identity == stored_form(theirs).identity


def test_ticdc_text_is_go_marshal_form_not_java_form() -> None:
    """TiCDC sends Go's json.Marshal text (field keys sorted: default, name, type); a
    Confluent registry stores Java's Schema.toString() (name, type, default) instead."""
    text = _ticdc("items_v3", "ext-off_decimal-string_bigint-long", "value")
    assert '{"default":"x","name":"note",' in text
    stored = stored_form(text).text
    assert stored != text
    assert '{"name":"note","type":[' in stored


@pytest.mark.parametrize(
    ("case", "text"),
    [("dec_plain", "3.14"), ("dec_quoted", "3.14"), ("dec_plus", "3.14"),
     ("dec_trailing_zero", "3.140"), ("dec_exponent", "100"), ("dec_negative_zero", "0"),
     ("dec_more_digits_than_scale", "3.14159")],
)
def test_decimal_default_is_tidb_stored_text(case: str, text: str) -> None:
    """What TiDB stored (ColumnInfo.DefaultValue) and TiCDC wrote, and flatavro's default."""
    table = next(t for t in TIDB["tables"] if t["case"] == case)
    stored = {c["name"]: c["default_value"] for c in table["columns"]}
    assert stored == {"id": None, "d": text, "dn": text}
    for label in LABELS:
        if "decimal-string" not in label:
            continue
        fields = {f["name"]: f for f in _flatavro(case, label, "value")["fields"]}
        assert fields["d"]["default"] == text
        assert fields["dn"]["default"] == text


@pytest.mark.parametrize("refused", TIDB["refused_decimal"],
                         ids=[r["statement"].rsplit("DEFAULT ", 1)[1].rstrip(")")
                              for r in TIDB["refused_decimal"]])
def test_defaults_tidb_refuses_are_refused_naming_the_column(refused: dict[str, str]) -> None:
    """TiDB v8.3 (sql_mode strict) answers `[types:1067]Invalid default value for 'd'`."""
    assert refused["error"] == "[types:1067]Invalid default value for 'd'"
    with pytest.raises(InvalidDefaultError, match="column `d`"):
        generate_schemas(table_from_ddl(refused["statement"]))
