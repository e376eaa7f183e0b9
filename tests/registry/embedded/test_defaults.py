"""Field defaults must match their types (Java Avro's isValidDefault, as Confluent applies it)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from service.registry.compatibility import parse_avro
from service.registry.embedded.defaults import check_defaults
from service.registry.errors import InvalidSchemaError


def record(type_: Any, default: Any) -> str:
    return json.dumps({"type": "record", "name": "ns.R", "fields": [
        {"name": "ok", "type": "int"}, {"name": "col", "type": type_, "default": default}]})


VALID = [
    ("string", "x"), ("bytes", "\u00ff"), ("int", -(2**31)), ("int", 2**31 - 1),
    ("long", 2**63 - 1), ("float", 1), ("double", 1.5), ("boolean", False), ("null", None),
    (["null", "string"], None), (["null", "string"], "x"), (["int", "null"], None),
    ({"type": "array", "items": "int"}, [1, 2]), ({"type": "map", "values": "long"}, {"a": 1}),
    ({"type": "enum", "name": "E", "symbols": ["A"]}, "A"),
    ({"type": "fixed", "name": "F", "size": 1}, "\u0000"),
    ({"type": "record", "name": "In", "fields": [{"name": "a", "type": "int"},
                                                 {"name": "b", "type": "int", "default": 0}]},
     {"a": 1}),
    ({"type": "bytes", "logicalType": "decimal", "precision": 4, "scale": 2}, "\u0000"),
]
INVALID = [
    ("string", None), ("string", 1), ("int", "x"), ("int", 1.0), ("int", 2**31), ("int", True),
    ("long", 2**63), ("float", "1"), ("double", None), ("boolean", 0), ("null", 0),
    (["null", "int"], "x"), ({"type": "array", "items": "int"}, ["a"]),
    ({"type": "map", "values": "int"}, []), ({"type": "enum", "name": "E", "symbols": ["A"]}, 0),
    ({"type": "record", "name": "In", "fields": [{"name": "a", "type": "int"}]}, {}),
]


@pytest.mark.parametrize(("type_", "default"), VALID)
def test_matching_defaults_pass(type_: Any, default: Any) -> None:
    check_defaults(parse_avro(record(type_, default)))


@pytest.mark.parametrize(("type_", "default"), INVALID)
def test_a_mismatching_default_is_refused_naming_the_field(type_: Any, default: Any) -> None:
    with pytest.raises(InvalidSchemaError) as err:
        check_defaults(parse_avro(record(type_, default)))
    assert err.value.registry_code == 42201
    assert err.value.details == {"field": "col", "record": "ns.R",
                                 "location": "/fields/1/default"}
    assert f"Invalid default for field col: {json.dumps(default)} not a" in err.value.message


def test_nested_records_in_unions_arrays_and_maps_are_checked() -> None:
    inner = {"type": "record", "name": "In", "fields": [{"name": "z", "type": "long",
                                                         "default": "0"}]}
    schema = json.dumps({"type": "record", "name": "R", "fields": [
        {"name": "a", "type": {"type": "map", "values": {"type": "array",
                                                          "items": ["null", inner]}}}]})
    with pytest.raises(InvalidSchemaError) as err:
        check_defaults(parse_avro(schema))
    assert err.value.details["location"] == "/fields/0/type/values/items/1/fields/0/default"
    assert err.value.details["record"] == "In"


def test_recursive_records_terminate() -> None:
    schema = json.dumps({"type": "record", "name": "Node", "fields": [
        {"name": "next", "type": ["null", "Node"], "default": None}]})
    check_defaults(parse_avro(schema))
