"""Avro compatibility with reasons: Apache avro's reader/writer checker, per level and version.

The verdict is the Apache `avro` package's checker (the rules Confluent's Java checker applies)
with one correction: the names of records, enums and fixed are compared as Java Avro compares
them (`avro_checker`), not as the Python package does. To say *which* column broke and how, the
check is repeated field by field with the same checker, so each incompatibility carries its type,
JSON-pointer location, the version compared and a sentence that names the column.
"""

from __future__ import annotations

import ast
import contextlib
import enum
import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

import avro.errors
import avro.schema
from avro.compatibility import SchemaCompatibilityResult, SchemaCompatibilityType

from service.registry.avro_checker import JavaNameChecker, field_index, names_match, writer_field
from service.registry.errors import InvalidSchemaError

__all__ = [
    "CompatibilityLevel",
    "Incompatibility",
    "CompatibilityVerdict",
    "InvalidSchemaError",
    "parse_avro",
    "check_compatibility",
]


class CompatibilityLevel(enum.Enum):
    """The seven Confluent compatibility levels."""

    NONE = "NONE"
    BACKWARD = "BACKWARD"
    BACKWARD_TRANSITIVE = "BACKWARD_TRANSITIVE"
    FORWARD = "FORWARD"
    FORWARD_TRANSITIVE = "FORWARD_TRANSITIVE"
    FULL = "FULL"
    FULL_TRANSITIVE = "FULL_TRANSITIVE"

    @property
    def transitive(self) -> bool:
        """True when every live version is compared, not only the newest."""
        return self.value.endswith("_TRANSITIVE")

    @property
    def new_reads_old(self) -> bool:
        """BACKWARD and FULL: the new schema must read what old versions wrote."""
        return self.value.startswith(("BACKWARD", "FULL"))

    @property
    def old_reads_new(self) -> bool:
        """FORWARD and FULL: old versions must read what the new schema writes."""
        return self.value.startswith(("FORWARD", "FULL"))


@dataclass(frozen=True, slots=True)
class Incompatibility:
    """One reason a schema is incompatible with one registered version.

    Attributes:
        type: Avro's incompatibility type in upper case (``TYPE_MISMATCH``, ...).
        location: JSON pointer into the *reader* schema (``/fields/3/type``).
        message: a sentence naming the column and what breaks for whom.
        version: the registered version compared against.
        direction: ``new_reads_old`` or ``old_reads_new``.
        detail: Avro's own terse reason (Java Avro's wording, which Confluent shows as
            ``additionalInfo``): the field name, ``reader type: INT not compatible with
            writer type: STRING``, ``[B, C]`` for missing enum symbols, ...
    """

    type: str
    location: str
    message: str
    version: int
    direction: str
    detail: str = ""


@dataclass(frozen=True, slots=True)
class CompatibilityVerdict:
    """The outcome of a check: compatible or not, with every incompatibility found."""

    compatible: bool
    incompatibilities: tuple[Incompatibility, ...] = ()


@functools.lru_cache(maxsize=1024)
def parse_avro(text: str) -> avro.schema.Schema:
    """Parse an Avro schema text (cached: schema texts are immutable values).

    Raises:
        InvalidSchemaError: not JSON, or not a valid Avro schema (the parser's reason).
    """
    try:
        return avro.schema.parse(text)
    except (avro.errors.AvroException, ValueError, TypeError) as exc:
        raise InvalidSchemaError(f"invalid Avro schema: {exc}") from exc


def check_compatibility(
    new: str,
    registered: Sequence[tuple[int, str]],
    *,
    level: CompatibilityLevel,
) -> CompatibilityVerdict:
    """Check `new` against registered versions as a registry would on registration.

    Args:
        new: the candidate schema text.
        registered: the live versions as (version, schema text), oldest first.
        level: the subject's effective compatibility level.
    """
    parse_avro(new)  # an invalid schema is refused whatever the level
    if level is CompatibilityLevel.NONE or not registered:
        return CompatibilityVerdict(True)
    targets = registered if level.transitive else registered[-1:]
    found: list[Incompatibility] = []
    for version, text in targets:
        if text == new:
            # A schema always reads itself. Checking it costs O(fields^2) in avro (its memo
            # hashes a (reader, writer) pair as id(reader) ^ id(writer): 0 for one cached
            # object), half a minute for a 4096-column table re-registered unchanged.
            continue
        found.extend(_pair(new, text, version=version, new_reads_old=level.new_reads_old,
                           old_reads_new=level.old_reads_new))
    return CompatibilityVerdict(not found, tuple(found))


@functools.lru_cache(maxsize=64)
def _pair(new: str, old: str, *, version: int, new_reads_old: bool, old_reads_new: bool
          ) -> tuple[Incompatibility, ...]:
    """What keeps `new` from reading `old` and/or `old` from reading `new` (registered as
    `version`). Cached, as `parse_avro` is (a pure function of texts): a table registration
    checks its schema before registering it, and the registry checks it again; at 4,096
    columns each FULL check costs about half a second (bench_compatibility)."""
    new_schema, old_schema = parse_avro(new), parse_avro(old)
    found: list[Incompatibility] = []
    if new_reads_old:
        found.extend(_explain(reader=new_schema, writer=old_schema, version=version,
                              direction="new_reads_old"))
    if old_reads_new:
        found.extend(_explain(reader=old_schema, writer=new_schema, version=version,
                              direction="old_reads_new"))
    return tuple(found)


