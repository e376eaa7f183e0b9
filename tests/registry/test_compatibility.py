"""Compatibility checks: Avro's reader/writer pairs, the seven levels, and readable reasons."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import avro.schema
import pytest
from avro.compatibility import ReaderWriterCompatibilityChecker

from service.core.ddl import table_from_ddl
from service.core.schema import generate_schemas
from service.registry import compatibility
from service.registry.avro_checker import JavaNameChecker
from service.registry.canonical import stored_form
from service.registry.compatibility import (
    CompatibilityLevel,
    InvalidSchemaError,
    check_compatibility,
)

PAIRS = json.loads((Path(__file__).parent / "data/avro_reader_writer_pairs.json").read_text())
S = {name: json.dumps(schema) for name, schema in PAIRS["schemas"].items()}


@pytest.mark.parametrize("pair", PAIRS["compatible"], ids=lambda p: f"{p['reader']}<-{p['writer']}")
def test_compatible_reader_writer_pairs(pair: dict[str, str]) -> None:
    # BACKWARD: the new schema (reader) reads what version 1 (writer) wrote.
    verdict = check_compatibility(S[pair["reader"]], [(1, S[pair["writer"]])],
                                  level=CompatibilityLevel.BACKWARD)
    assert verdict.compatible, verdict.incompatibilities


@pytest.mark.parametrize("pair", PAIRS["incompatible"],
                         ids=lambda p: f"{p['reader']}<-{p['writer']}")
def test_incompatible_reader_writer_pairs(pair: dict[str, str]) -> None:
    verdict = check_compatibility(S[pair["reader"]], [(1, S[pair["writer"]])],
                                  level=CompatibilityLevel.BACKWARD)
    assert not verdict.compatible
    assert pair["type"] in {i.type for i in verdict.incompatibilities}
    assert all(i.version == 1 for i in verdict.incompatibilities)


@pytest.mark.parametrize(("pair", "ok"), [
    pytest.param(p, ok, id=f"{p['reader']}<-{p['writer']}")
    for ok, pairs in ((True, PAIRS["compatible"]), (False, PAIRS["incompatible"])) for p in pairs])
def test_reader_writer_pairs_as_stored(pair: dict[str, str], ok: bool) -> None:
    # The embedded registry checks stored texts: Java's Schema.toString(), which writes names
    # and aliases relative to the namespace ("aliases":["User"] for com.acme.User in com.acme).
    reader, writer = (stored_form(S[pair[side]]).text for side in ("reader", "writer"))
    verdict = check_compatibility(reader, [(1, writer)], level=CompatibilityLevel.BACKWARD)
    assert verdict.compatible is ok, verdict.incompatibilities


class _AvroFieldStep(JavaNameChecker):
    """JavaNameChecker with avro's own record-field step (its O(fields^2) writer lookup)."""

    check_reader_writer_record_fields = \
        ReaderWriterCompatibilityChecker.check_reader_writer_record_fields


@pytest.mark.parametrize(("reader", "writer"), [
    pytest.param(p["reader"], p["writer"], id=f"{p['reader']}<-{p['writer']}")
    for p in PAIRS["compatible"] + PAIRS["incompatible"]])
def test_the_indexed_field_step_answers_as_avros_own(reader: str, writer: str) -> None:
    # Field aliases, missing defaults, enum defaults and nested records are in the corpus.
    pair = avro.schema.parse(S[reader]), avro.schema.parse(S[writer])
    ours, avros = (checker().get_compatibility(*pair)
                   for checker in (JavaNameChecker, _AvroFieldStep))
    assert (ours.compatibility, ours.incompatibilities, ours.locations, ours.messages) == (
        avros.compatibility, avros.incompatibilities, avros.locations, avros.messages)


def test_renamed_nested_record_is_named_at_its_field() -> None:
    verdict = check_compatibility(S["ACME_ORDER_CUSTOMER"], [(1, S["ACME_ORDER_USER"])],
                                  level=CompatibilityLevel.BACKWARD)
    assert [(i.type, i.location, i.detail) for i in verdict.incompatibilities] == [
        ("NAME_MISMATCH", "/fields/0/type/name", "expected: com.acme.User")]


def rec(*fields: dict[str, Any]) -> str:
    return json.dumps({"type": "record", "name": "R", "fields": list(fields)})


F1 = {"name": "f1", "type": "string"}
F2_DEFAULT = {"name": "f2", "type": "string", "default": "foo"}
F2 = {"name": "f2", "type": "string"}
SCHEMA1, SCHEMA2, SCHEMA3 = rec(F1), rec(F1, F2_DEFAULT), rec(F1, F2)

