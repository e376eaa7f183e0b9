"""Which table version the rows of a batch are: each event's group (topic and exact version,
or row shape for definitions derived from rows), a key named by ``key_columns``, and the next
value schema when rows carry other columns than the registered version."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from service.cdc.definition import TableDefinition
from service.cdc.events import ChangeEvent, EventKind
from service.codec.resolver import TopicSchemas
from service.core.errors import InvalidInputError
from service.core.options import SchemaOptions
from service.core.schema import EXTENSION_FIELDS, SchemaPair, generate_schemas
from service.core.table import Table

__all__ = ["Group", "evolved_schemas", "groups", "keyed", "same_schemas"]

Group = tuple[str, object]
"""Where events go: (topic, exact table version or None), or (topic, ("rows", columns)) for
definitions derived from rows, one per row shape."""

_EXTENSION_FIELDS = frozenset(f["name"] for f in EXTENSION_FIELDS)


def groups(events: list[ChangeEvent], *, topics: list[str], register: bool
           ) -> list[tuple[Group, TableDefinition | None]]:
    """Each event's group and the definition its target is made from: one group per
    (topic, exact table version); with `register`, rows derived from themselves get one
    group per row shape, so a column added (or dropped) mid-batch gives a version of its
    own, and a DELETE, whose image may hold only the key, goes with the shape before it."""
    first_definition: dict[str, TableDefinition] = {}
    for event, topic in zip(events, topics, strict=True):
        if event.definition is not None:
            first_definition.setdefault(topic, event.definition)
    out: list[tuple[Group, TableDefinition | None]] = []
    shape_of: dict[str, tuple[Group, TableDefinition]] = {}  # topic -> last row shape
    # A decoder shares one definition among the rows of one shape: its column names are
    # listed once per definition, not once per row.
    names_of: dict[int, tuple[str, tuple[str, ...]]] = {}
    for event, topic in zip(events, topics, strict=True):
        definition = event.definition or first_definition.get(topic)
        exact = definition is not None and definition.exact
        group: Group = (topic, definition.version if exact and definition else None)
        if register and definition is not None and not exact:
            if event.kind is EventKind.DELETE and topic in shape_of:
                group, definition = shape_of[topic]
            else:
                names = names_of.get(id(definition))
                if names is None:
                    names = names_of[id(definition)] = (
                        "rows", tuple(c.name for c in definition.columns))
                group = (topic, names)
                if event.kind is not EventKind.DELETE:
                    shape_of[topic] = (group, definition)
        out.append((group, definition))
    return out


def keyed(event: ChangeEvent, key_columns: Mapping[str, tuple[str, ...]]) -> ChangeEvent:
    """The event with the key `key_columns` names for its table, if any (those columns NOT
    NULL), on a definition the rows imply; a definition that has a key keeps it.

    Raises:
        InvalidInputError: a named key column is not in the message.
    """
    definition = event.definition
    key = key_columns.get(f"{event.schema}.{event.table}")
    if key is None or definition is None or definition.exact or definition.key:
        return event
    names = {c.name for c in definition.columns}
    for column in key:
        if column not in names:
            raise InvalidInputError(
                f"key column `{column}` of `{event.schema}`.`{event.table}` (key_columns) is "
                "not in the message", column=column, field="key_columns")
    columns = tuple(dataclasses.replace(c, nullable=False) if c.name in key else c
                    for c in definition.columns)
    return dataclasses.replace(event, definition=dataclasses.replace(
        definition, columns=columns, key=tuple(key)))


def evolved_schemas(registered: TopicSchemas, definition: TableDefinition, *, options: SchemaOptions
             ) -> tuple[Table, SchemaPair, str] | None:
    """The next value schema when rows carry other columns than the latest registered
    version (a table altered while no DDL was seen): the registered fields of the columns the
    rows keep, in row order, and a field for each new column as the rows imply it, made
    nullable with default null (rows carry neither NOT NULL nor defaults) — None when the
    columns are the registered ones. The key schema stays.

    Raises:
        MissingFactError: a new column's type lacks a fact its field needs.
    """
    value = json.loads(registered.value.registered.schema)
    fields = {f["name"]: f for f in value["fields"] if f["name"] not in _EXTENSION_FIELDS}
    extension = [f for f in value["fields"] if f["name"] in _EXTENSION_FIELDS]
    columns = [c.name for c in definition.columns]
    if set(columns) == set(fields):
        return None
    new = [c for c in columns if c not in fields]
    gone = [name for name in fields if name not in set(columns)]
    keep = set(new) | set(definition.key) or {columns[0]}
    part = dataclasses.replace(
        definition, columns=tuple(c for c in definition.columns if c.name in keep),
        missing=tuple(m for m in definition.missing if m.column in keep))
    table = part.to_table(options)
    generated = {f["name"]: f for f in generate_schemas(table, options).value_schema["fields"]}
    for name in new:
        generated[name] = _nullable(generated[name])
    value = dict(value, fields=[fields.get(c) or generated[c] for c in columns] + extension)
    key = None if registered.key is None else json.loads(registered.key.registered.schema)
    words = [f"new column(s) {', '.join(f'`{c}`' for c in new)} (nullable, default null: "
             "rows carry neither NOT NULL nor defaults)"] if new else []
    words += [f"column(s) {', '.join(f'`{c}`' for c in gone)} dropped"] if gone else []
    note = (f"table `{definition.schema}`.`{definition.table}`: a new value schema for topic "
            f"{registered.topic} derived from the rows, no DDL seen: " + "; ".join(words))
    return table, SchemaPair(key, value, tuple(definition.key)), note


def _nullable(avro_field: dict[str, Any]) -> dict[str, Any]:
    """The field as a nullable one with default null (already nullable: as it is)."""
    kind = avro_field["type"]
    if isinstance(kind, list) and "null" in kind:
        return avro_field
    return {"default": None, "name": avro_field["name"], "type": ["null", kind]}


def same_schemas(pair: SchemaPair, registered: TopicSchemas) -> bool:
    """Whether `pair` is the topic's latest registered key and value schemas."""
    key = None if registered.key is None else json.loads(registered.key.registered.schema)
    return (pair.value_schema == json.loads(registered.value.registered.schema)
            and pair.key_schema == key)
