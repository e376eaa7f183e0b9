"""Apache avro's reader/writer compatibility checker, with Java Avro's rule for the names of
records, enums and fixed (the rule Confluent's registry applies), not the Python package's."""

from __future__ import annotations

from collections.abc import Iterable

import avro.schema
from avro.compatibility import (
    CompatibleResult,
    ReaderWriterCompatibilityChecker,
    SchemaCompatibilityResult,
    SchemaIncompatibilityType,
    SchemaType,
    check_fixed_size,
    check_reader_enum_contains_writer_enum,
    incompatible,
    merge,
)
from avro.schema import EnumSchema, Field, FixedSchema, RecordSchema
from typing_extensions import override

__all__ = ["JavaNameChecker", "field_index", "names_match", "writer_field"]


def names_match(reader: avro.schema.NamedSchema, writer: avro.schema.NamedSchema) -> bool:
    """Whether a reader's record, enum or fixed may read the writer's: Java Avro's rule.

    Java's ``SchemaCompatibility.schemaNameEquals`` (1.11 and 1.12): the unqualified names are
    equal (``getName()``: the namespaces are not compared), or the writer's full name is one of
    the reader's aliases, each qualified by the *reader's* namespace (``Schema.getAliases()``).
    The Python package looks the writer's full name up in the aliases as written, so an alias
    without a dot (``"User"`` in namespace ``com.acme``) never matched, and neither did any
    alias of a stored schema in its own namespace: Java's ``Schema.toString()``, the registry's
    stored form, writes ``com.acme.User`` as ``"User"`` there.
    """
    return (reader.fullname.rpartition(".")[2] == writer.fullname.rpartition(".")[2]
            or writer.fullname in _java_aliases(reader))


def _java_aliases(schema: avro.schema.NamedSchema) -> set[str]:
    """A named schema's aliases as Java Avro's ``getAliases()`` returns them (1.12)."""
    aliases = schema.props.get("aliases")
    if not isinstance(aliases, list):
        return set()
    space = schema.fullname.rpartition(".")[0] or None
    out: set[str] = set()
    for alias in aliases:
        if not isinstance(alias, str):
            continue
        given, dot, short = alias.rpartition(".")
        own = (given or None) if dot else space  # Schema.Name(alias, the schema's namespace)
        if own is None and space is not None:
            out.add("." + short)  # 1.12: an alias put in the null namespace (".User") never
            continue  # matches (1.11 matched it with a writer "User" in the null namespace)
        out.add(f"{own}.{short}" if own else short)
    return out


def field_index(record: RecordSchema) -> dict[str, Field]:
    """A record's fields by name, built once per record.

    avro's ``RecordSchema.fields_dict`` builds a new dict on every call and its
    ``lookup_writer_field`` asks for it once per reader field, so checking a record of n fields
    cost O(n^2): 3.5 s for a 4096-column table under FULL, 0.5 s with the index built once
    (`bench/bench_compatibility.py`).
    """
    return {field.name: field for field in record.fields}


def writer_field(index: dict[str, Field], reader_field: Field) -> Field | None:
    """avro's ``lookup_writer_field`` over `index`: the reader field's name, then its aliases."""
    direct = index.get(reader_field.name)
    if direct is not None:
        return direct
    aliases = reader_field.props.get("aliases")
    if not isinstance(aliases, Iterable):
        return None
    return next((index[a] for a in aliases if a in index), None)


class JavaNameChecker(ReaderWriterCompatibilityChecker):
    """Apache avro's reader/writer checker, with Java's name rule for records, enums, fixed, and
    each writer record's fields indexed once per record pair (`field_index`; avro's memo
    reaches a pair's field step once)."""

    @override  # avro calls it with three positional arguments
    def check_reader_writer_record_fields(
        self, reader: RecordSchema, writer: RecordSchema, location: list[str],
    ) -> SchemaCompatibilityResult:
        # avro's steps (Java's checkReaderWriterRecordFields), its lookup over an index
        index = field_index(writer)
        result = CompatibleResult
        for i, field in enumerate(reader.fields):
            here = location + ["fields", str(i)]
            other = writer_field(index, field)
            if other is not None:
                step = self.get_compatibility(field.type, other.type, "type", here)
            elif field.has_default:
                continue
            elif field.type.type == SchemaType.ENUM and field.type.props.get("default"):
                step = self.get_compatibility(field.type, writer, "type", here)
            else:
                step = incompatible(SchemaIncompatibilityType.reader_field_missing_default_value,
                                    field.name, here)
            result = merge(result, step)
        return result

    @override  # avro calls it with three positional arguments
    def calculate_compatibility(
        self, reader: avro.schema.Schema, writer: avro.schema.Schema, location: list[str],
    ) -> SchemaCompatibilityResult:
        # avro's own steps for these three types, its schema_name_equals replaced
        same = reader.type == writer.type
        rest: SchemaCompatibilityResult
        if same and isinstance(reader, FixedSchema) and isinstance(writer, FixedSchema):
            rest = check_fixed_size(reader, writer, location)
        elif same and isinstance(reader, EnumSchema) and isinstance(writer, EnumSchema):
            rest = check_reader_enum_contains_writer_enum(reader, writer, location)
        elif same and reader.type == SchemaType.RECORD and isinstance(reader, RecordSchema) \
                and isinstance(writer, RecordSchema):
            rest = self.check_reader_writer_record_fields(reader, writer, location)
        else:
            return super().calculate_compatibility(reader, writer, location)
        return merge(_name_check(reader, writer, location=location), rest)


def _name_check(reader: avro.schema.NamedSchema, writer: avro.schema.NamedSchema, *,
                location: list[str]) -> SchemaCompatibilityResult:
    """Avro's name step for a record, enum or fixed pair, with Java's rule (`names_match`)."""
    if names_match(reader, writer):
        return CompatibleResult
    return incompatible(SchemaIncompatibilityType.name_mismatch,
                        f"expected: {writer.fullname}", location + ["name"])