# (level, candidate, registered versions oldest first, compatible?) -- Confluent's classic cases.
LEVEL_CASES = [
    ("NONE", SCHEMA3, [SCHEMA1], True),
    ("BACKWARD", SCHEMA2, [SCHEMA1], True),  # added field with a default
    ("BACKWARD", SCHEMA3, [SCHEMA1], False),  # added field without a default
    ("BACKWARD", SCHEMA3, [SCHEMA1, SCHEMA2], True),  # only the newest counts
    ("BACKWARD_TRANSITIVE", SCHEMA3, [SCHEMA1, SCHEMA2], False),
    ("FORWARD", SCHEMA1, [SCHEMA2], True),  # old reader uses f2's default
    ("FORWARD", SCHEMA1, [SCHEMA3], False),  # old reader needs f2, has no default
    ("FORWARD", SCHEMA1, [SCHEMA3, SCHEMA2], True),
    ("FORWARD_TRANSITIVE", SCHEMA1, [SCHEMA3, SCHEMA2], False),
    ("FULL", SCHEMA2, [SCHEMA1], True),
    ("FULL", SCHEMA3, [SCHEMA2], True),  # both have f2: each reads the other
    ("FULL", SCHEMA1, [SCHEMA3], False),  # forward breaks: version 1's f2 has no default
    ("FULL", SCHEMA3, [SCHEMA1, SCHEMA2], True),
    ("FULL_TRANSITIVE", SCHEMA3, [SCHEMA1, SCHEMA2], False),  # backward breaks against v1
    ("FULL_TRANSITIVE", SCHEMA2, [SCHEMA3, SCHEMA1], True),
]


@pytest.mark.parametrize(("level", "new", "versions", "ok"), LEVEL_CASES)
def test_levels(level: str, new: str, versions: list[str], ok: bool) -> None:
    registered = list(enumerate(versions, start=1))
    verdict = check_compatibility(new, registered, level=CompatibilityLevel(level))
    assert verdict.compatible is ok, verdict.incompatibilities


def test_no_registered_version_is_compatible() -> None:
    assert check_compatibility(SCHEMA3, [], level=CompatibilityLevel.FULL_TRANSITIVE).compatible


def flat(ddl: str) -> str:
    return json.dumps(generate_schemas(table_from_ddl(ddl)).value_schema)


def test_reasons_name_the_column_location_version_and_direction() -> None:
    v1 = flat("CREATE TABLE d.t (id INT PRIMARY KEY, age INT)")
    v2 = flat("CREATE TABLE d.t (id INT PRIMARY KEY, age VARCHAR(3), x INT NOT NULL)")
    verdict = check_compatibility(v2, [(1, v1)], level=CompatibilityLevel.FULL)
    found = {(i.type, i.location, i.direction) for i in verdict.incompatibilities}
    assert found == {
        ("MISSING_UNION_BRANCH", "/fields/1/type/1", "new_reads_old"),
        ("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/2", "new_reads_old"),
        ("MISSING_UNION_BRANCH", "/fields/1/type/1", "old_reads_new"),
    }
    age = next(i for i in verdict.incompatibilities if i.direction == "new_reads_old"
               and "age" in i.message)
    assert "column `age` changed from int (nullable) to string (nullable)" in age.message
    assert "version 1" in age.message


def test_transitive_reports_each_version_compared() -> None:
    verdict = check_compatibility(SCHEMA3, [(1, SCHEMA1), (2, SCHEMA1)],
                                  level=CompatibilityLevel.BACKWARD_TRANSITIVE)
    assert sorted(i.version for i in verdict.incompatibilities) == [1, 2]


@pytest.mark.parametrize("text", ['{"type": "record"', '{"type": "nosuch"}',
                                  '{"type": "record", "name": "R", "fields": [{"name": "a"}]}'])
def test_invalid_schemas(text: str) -> None:
    with pytest.raises(InvalidSchemaError) as err:
        check_compatibility(text, [], level=CompatibilityLevel.BACKWARD)
    assert err.value.code == "invalid_schema"


def test_a_pair_checked_again_is_answered_from_the_cache(monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    """A table registration checks its schema, then the registry checks it again: the second
    check of the same texts at the same level runs avro's checker no more, and answers the
    same; another level, version or text is checked afresh."""
    explained: list[str] = []
    real = compatibility._explain

    def counting(**kwargs: Any) -> list[compatibility.Incompatibility]:
        explained.append(kwargs["direction"])
        return real(**kwargs)

    monkeypatch.setattr(compatibility, "_explain", counting)
    v1 = flat("CREATE TABLE d.cache (id INT PRIMARY KEY, age INT)")
    v2 = flat("CREATE TABLE d.cache (id INT PRIMARY KEY, age VARCHAR(3))")
    first = check_compatibility(v2, [(1, v1)], level=CompatibilityLevel.FULL)
    assert explained == ["new_reads_old", "old_reads_new"]
    assert check_compatibility(v2, [(1, v1)], level=CompatibilityLevel.FULL) == first
    assert not first.compatible and len(explained) == 2
    check_compatibility(v2, [(1, v1)], level=CompatibilityLevel.BACKWARD)
    check_compatibility(v2, [(2, v1)], level=CompatibilityLevel.FULL)
    assert explained[2:] == ["new_reads_old", "new_reads_old", "old_reads_new"]
