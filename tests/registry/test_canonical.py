"""The stored form is Java Avro's Schema.toString(); one identity for every spelling of a schema."""

from __future__ import annotations

import json
from typing import Any

import pytest

from service.registry.canonical import canonical_schema, stored_form
from service.registry.errors import InvalidSchemaError

# (schema as sent, Java Avro's Schema.toString() of it) -- written out by hand from Java's
# Schema.toJson rules, not computed.
JAVA_FORMS: list[tuple[Any, str]] = [
    ({"type": "string"}, '"string"'),
    # Jackson writes doubles as Java's Double.toString (Python's str() of avro.schema.parse
    # differs here too: spaces, key order, repeated namespaces), control characters as \uXXXX
    ({"type": "record", "name": "N", "fields": [
        {"name": "d", "type": "double", "default": 1e10, "doc": "tab\tbell\u0007"},
        {"name": "e", "type": "float", "default": 0.0001, "x": -2.5e-7}]},
     '{"type":"record","name":"N","fields":[{"name":"d","type":"double","doc":"tab\\tbell'
     '\\u0007","default":1.0E10},{"name":"e","type":"float","default":1.0E-4,"x":-2.5E-7}]}'),
    ("int", '"int"'),
    ({"type": "long", "doc": "reserved: dropped", "name": "too"}, '"long"'),
    ({"type": "long", "connect.name": "x", "logicalType": "timestamp-millis"},
     '{"type":"long","connect.name":"x","logicalType":"timestamp-millis"}'),
    (["null", {"type": "int"}], '["null","int"]'),
    ({"items": "int", "type": "array", "x-prop": 1}, '{"type":"array","items":"int","x-prop":1}'),
    ({"values": {"type": "map", "values": "bytes"}, "type": "map"},
     '{"type":"map","values":{"type":"map","values":"bytes"}}'),
    ({"size": 16, "name": "md5", "type": "fixed", "namespace": "h", "aliases": ["h.old", "o.x"]},
     '{"type":"fixed","name":"md5","namespace":"h","size":16,"aliases":["old","o.x"]}'),
    ({"symbols": ["A", "B"], "type": "enum", "name": "E", "default": "A", "doc": "d"},
     '{"type":"enum","name":"E","doc":"d","symbols":["A","B"],"default":"A"}'),
    ({"fields": [{"type": "int", "name": "a", "order": "descending", "aliases": ["b", "b"],
                  "default": 1, "doc": "x", "p": True}],
      "name": "R", "type": "error"},
     '{"type":"error","name":"R","fields":[{"name":"a","type":"int","doc":"x","default":1,'
     '"order":"descending","aliases":["b"],"p":true}]}'),
    ({"type": "record", "name": "Outer", "namespace": "ns", "fields": [
        {"name": "plain", "type": {"type": "record", "name": "NoSpace", "namespace": "",
                                   "fields": []}},
        {"name": "again", "type": "NoSpace"},
        {"name": "self", "type": ["null", "Outer"]},
        {"name": "same", "type": {"type": "fixed", "name": "ns.F", "size": 1}}]},
     '{"type":"record","name":"Outer","namespace":"ns","fields":['
     '{"name":"plain","type":{"type":"record","name":"NoSpace","namespace":"","fields":[]}},'
     '{"name":"again","type":"NoSpace"},{"name":"self","type":["null","Outer"]},'
     '{"name":"same","type":{"type":"fixed","name":"F","size":1}}]}'),
    ({"type": "record", "name": "R", "fields": [{"name": "s", "type": "string",
                                                  "default": "naïve ✓"}]},
     '{"type":"record","name":"R","fields":[{"name":"s","type":"string","default":"naïve ✓"}]}'),
]


@pytest.mark.parametrize(("sent", "java"), JAVA_FORMS)
def test_stored_text_is_java_schema_to_string(sent: Any, java: str) -> None:
    assert stored_form(json.dumps(sent, indent=2, ensure_ascii=False)).text == java


def test_normalize_sorts_properties_and_aliases_keeping_the_logical_type_first() -> None:
    sent = {"type": "record", "name": "R", "zz": {"b": 1, "a": [{"d": 1, "c": 2}]}, "aa": 0,
            "aliases": ["Z", "A"], "fields": [
                {"name": "d", "type": {"type": "bytes", "scale": 2, "precision": 5,
                                       "logicalType": "decimal", "b": 1},
                 "aliases": ["y", "x"], "z": 1, "a": 2}]}
    assert stored_form(json.dumps(sent), normalize=True).text == (
        '{"type":"record","name":"R","fields":[{"name":"d","type":{"type":"bytes",'
        '"logicalType":"decimal","precision":5,"scale":2,"b":1},"aliases":["x","y"],"a":2,'
        '"z":1}],"aa":0,"zz":{"a":[{"c":2,"d":1}],"b":1},"aliases":["A","Z"]}')


@pytest.mark.parametrize("other", [
    '{"fields":[{"type":{"type":"int"},"name":"a"}],"type":"record","name":"R","namespace":"n"}',
    '{"type":"record","name":"n.R","fields":[{"name":"a","type":"int","order":"ascending"}]}',
    '{"type":"record","name":"R","namespace":"n","fields":[{"name":"a","type":"int"}]}  ',
])
def test_spellings_of_one_schema_share_an_identity(other: str) -> None:
    one = '{"type":"record","name":"R","namespace":"n","fields":[{"name":"a","type":"int"}]}'
    assert stored_form(other).identity == stored_form(one).identity
    assert stored_form(other).text == one


@pytest.mark.parametrize("other", [
    '{"type":"record","name":"R","namespace":"n","fields":[{"name":"a","type":"int","doc":"d"}]}',
    '{"type":"record","name":"R","namespace":"m","fields":[{"name":"a","type":"int"}]}',
    '{"type":"record","name":"R","namespace":"n","fields":[{"name":"a","type":"int",'
    '"default":0}]}',
    '{"type":"record","name":"R","namespace":"n","fields":[{"name":"a","type":{"type":"int",'
    '"connect.parameters":{"x":"1"}}}]}',
])
def test_docs_defaults_namespaces_and_properties_make_another_schema(other: str) -> None:
    one = '{"type":"record","name":"R","namespace":"n","fields":[{"name":"a","type":"int"}]}'
    assert stored_form(other).identity != stored_form(one).identity


def test_the_legacy_identity_is_unchanged() -> None:
    """Rows stored before the Java form are keyed by it (and the remote client caches by it)."""
    assert canonical_schema('{"name": "R", "type": "record", "fields": [{"name": "a", '
                            '"type": {"type": "int"}}]}') == \
        '{"fields":[{"name":"a","type":"int"}],"name":"R","type":"record"}'


@pytest.mark.parametrize("text", ["{not json", '{"type": "nosuch"}', '{"type": "record"}'])
def test_invalid_schemas_are_refused(text: str) -> None:
    with pytest.raises(InvalidSchemaError) as err:
        stored_form(text)
    assert err.value.registry_code == 42201
