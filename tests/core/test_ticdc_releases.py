"""flatavro's schemas against the avro encoder of three tiflow tags (golden/ticdc/releases,
its README.md says how they were built and what is not the tag's own): the same statements
give byte-identical key and value schemas, except for the two release-line differences
docs/flat-avro.md names ("Where TiCDC releases differ"), each asserted here as it stands:
flatavro follows the newest TiCDC, which neither tag here is for the `'null'` default. With
the option naming each tag's release line (`ticdc_release`), every schema is the tag's own,
byte for byte, and the table the tag refused is refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from service.core.alter import apply_ddl
from service.core.errors import InvalidDefaultError
from service.core.options import SchemaOptions
from service.core.schema import generate_schemas
from service.core.schema_text import schema_text
from service.core.table import Table

RELEASES = Path(__file__).parent / "golden" / "ticdc" / "releases"
TAGS = ["v8.5.1", "v8.5.7", "v9.0.0-beta.2.pre"]


def _encodings(tag: str) -> list[Any]:
    cases = json.loads((RELEASES / tag / "schemas.json").read_text(encoding="utf-8"))["cases"]
    out = []
    for case in cases:
        table: Table | None = None
        for step in case["steps"]:
            for statement in step["statements"]:
                table = apply_ddl(table, statement, schema="shop", table=case["table"]).table
            assert table is not None
            out.extend(pytest.param(tag, table, encoding, id=f"{tag}-{case['case']}-"
                                    f"{step['step']}-ext-{encoding['enable_tidb_extension']}")
                       for encoding in step["encodings"])
    return out


def _options(encoding: dict[str, Any], *, release: str = "newest") -> SchemaOptions:
    """The options the tag encoded with, targeting `release`."""
    return SchemaOptions.from_strings(
        enable_tidb_extension=encoding["enable_tidb_extension"],
        decimal_handling_mode=encoding["avro_decimal_handling_mode"],
        bigint_unsigned_handling_mode=encoding["avro_bigint_unsigned_handling_mode"],
        ticdc_release=release)


def _schemas(table: Table, encoding: dict[str, Any], *, release: str = "newest"
             ) -> tuple[str, str]:
    pair = generate_schemas(table, _options(encoding, release=release))
    assert pair.key_schema is not None
    return schema_text(pair.key_schema), schema_text(pair.value_schema)


def _without_defaults(schema: str, columns: set[str]) -> list[dict[str, Any]]:
    return [{k: v for k, v in f.items() if not (k == "default" and f["name"] in columns)}
            for f in json.loads(schema)["fields"]]


@pytest.mark.parametrize(("tag", "table", "encoding"),
                         [p for t in TAGS for p in _encodings(t)])
def test_schemas_equal_each_tags_but_where_the_release_lines_differ(
        tag: str, table: Table, encoding: dict[str, Any]) -> None:
    key, value = _schemas(table, encoding)
    assert key == encoding["key_schema"]
    if table.table == "nulls" and tag == "v8.5.1":  # built as flatavro does, then refused
        assert encoding["refused_value_schema"] == value and encoding["value_schema"] is None
        assert "default value ought to encode" in encoding["error"]
        return
    theirs = encoding["value_schema"]
    if table.table == "nulls":  # v8.5.2 and later: ["null", T]; the newest TiCDC: [T, "null"]
        text = '{"type":"string","connect.parameters":{"tidb_type":"TEXT"}}'
        mine = f'{{"default":"null","name":"c","type":[{text},"null"]}}'
        assert mine in value
        assert value.replace(mine, f'{{"default":"null","name":"c","type":["null",{text}]}}',
                             1) == theirs
        return
    added = {c.name for c in table.columns if c.name in ("n", "s", "dt", "dc", "en")}
    if table.table == "origin" and tag == "v8.5.1" and added - {"dc"}:
        # v8.3-v8.5.1: a NOT NULL column added without DEFAULT took its origin default
        assert theirs != value
        assert _without_defaults(theirs, added) == _without_defaults(value, added)
        return
    assert theirs == value


RELEASE_OF = {"v8.5.1": "tiflow-v8.3", "v8.5.7": "tiflow-v8.5.2",
              "v9.0.0-beta.2.pre": "tiflow-v8.5.2"}


@pytest.mark.parametrize(("tag", "table", "encoding"),
                         [p for t in TAGS for p in _encodings(t)])
def test_targeting_the_release_line_writes_its_schemas_byte_for_byte(
        tag: str, table: Table, encoding: dict[str, Any]) -> None:
    if encoding["value_schema"] is None:  # TiCDC refused the table: so does flatavro
        with pytest.raises(InvalidDefaultError, match="pingcap/tiflow#11994"):
            _schemas(table, encoding, release=RELEASE_OF[tag])
        return
    assert _schemas(table, encoding, release=RELEASE_OF[tag]) == (
        encoding["key_schema"], encoding["value_schema"])