def _explain(
    *, reader: avro.schema.Schema, writer: avro.schema.Schema, version: int, direction: str
) -> list[Incompatibility]:
    verdict = JavaNameChecker().get_compatibility(reader, writer)
    if verdict.compatibility is SchemaCompatibilityType.compatible:
        return []
    details: list[Incompatibility] = []
    record = avro.schema.RecordSchema
    if isinstance(reader, record) and isinstance(writer, record):
        details = _record_details(reader, writer, version=version, direction=direction)
    if not details:  # not a record pair, or a shape the field walk does not cover
        details = _from_result(verdict, version=version, direction=direction, field=None)
    return details


def _record_details(
    reader: avro.schema.RecordSchema, writer: avro.schema.RecordSchema, *, version: int,
    direction: str,
) -> list[Incompatibility]:
    """A record pair's incompatibilities field by field, each naming its column."""
    out: list[Incompatibility] = []
    if not names_match(reader, writer):
        out.append(Incompatibility(
            "NAME_MISMATCH", "/name",
            "record name changed from "
            + _old_new(direction, writer=writer.fullname, reader=reader.fullname),
            version, direction, f"expected: {writer.fullname}"))
    index = field_index(writer)
    for i, field in enumerate(reader.fields):
        location = f"/fields/{i}"
        other = writer_field(index, field)
        if other is None:
            if not field.has_default:
                out.append(Incompatibility(
                    "READER_FIELD_MISSING_DEFAULT_VALUE", location,
                    _missing_default_message(field.name, version=version, direction=direction),
                    version, direction, field.name))
            continue
        result = JavaNameChecker().get_compatibility(
            field.type, other.type, "type", ["/", "fields", str(i)])
        if result.compatibility is SchemaCompatibilityType.incompatible:
            out.extend(_from_result(result, version=version, direction=direction,
                                    field=(field, other)))
    return out


def _from_result(
    result: SchemaCompatibilityResult, *, version: int, direction: str,
    field: tuple[avro.schema.Field, avro.schema.Field] | None,
) -> list[Incompatibility]:
    """Avro's result as incompatibilities, one per kind; `field` names the column."""
    kinds = sorted({k.name.upper() for k in result.incompatibilities})
    # avro's merge unions an incompatible result's locations with a compatible one's "/" (a
    # renamed enum: {"/", "/name"}); the root is where it broke only when nothing deeper is named
    location = (sorted(result.locations - {"/"}) or ["/"])[0]
    avro_says = "; ".join(sorted(result.messages))
    if field is None:
        message = f"{avro_says} ({_consequence(version, direction)})"
    else:
        reader_field, writer_field = field
        was, now = _describe(writer_field.type), _describe(reader_field.type)
        if direction == "old_reads_new":
            was, now = now, was
        message = (f"column `{reader_field.name}` changed from {was} to {now}; "
                   f"{_consequence(version, direction)} ({avro_says})")
    return [Incompatibility(kind, location, message, version, direction, _java_detail(avro_says))
            for kind in kinds]


def _java_detail(avro_says: str) -> str:
    """Avro's reason as Java Avro words it: type names upper case, enum symbols as ``[A, B]``."""
    text = re.sub(r"(type: )(\w+)", lambda m: m.group(1) + m.group(2).upper(), avro_says)
    if text.startswith("{") and text.endswith("}"):  # python avro's set of missing symbols
        with contextlib.suppress(ValueError, SyntaxError):
            return "[" + ", ".join(sorted(ast.literal_eval(text))) + "]"
    return text


def _describe(schema: avro.schema.Schema) -> str:
    if isinstance(schema, avro.schema.UnionSchema):
        branches = [_describe(s) for s in schema.schemas if s.type != "null"]
        nullable = len(branches) < len(schema.schemas)
        return " | ".join(branches) + (" (nullable)" if nullable else "")
    logical = schema.props.get("logicalType")
    if logical == "decimal":
        return f"decimal({schema.props.get('precision')},{schema.props.get('scale', 0)})"
    return str(schema.type)


def _consequence(version: int, direction: str) -> str:
    if direction == "new_reads_old":
        return f"readers of the new schema cannot read data written with version {version}"
    return f"readers of version {version} cannot read data written with the new schema"


def _missing_default_message(name: str, *, version: int, direction: str) -> str:
    if direction == "new_reads_old":
        return (f"column `{name}` is new and has no default; readers of the new schema cannot "
                f"read data written with version {version}, which lacks it")
    return (f"column `{name}` of version {version} is gone from the new schema and has no "
            f"default; readers of version {version} cannot read the new data")


def _old_new(direction: str, *, writer: str, reader: str) -> str:
    old, new = (writer, reader) if direction == "new_reads_old" else (reader, writer)
    return f"{old} to {new}"
