"""Confluent's wording of incompatibilities: newest failing version only, big schemas cut."""

from __future__ import annotations

import json

from service.registry.compatibility import CompatibilityLevel, check_compatibility
from service.registry.embedded.confluent_messages import (
    incompatibility_messages,
    incompatible_message,
)


def rec(*fields: tuple[str, str]) -> str:
    return json.dumps({"type": "record", "name": "R",
                       "fields": [{"name": n, "type": t} for n, t in fields]})


def test_only_the_newest_failing_version_is_reported() -> None:
    v1, v2 = rec(("a", "int"), ("b", "int")), rec(("a", "int"), ("b", "int"), ("c", "int"))
    new = rec(("a", "string"))
    level = CompatibilityLevel.FORWARD_TRANSITIVE
    verdict = check_compatibility(new, [(1, v1), (2, v2)], level=level)
    messages = incompatibility_messages(verdict, level=level, old_schemas={1: v1, 2: v2})
    assert "{oldSchemaVersion: 2}" in messages and "{oldSchemaVersion: 1}" not in messages
    assert messages[-1] == "{validateFields: 'false', compatibility: 'FORWARD_TRANSITIVE'}"
    assert incompatible_message("s", ["x", "y"]) == (
        'Schema being registered is incompatible with an earlier schema for subject "s", '
        "details: [x, y]")


def test_an_old_schema_over_10_kib_is_truncated() -> None:
    old = rec(*[(f"column_{i:05d}", "int") for i in range(600)])
    new = rec(("column_00000", "string"))
    verdict = check_compatibility(new, [(1, old)], level=CompatibilityLevel.BACKWARD)
    messages = incompatibility_messages(verdict, level=CompatibilityLevel.BACKWARD,
                                        old_schemas={1: old})
    [shown] = [m for m in messages if m.startswith("{oldSchema:")]
    assert shown == f"{{oldSchema: <truncated> '{old[:10 * 1024]}...'}}"


def test_compatible_means_no_messages() -> None:
    schema = rec(("a", "int"))
    verdict = check_compatibility(schema, [(1, schema)], level=CompatibilityLevel.FULL)
    assert incompatibility_messages(verdict, level=CompatibilityLevel.FULL,
                                    old_schemas={1: schema}) == []
