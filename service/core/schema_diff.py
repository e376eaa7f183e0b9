"""Column-level differences between two Avro schemas (parsed JSON in, a list of changes out).

A flat-avro value schema is a record whose fields are the table's columns; a nullable column
is a union with ``"null"``. The diff compares fields by name: columns added or removed, and
for a column in both, its type (the non-null branch), its nullability and its default, each
reported separately. Anything that is not a field of both records (a primitive schema, a
renamed record) is one ``schema_changed`` entry, so no difference goes unreported.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass
from typing import Any

__all__ = ["ChangeKind", "FieldChange", "diff_schemas", "describe_type"]


class ChangeKind(enum.Enum):
    """What changed from the old schema to the new one."""

    ADDED = "added"
    REMOVED = "removed"
    TYPE_CHANGED = "type_changed"
    DEFAULT_CHANGED = "default_changed"
    NULLABILITY_CHANGED = "nullability_changed"
    SCHEMA_CHANGED = "schema_changed"
    """Not a column: the record's full name, or a schema that is not a record."""


@dataclass(frozen=True, slots=True)
class FieldChange:
    """One difference between two schemas.

    Attributes:
        kind: what changed.
        column: the field (column) name; None for a `SCHEMA_CHANGED` entry.
        before: the old state: the whole field (`REMOVED`), the type without ``null``
            (`TYPE_CHANGED`), whether it was nullable (`NULLABILITY_CHANGED`),
            ``{"default": value}`` or None for no default (`DEFAULT_CHANGED`), the old schema
            or record name (`SCHEMA_CHANGED`); None for `ADDED`.
        after: the new state, alike (the whole field for `ADDED`, None for `REMOVED`).
        message: a sentence naming the column and the change.
    """

    kind: ChangeKind
    column: str | None
    before: Any
    after: Any
    message: str


def diff_schemas(old: Any, new: Any) -> list[FieldChange]:
    """The changes from `old` to `new` (Avro schemas as parsed JSON).

    Removed and changed columns come in the old schema's field order, then added columns in
    the new schema's order. Equal schemas give an empty list.
    """
    if not (_is_record(old) and _is_record(new)):
        if _same(old, new):
            return []
        return [FieldChange(ChangeKind.SCHEMA_CHANGED, None, old, new,
                            f"the schema changed from {describe_type(old)} to "
                            f"{describe_type(new)}")]
    changes: list[FieldChange] = []
    old_name, new_name = _full_name(old), _full_name(new)
    if old_name != new_name:
        changes.append(FieldChange(ChangeKind.SCHEMA_CHANGED, None, old_name, new_name,
                                   f"the record was renamed from {old_name} to {new_name}"))
    before, after = _fields(old), _fields(new)
    for name, field in before.items():
        if name in after:
            changes.extend(_field_changes(name, old=field, new=after[name]))
        else:
            changes.append(FieldChange(
                ChangeKind.REMOVED, name, field, None,
                f"column `{name}` was removed (it was {_describe_field(field)})"))
    for name, field in after.items():
        if name not in before:
            changes.append(FieldChange(
                ChangeKind.ADDED, name, None, field,
                f"column `{name}` was added: {_describe_field(field)}"))
    return changes


def describe_type(avro_type: Any) -> str:
    """A short reading of an Avro type: ``long [BIGINT]``, ``bytes decimal(12,2) [DECIMAL]``,
    ``null | string``; the TiDB type (``connect.parameters.tidb_type``) in brackets."""
    if isinstance(avro_type, list):
        return " | ".join(describe_type(branch) for branch in avro_type)
    if not isinstance(avro_type, dict):
        return str(avro_type)
    base = avro_type.get("type")
    if base in ("record", "enum", "fixed"):
        text = f"{base} {avro_type.get('name')}"
    elif base == "array":
        text = f"array<{describe_type(avro_type.get('items'))}>"
    elif base == "map":
        text = f"map<{describe_type(avro_type.get('values'))}>"
    else:
        text = describe_type(base)
    logical = avro_type.get("logicalType")
    if logical == "decimal":
        text += f" decimal({avro_type.get('precision')},{avro_type.get('scale', 0)})"
    elif logical:
        text += f" {logical}"
    parameters = avro_type.get("connect.parameters")
    if isinstance(parameters, dict) and "tidb_type" in parameters:
        text += f" [{parameters['tidb_type']}]"
    return text


def _field_changes(name: str, *, old: dict[str, Any], new: dict[str, Any]
                   ) -> list[FieldChange]:
    changes: list[FieldChange] = []
    old_nullable, old_type = _split_null(old.get("type"))
    new_nullable, new_type = _split_null(new.get("type"))
    if not _same(old_type, new_type):
        changes.append(FieldChange(ChangeKind.TYPE_CHANGED, name, old_type, new_type,
                                   f"column `{name}`: type {_type_change(old_type, new_type)}"))
    if old_nullable != new_nullable:
        became = "nullable" if new_nullable else "NOT NULL"
        changes.append(FieldChange(ChangeKind.NULLABILITY_CHANGED, name, old_nullable,
                                   new_nullable, f"column `{name}` became {became}"))
    old_default, new_default = _default(old), _default(new)
    if not _same(old_default, new_default):
        changes.append(FieldChange(
            ChangeKind.DEFAULT_CHANGED, name, old_default, new_default,
            f"column `{name}`: {_describe_default(old_default)} -> "
            f"{_describe_default(new_default)}"))
    return changes


def _type_change(old: Any, new: Any) -> str:
    """``old -> new`` in short readings, or in JSON when those read the same (an ENUM's
    members, a parameter the short reading leaves out)."""
    before, after = describe_type(old), describe_type(new)
    if before == after:
        before, after = _canonical(old), _canonical(new)
    return f"{before} -> {after}"


def _split_null(avro_type: Any) -> tuple[bool, Any]:
    """(nullable, the type without its ``null`` branch)."""
    if not isinstance(avro_type, list) or "null" not in avro_type:
        return avro_type == "null", avro_type
    rest = [branch for branch in avro_type if branch != "null"]
    return True, rest[0] if len(rest) == 1 else rest


def _default(field: dict[str, Any]) -> dict[str, Any] | None:
    """``{"default": value}``, or None for a field without one (unlike a null default)."""
    return {"default": field["default"]} if "default" in field else None


def _describe_default(default: dict[str, Any] | None) -> str:
    return "no default" if default is None else f"default {_canonical(default['default'])}"


def _describe_field(field: dict[str, Any]) -> str:
    nullable, avro_type = _split_null(field.get("type"))
    return (f"{describe_type(avro_type)}, {'nullable' if nullable else 'NOT NULL'}, "
            f"{_describe_default(_default(field))}")


def _is_record(schema: Any) -> bool:
    return isinstance(schema, dict) and schema.get("type") == "record" \
        and isinstance(schema.get("fields"), list)


def _full_name(record: dict[str, Any]) -> str:
    name = str(record.get("name"))
    namespace = record.get("namespace")
    return f"{namespace}.{name}" if namespace and "." not in name else name


def _fields(record: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {str(f.get("name")): f for f in record["fields"] if isinstance(f, dict)}


def _canonical(value: Any) -> str:
    """JSON with sorted keys: equal for equal values, and `true` never equal to `1`."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _same(a: Any, b: Any) -> bool:
    return _canonical(a) == _canonical(b)
