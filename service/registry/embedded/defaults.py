"""Field defaults checked against their types, as Confluent does when it validates a new schema.

Java Avro's ``Schema.isValidDefault`` rules: a string/bytes/enum/fixed default is a JSON
string, an int or long one an integral JSON number in range, a float or double one any JSON
number, a boolean one true/false, a null one null, arrays and maps hold valid items, a record
default is an object whose members (or the fields' own defaults) are valid. For a union the
newest Avro (1.12, in the newest Confluent Platform) accepts a default matching ANY branch;
older releases required the first branch.
"""

from __future__ import annotations

import json
from typing import Any

import avro.schema

from service.registry.errors import InvalidSchemaError

__all__ = ["check_defaults"]

_INT_RANGE = {"int": (-(2**31), 2**31 - 1), "long": (-(2**63), 2**63 - 1)}


def check_defaults(schema: avro.schema.Schema) -> None:
    """Refuse the first field whose default does not match its type.

    Raises:
        InvalidSchemaError: naming the field, its record and its JSON-pointer location.
    """
    _walk(schema, "", seen=set())


def _walk(schema: avro.schema.Schema, path: str, *, seen: set[str]) -> None:
    if isinstance(schema, avro.schema.RecordSchema):
        if schema.fullname in seen:
            return
        seen.add(schema.fullname)
        for i, field in enumerate(schema.fields):
            where = f"{path}/fields/{i}"
            if field.has_default and not _valid(field.type, field.default):
                raise InvalidSchemaError(
                    f"Invalid schema: Invalid default for field {field.name}: "
                    f"{json.dumps(field.default)} not a {_text(field.type)} (record "
                    f"{schema.fullname}, at {where}/default)",
                    field=field.name, record=schema.fullname, location=f"{where}/default")
            _walk(field.type, f"{where}/type", seen=seen)
    elif isinstance(schema, avro.schema.UnionSchema):
        for i, branch in enumerate(schema.schemas):
            _walk(branch, f"{path}/{i}", seen=seen)
    elif isinstance(schema, avro.schema.ArraySchema):
        _walk(schema.items, f"{path}/items", seen=seen)
    elif isinstance(schema, avro.schema.MapSchema):
        _walk(schema.values, f"{path}/values", seen=seen)


def _valid(schema: avro.schema.Schema, value: Any) -> bool:
    kind = schema.type
    if kind in ("string", "bytes", "enum", "fixed"):
        return isinstance(value, str)
    if kind in _INT_RANGE:
        low, high = _INT_RANGE[kind]
        return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high
    if kind in ("float", "double"):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "null":
        return value is None
    if isinstance(schema, avro.schema.ArraySchema):
        return isinstance(value, list) and all(_valid(schema.items, v) for v in value)
    if isinstance(schema, avro.schema.MapSchema):
        return isinstance(value, dict) and all(_valid(schema.values, v) for v in value.values())
    if isinstance(schema, avro.schema.UnionSchema):
        return any(_valid(branch, value) for branch in schema.schemas)
    if isinstance(schema, avro.schema.RecordSchema):
        return isinstance(value, dict) and all(
            (f.name in value and _valid(f.type, value[f.name]))
            or (f.name not in value and f.has_default and _valid(f.type, f.default))
            for f in schema.fields)
    return False


def _text(schema: avro.schema.Schema) -> str:
    if isinstance(schema, avro.schema.NamedSchema):
        return json.dumps(schema.fullname)
    return json.dumps(schema.to_json(), separators=(",", ":"))
