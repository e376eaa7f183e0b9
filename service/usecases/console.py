"""What the console (``/console``) shows, read from any registry: subjects grouped as TiDB
tables and searched, a table's two subjects side by side, a field-level diff with a verdict per
column, and what a DDL script would register.

The list and the search read the subject names in one registry call; only filters that need
more (a field name, a compatibility level or mode) read each candidate subject, and the page
reads nothing per row. Every view maps to a ``/v1`` endpoint (docs/console.md).
"""

from __future__ import annotations

import asyncio
import base64
import bisect
import difflib
import json
import re
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio
import orjson

from service.codec.decode import decode_batch
from service.codec.errors import InvalidMessagesError
from service.core.alter import DDLChange, apply_ddl, split_statements
from service.core.errors import InvalidInputError
from service.core.field_map import FieldRow, field_rows, record_name
from service.core.naming import MAX_TOPIC_LENGTH, SubjectKind, sanitize_name
from service.core.options import SchemaOptions
from service.core.schema import SchemaPair, generate_schemas
from service.core.schema_diff import FieldChange, diff_schemas
from service.core.table import Column, Table
from service.kafka_client.tail import last_messages
from service.registry.compatibility import CompatibilityLevel, Incompatibility
from service.registry.errors import SubjectNotFoundError
from service.registry.interface import SchemaRegistry
from service.registry.model import RegisteredSchema, RegistryMode
from service.registry.tables import SubjectVerdict, TableCheck, check_table
from service.usecases.runtime import Runtime
from service.usecases.subject_overview import SubjectFacts, subject_facts
from service.usecases.version_diff import VersionDiff, diff_versions

__all__ = ["InvalidSearchError", "Search", "Entry", "Listing", "SubjectIndex", "Indexed",
           "Blob", "list_entries",
           "schema_id_of",
           "Side", "TableView", "table_view", "subject_view", "stem_of", "DiffView",
           "diff_view", "column_of", "DDLPreview", "preview_ddl", "COMPATIBILITY_HELP",
           "MODE_HELP", "MessageRow", "pasted_messages", "decode_messages", "topic_messages",
           "MAX_MESSAGES", "SubjectChanges", "pretty_text"]

_SUBJECT = re.compile(rf"^(?P<stem>[A-Za-z0-9_-]{{1,{MAX_TOPIC_LENGTH}}})-(?P<kind>key|value)$")
"""A subject TiCDC's avro protocol names: the topic ('.' as '_') then -key or -value."""
_CONCURRENT = 8
_FIELD_POINTER = re.compile(r"^/fields/(\d+)(?:/|$)")
PAGE_SIZES = (25, 50, 100, 200)
_GONE = "(not a column of the new table)"
MAX_MESSAGES = 500
"""The most messages the messages page fetches from a topic at once."""
T = TypeVar("T")

COMPATIBILITY_HELP = {
    "BACKWARD": "A new version can read data written with the previous version (the default).",
    "BACKWARD_TRANSITIVE": "A new version can read data written with every earlier version.",
    "FORWARD": "Data written with a new version can be read with the previous version.",
    "FORWARD_TRANSITIVE": "Data written with a new version can be read with every earlier one.",
    "FULL": "Both BACKWARD and FORWARD against the previous version.",
    "FULL_TRANSITIVE": "Both BACKWARD and FORWARD against every earlier version.",
    "NONE": "Any new version is accepted; readers may break.",
}
MODE_HELP = {
    "READWRITE": "Reads and registrations (the default).",
    "READONLY": "Reads only: registrations are refused.",
    "IMPORT": "Schemas are registered with the ids given (migrations).",
}


class InvalidSearchError(InvalidInputError):
    """A console search that cannot run: a regular expression that does not compile, a page
    outside the range, an unknown filter value (the error names the field)."""

    code = "invalid_search"


@dataclass(frozen=True)
class Search:
    """A console search: `text` is a name (substring), ``/regex/``, ``field:name``, or a schema
    id (digits, or ``id:N``); the filters narrow what it finds."""

    text: str = ""
    kind: str = "any"
    """``any``, ``key`` (tables with a key subject) or ``value``."""
    missing: bool = False
    """Only tables with one half missing (a key without value, or the reverse)."""
    broken: bool = False
    """Only subjects that break the naming rule (no ``<topic>-key``/``-value``)."""
    level: CompatibilityLevel | None = None
    mode: RegistryMode | None = None
    page: int = 1
    size: int = 50


@dataclass(frozen=True, slots=True)
class Entry:
    """A row of the list: a table (its key and value subjects, either may be missing) or a
    subject that breaks the naming rule (`stem` None)."""

    name: str
    stem: str | None
    key: str | None
    value: str | None

    @property
    def subjects(self) -> list[str]:
        """The entry's subjects, key first."""
        if self.stem is None:
            return [self.name]
        return [s for s in (self.key, self.value) if s is not None]

    @property
    def missing(self) -> str | None:
        """Which half a table lacks (``key``/``value``); None when it has both or is no
        table."""
        if self.stem is None:
            return None
        return "key" if self.key is None else "value" if self.value is None else None


@dataclass(frozen=True)
class Listing:
    """One page of what a search found, and how many there are in all."""

    search: Search
    entries: list[Entry]
    total: int
    subjects: int
    """Subjects in the registry (live ones)."""

    @property
    def pages(self) -> int:
        """Pages in all (at least one)."""
        return max(1, -(-self.total // self.search.size))


def schema_id_of(text: str) -> int | None:
    """The schema id a search asks for (``123`` or ``id:123``), else None."""
    stripped = text.strip()
    if stripped.lower().startswith("id:"):
        stripped = stripped[3:].strip()
    if stripped.isdigit() and 0 < int(stripped) < 2**31:
        return int(stripped)
    return None


def stem_of(subject: str) -> tuple[str, SubjectKind] | None:
    """A subject's table stem and half, when it follows the naming rule."""
    matched = _SUBJECT.match(subject)
    if matched is None:
        return None
    return matched.group("stem"), SubjectKind(matched.group("kind"))


class SubjectIndex:
    """The registry's subjects grouped as entries, kept between requests and made again only
    when the registry changed: for the embedded registry when its file's commit counter
    (`changes`, SQLite's ``data_version``) moved, so a page reads nothing from the registry;
    for a remote one when the subject list it answers differs (one call per page)."""

    def __init__(self, *, changes: Callable[[], int] | None) -> None:
        self._changes = changes
        self._seen: tuple[int | None, list[str]] | None = None
        self._entries: list[Entry] = []
        self._lines, self._folded = Blob.of([]), Blob.of([])
        self.generation = 0
        """Counts the times the entries were made: equal generations, equal entries."""

    async def entries(self, registry: SchemaRegistry) -> Indexed:
        """The entries and their names as searches read them."""
        version = self._changes() if self._changes is not None else None
        if self._seen is None or version is None or self._seen[0] != version:
            names = await registry.subjects()
            if self._seen is None or self._seen[1] != names:
                self._entries = _entries(names)
                lines = ["\n".join([e.name, *e.subjects]) for e in self._entries]
                self._lines, self._folded = Blob.of(lines), Blob.of([t.lower() for t in lines])
                self.generation += 1
            self._seen = (version, names)
        return Indexed(self._entries, lines=self._lines, folded=self._folded,
                       subjects=len(self._seen[1]), generation=self.generation)


@dataclass(frozen=True)
class Blob:
    """Texts joined by newlines, searched in one pass (the search runs in C, not per entry),
    and where each text starts."""

    text: str
    starts: list[int]

    @classmethod
    def of(cls, parts: list[str]) -> Blob:
        """The parts joined."""
        starts, at = [], 0
        for part in parts:
            starts.append(at)
            at += len(part) + 1
        return cls("\n".join(parts), starts)

    def hits(self, find: Callable[[int], int]) -> list[int]:
        """The parts where `find` (the position of the next match from a position, or -1)
        finds something, in order: after a hit it goes on at the next part."""
        if not self.starts:
            return []
        found, at = [], find(0)
        while at != -1:
            part = bisect.bisect_right(self.starts, at) - 1
            found.append(part)
            if part + 1 >= len(self.starts):
                break
            at = find(self.starts[part + 1])
        return found


@dataclass(frozen=True)
class Indexed:
    """The entries, all their names one per line (each entry's: the table's, then its
    subjects'), the same in lower case, and how many subjects the registry has."""

    entries: list[Entry]
    lines: Blob
    folded: Blob
    subjects: int
    generation: int

    def answers(self, search: Search) -> bool:
        """Whether the entries alone answer `search` (no field, level or mode to read), so
        that the same generation gives the same answer."""
        return search.level is None and search.mode is None and not search.text.strip(
        ).lower().startswith(("field:", "column:"))


async def list_entries(registry: SchemaRegistry, search: Search, *, indexed: Indexed
                       ) -> Listing:
    """The entries `search` finds, one page of them.

    Raises:
        InvalidSearchError: a regex that does not compile, a page past the last.
    """
    if search.page < 1 or search.size not in PAGE_SIZES:
        raise InvalidSearchError(
            f"page must be 1 or more and size one of {', '.join(map(str, PAGE_SIZES))} "
            f"(got page {search.page}, size {search.size})", field="page")
    text = search.text.strip()
    entries = _by_flags(_by_text(indexed, text), search)
    if text.lower().startswith(("field:", "column:")):
        wanted = text.split(":", 1)[1].strip()
        entries = await _keep(entries, lambda e: _has_field(registry, e, wanted=wanted))
    if search.level is not None or search.mode is not None:
        level, mode = await registry.get_compatibility(), await registry.get_mode()
        entries = await _keep(entries, lambda e: _has_setting(
            registry, e, search=search, global_level=level, global_mode=mode))
    first = (search.page - 1) * search.size
    if search.page > 1 and first >= len(entries):
        raise InvalidSearchError(f"page {search.page} is past the last page of "
                                 f"{len(entries)} entries", field="page")
    return Listing(search=search, entries=entries[first:first + search.size],
                   total=len(entries), subjects=indexed.subjects)


def _by_text(indexed: Indexed, text: str) -> list[Entry]:
    """The entries whose name or a subject matches a ``/regex/`` (``^`` and ``$`` at each
    name's ends) or holds the text (any case)."""
    if text.startswith("/") and text.endswith("/") and len(text) > 1:
        try:
            pattern = re.compile(text[1:-1], re.MULTILINE)
        except re.error as exc:
            raise InvalidSearchError(
                f"q: the regular expression {text} does not compile: {exc.msg} at position "
                f"{exc.pos}", field="q", position=exc.pos) from exc
        blob = indexed.lines.text

        def matched(at: int) -> int:
            found = pattern.search(blob, at)
            return -1 if found is None else found.start()
        return [indexed.entries[i] for i in indexed.lines.hits(matched)]
    if text and not text.lower().startswith(("field:", "column:")):
        needle, folded = text.lower(), indexed.folded.text
        if "\n" in needle:  # no name holds one; it would match across two entries
            return []
        return [indexed.entries[i] for i in indexed.folded.hits(
            lambda at: folded.find(needle, at))]
    return indexed.entries


def _by_flags(entries: list[Entry], search: Search) -> list[Entry]:
    if search.kind == "key":
        entries = [e for e in entries if e.key is not None]
    elif search.kind == "value":
        entries = [e for e in entries if e.value is not None]
    if search.missing:
        entries = [e for e in entries if e.missing is not None]
    if search.broken:
        entries = [e for e in entries if e.stem is None]
    return entries


def _entries(names: list[str]) -> list[Entry]:
    tables: dict[str, dict[str, str]] = {}
    strays: list[str] = []
    match = _SUBJECT.match
    for name in names:
        parsed = match(name)
        if parsed is None:
            strays.append(name)
        else:
            stem, kind = parsed.group("stem", "kind")
            tables.setdefault(stem, {})[kind] = name
    out = [Entry(name=stem, stem=stem, key=halves.get("key"), value=halves.get("value"))
           for stem, halves in tables.items()]
    out += [Entry(name=s, stem=None, key=None, value=None) for s in strays]
    return sorted(out, key=lambda e: e.name)


async def _keep(entries: list[Entry], test: Callable[[Entry], Awaitable[bool]]
                ) -> list[Entry]:
    gate = asyncio.Semaphore(_CONCURRENT)

    async def one(entry: Entry) -> bool:
        async with gate:
            return await test(entry)

    verdicts = await asyncio.gather(*(one(e) for e in entries))
    return [e for e, keep in zip(entries, verdicts, strict=True) if keep]


async def _has_field(registry: SchemaRegistry, entry: Entry, *, wanted: str) -> bool:
    folded = wanted.lower()
    for subject in entry.subjects:
        latest = await _latest(registry, subject)
        if latest is not None and latest.schema_type.upper() == "AVRO" and any(
                row.name.lower() == folded for row in field_rows(orjson.loads(latest.schema))):
            return True
    return False


async def _has_setting(registry: SchemaRegistry, entry: Entry, *, search: Search,
                       global_level: CompatibilityLevel, global_mode: RegistryMode) -> bool:
    for subject in entry.subjects:
        level = await registry.configured_compatibility(subject) or global_level
        mode = await registry.configured_mode(subject) or global_mode
        if (search.level is None or level == search.level) and (
                search.mode is None or mode == search.mode):
            return True
    return False


async def _latest(registry: SchemaRegistry, subject: str) -> RegisteredSchema | None:
    try:
        return await registry.get_version(subject, "latest")
    except SubjectNotFoundError:
        return None


@dataclass(frozen=True)
class Side:
    """One subject of a table page: its facts, the version shown and its fields."""

    kind: str
    subject: str
    facts: SubjectFacts | None
    """None: the registry has no live version under this subject."""
    shown: RegisteredSchema | None
    rows: list[FieldRow] = field(default_factory=list)
    record: str = ""

    @property
    def pretty(self) -> str:
        """The shown schema, indented (the raw text is the registry's own)."""
        return pretty_text(self.shown.schema) if self.shown is not None else ""


@dataclass(frozen=True)
class TableView:
    """A table's page (or a lone subject's): its sides and the global settings they may
    inherit."""

    name: str
    stem: str | None
    sides: list[Side]
    global_level: CompatibilityLevel
    global_mode: RegistryMode


async def table_view(registry: SchemaRegistry, stem: str, *, versions: dict[str, str]
                     ) -> TableView:
    """The key and value subjects of table `stem`, each at the version asked (``latest``
    by default).

    Raises:
        SubjectNotFoundError: neither subject exists.
        VersionNotFoundError: a version asked for is not there.
    """
    sides = [await _side(registry, f"{stem}-{kind}", kind=kind, version=versions.get(kind))
             for kind in ("key", "value")]
    if all(s.facts is None for s in sides):
        raise SubjectNotFoundError(f"no subject {stem}-key or {stem}-value: no table {stem} "
                                   "in the registry", subject=f"{stem}-value")
    return TableView(name=stem, stem=stem, sides=sides,
                     global_level=await registry.get_compatibility(),
                     global_mode=await registry.get_mode())


async def subject_view(registry: SchemaRegistry, subject: str, *, version: str | None
                       ) -> TableView:
    """A subject outside the naming rule, alone.

    Raises:
        SubjectNotFoundError, VersionNotFoundError: as for `table_view`.
    """
    side = await _side(registry, subject, kind="subject", version=version)
    if side.facts is None:
        raise SubjectNotFoundError(f"subject {subject} not found", subject=subject)
    return TableView(name=subject, stem=None, sides=[side],
                     global_level=await registry.get_compatibility(),
                     global_mode=await registry.get_mode())


async def _side(registry: SchemaRegistry, subject: str, *, kind: str, version: str | None
                ) -> Side:
    try:
        facts = await subject_facts(registry, subject, deleted=True)
    except SubjectNotFoundError:
        return Side(kind=kind, subject=subject, facts=None, shown=None)
    if facts.latest is None and version is None:
        return Side(kind=kind, subject=subject, facts=facts, shown=None)
    shown = await registry.get_version(subject, version or "latest", deleted=True)
    schema: Any = orjson.loads(shown.schema) if shown.schema_type.upper() == "AVRO" else None
    return Side(kind=kind, subject=subject, facts=facts, shown=shown,
                rows=field_rows(schema), record=record_name(schema) if schema else "")


@dataclass(frozen=True)
class DiffView:
    """Two versions compared: the registry's verdict, each changed column with the reasons
    that break it, and the text diff of the two schemas."""

    diff: VersionDiff
    verdicts: dict[str, list[Incompatibility]]
    """Column -> the incompatibilities that name it (empty: the change is compatible)."""
    other: list[Incompatibility]
    """Incompatibilities that name no changed column."""
    text_diff: list[str]


async def diff_view(registry: SchemaRegistry, subject: str, *, old: str, new: str
                    ) -> DiffView:
    """`diff_versions`, with each incompatibility placed on its column and the text diff.

    Raises:
        as `diff_versions`.
    """
    diff = await diff_versions(registry, subject, old_spec=old, new_spec=new)
    old_text = (await registry.get_version(subject, str(diff.old.version))).schema
    new_text = (await registry.get_version(subject, str(diff.new.version))).schema
    old_schema, new_schema = orjson.loads(old_text), orjson.loads(new_text)
    verdicts: dict[str, list[Incompatibility]] = {
        c.column: [] for c in diff.changes if c.column is not None}
    other: list[Incompatibility] = []
    for reason in diff.incompatibilities:
        reader = new_schema if reason.direction == "new_reads_old" else old_schema
        column = column_of(reason.location, reader)
        if column is not None and column in verdicts:
            verdicts[column].append(reason)
        else:
            other.append(reason)
    lines = list(difflib.unified_diff(
        _pretty(old_schema).splitlines(), _pretty(new_schema).splitlines(),
        fromfile=f"{subject} version {diff.old.version}",
        tofile=f"{subject} version {diff.new.version}", lineterm=""))
    return DiffView(diff=diff, verdicts=verdicts, other=other, text_diff=lines)


def column_of(location: str, reader: Any) -> str | None:
    """The field an incompatibility's JSON pointer (``/fields/3/type``) names in the reader
    schema; None for a pointer at the record itself."""
    matched = _FIELD_POINTER.match(location)
    if matched is None or not isinstance(reader, dict):
        return None
    fields = reader.get("fields")
    index = int(matched.group(1))
    if not isinstance(fields, list) or index >= len(fields):
        return None
    entry = fields[index]
    return str(entry.get("name")) if isinstance(entry, dict) else None


def pretty_text(text: str) -> str:
    """A schema's text indented (the text as it is when it is no JSON)."""
    try:
        return _pretty(orjson.loads(text))
    except orjson.JSONDecodeError:
        return text


def _pretty(schema: Any) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False)


@dataclass(frozen=True)
class ColumnNote:
    """A column of the previewed table: its field, and what each subject says of it."""

    column: str
    field: str
    """The Avro field name (sanitized; differs from the column when TiCDC renames it)."""
    type: str
    in_key: bool
    reasons: list[Incompatibility]


@dataclass(frozen=True)
class SubjectChanges:
    """What registering would change in one subject: its latest live version (None: the
    subject is new) and each change from it, with the reasons that break it."""

    subject: str
    kind: str
    latest: int | None
    changes: list[tuple[FieldChange, list[Incompatibility]]]


@dataclass(frozen=True)
class DDLPreview:
    """What a DDL script (CREATE TABLE, then ALTER TABLEs) would register under a topic."""

    statements: list[tuple[str, str]]
    """(what the statement did, the statement)."""
    table: Table
    options: SchemaOptions
    pair: SchemaPair
    check: TableCheck
    columns: list[ColumnNote]
    other: dict[str, list[Incompatibility]]
    """Subject -> incompatibilities that name no column of the table."""
    rows: dict[str, list[FieldRow]]
    changes: list[SubjectChanges] = field(default_factory=list)
    """Per subject, the columns that change against its latest registered version."""

    @property
    def compatible(self) -> bool:
        """Whether every subject would take its schema (Register is offered only then)."""
        return self.check.compatible


async def preview_ddl(registry: SchemaRegistry, script: str, *, database: str,
                      options: SchemaOptions, topic_rule: str) -> DDLPreview:
    """Apply the script's statements in order (the first a CREATE TABLE) and check the table
    they leave against its topic's subjects, registering nothing.

    Raises:
        InvalidSearchError: an empty script, or one that leaves no table.
        UnappliedDDLError, InvalidDDLError, InvalidTableError: a statement that does not
            apply (named).
        TopicBindingError, InvalidTopicRuleError: as for ``/v1/tables/check``.
    """
    table, statements = await anyio.to_thread.run_sync(_apply_script, script, database)
    pair = await anyio.to_thread.run_sync(generate_schemas, table, options)
    check = await check_table(registry, table, options=options, topic_rule=topic_rule, pair=pair)
    columns, other = await _column_notes(registry, table, pair=pair, check=check)
    rows = {"key": field_rows(pair.key_schema) if pair.key_schema else [],
            "value": field_rows(pair.value_schema)}
    changes = [await _subject_changes(registry, verdict, columns=columns, other=other)
               for verdict in check.subjects]
    return DDLPreview(statements=statements, table=table, options=options, pair=pair,
                      check=check, columns=columns, other=other, rows=rows, changes=changes)


async def _subject_changes(registry: SchemaRegistry, verdict: SubjectVerdict, *,
                           columns: list[ColumnNote],
                           other: dict[str, list[Incompatibility]]) -> SubjectChanges:
    latest = await _latest(registry, verdict.subject)
    if latest is None or latest.schema_type.upper() != "AVRO":
        return SubjectChanges(subject=verdict.subject, kind=verdict.kind.value, latest=None,
                              changes=[])
    mine = set(verdict.incompatibilities)
    reasons = {note.field: [r for r in note.reasons if r in mine] for note in columns}
    for label, found_here in other.items():  # columns the new table no longer has
        reasons.setdefault(label.split(" ", 1)[0], []).extend(r for r in found_here if r in mine)
    found = diff_schemas(orjson.loads(latest.schema), orjson.loads(verdict.schema))
    return SubjectChanges(
        subject=verdict.subject, kind=verdict.kind.value, latest=latest.version,
        changes=[(c, reasons.get(c.column or "", [])) for c in found])


def _apply_script(script: str, database: str) -> tuple[Table, list[tuple[str, str]]]:
    statements = split_statements(script)
    if not statements:
        raise InvalidSearchError("ddl: paste a CREATE TABLE (and ALTER TABLE statements to "
                                 "apply after it)", field="ddl")
    table: Table | None = None
    done: list[tuple[str, str]] = []
    for statement in statements:
        outcome = apply_ddl(table, statement, schema=table.schema if table else database)
        if outcome.change is DDLChange.DROPPED or outcome.table is None:
            raise InvalidSearchError(f"ddl: statement {len(done) + 1} drops the table; "
                                     "nothing would be registered", field="ddl")
        table = outcome.table
        done.append((outcome.change.value, statement))
    assert table is not None
    return table, done


async def _column_notes(registry: SchemaRegistry, table: Table, *, pair: SchemaPair,
                        check: TableCheck
                        ) -> tuple[list[ColumnNote], dict[str, list[Incompatibility]]]:
    by_field: dict[str, list[Incompatibility]] = {}
    other: dict[str, list[Incompatibility]] = {}
    for verdict in check.subjects:
        for reason in verdict.incompatibilities:
            reader = await _reader(registry, verdict, reason=reason)
            column = column_of(reason.location, reader)
            if column is None:
                other.setdefault(verdict.subject, []).append(reason)
            else:
                by_field.setdefault(column, []).append(reason)
    key_columns = set(pair.key_columns)
    notes = [ColumnNote(column=c.name, field=sanitize_name(c.name), type=_column_type(c),
                        in_key=c.name in key_columns, reasons=by_field.pop(sanitize_name(c.name),
                                                                            []))
             for c in table.columns]
    for name, reasons in by_field.items():  # a field of a registered version, not the table's
        other.setdefault(f"{name} {_GONE}", []).extend(reasons)
    return notes, other


def _column_type(column: Column) -> str:
    """A column as DDL reads: ``decimal(12,2) NOT NULL``, ``enum('a','b')``."""
    kind = column.type
    text = kind.base.value
    if kind.elements:
        text += "(" + ",".join("'" + e.replace("'", "''") + "'" for e in kind.elements) + ")"
    elif kind.length is not None:
        text += f"({kind.length}" + (f",{kind.decimal})" if kind.decimal is not None else ")")
    elif kind.decimal is not None:
        text += f"({kind.decimal})"
    if kind.unsigned:
        text += " unsigned"
    if not column.nullable:
        text += " NOT NULL"
    if column.has_default:
        text += f" DEFAULT {column.default!r}"
    return text


async def _reader(registry: SchemaRegistry, verdict: SubjectVerdict, *,
                  reason: Incompatibility) -> Any:
    if reason.direction == "new_reads_old":
        return orjson.loads(verdict.schema)
    try:
        old = await registry.get_version(verdict.subject, str(reason.version))
    except SubjectNotFoundError:
        return None
    return orjson.loads(old.schema)


@dataclass(frozen=True)
class MessageRow:
    """A decoded message of the messages page: where it came from, its key and value rows,
    the schema ids and the subject versions that hold them."""

    where: str
    key: dict[str, Any] | None
    value: dict[str, Any] | None
    key_id: int | str | None
    value_id: int | str | None
    """The schema ids the frames carry (an AWS Glue schema version's UUID as text)."""
    op: str
    """``upsert``, or ``delete`` for a tombstone (no value)."""
    uses: dict[int | str, tuple[str, int] | None]
    """Schema id -> the first (subject, version) using it."""

    @property
    def tidb_op(self) -> str | None:
        """TiCDC's ``_tidb_op`` (``c``/``u``/``d``) when the value carries it."""
        found = (self.value or {}).get("_tidb_op")
        return str(found) if found is not None else None


def pasted_messages(text: str, *, encoding: str) -> tuple[list[dict[str, str | None]],
                                                          list[str]]:
    """The messages of a pasted text, one per line: ``VALUE`` or ``KEY VALUE`` (`encoding`:
    base64 or hex; ``null`` or ``-`` for an absent part, a tombstone's value), and where each
    came from (``line N``).

    Raises:
        InvalidSearchError: a line of more than two parts, or no message at all.
    """
    messages, where = [], []
    for number, line in enumerate(text.splitlines(), start=1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) > 2:
            raise InvalidSearchError(f"messages: line {number} has {len(parts)} parts; give "
                                     f"VALUE or KEY VALUE ({encoding})", field="messages",
                                     line=number)
        key, value = (None, parts[0]) if len(parts) == 1 else (parts[0], parts[1])
        messages.append({"key": None if key in (None, "null", "-") else key,
                         "value": None if value in ("null", "-") else value})
        where.append(f"line {number}")
    if not messages:
        raise InvalidSearchError("messages: paste one message per line", field="messages")
    return messages, where


async def decode_messages(runtime: Runtime, messages: list[dict[str, str | None]], *,
                          where: list[str], encoding: str) -> list[MessageRow]:
    """Decode framed messages as ``/v1/decode`` does, each with its schema ids' subject
    versions.

    Raises:
        InvalidMessagesError: messages that do not decode (every one listed).
    """
    body = orjson.dumps({"messages": messages, "encoding": encoding})
    try:
        decoded = orjson.loads((await decode_batch(runtime.resolver, body)).body)["messages"]
    except InvalidMessagesError as exc:  # each error also says where its message came from
        for error in exc.details.get("errors", []):
            index = error.get("message_index")
            if isinstance(index, int) and 0 <= index < len(where):
                error["where"] = where[index]
        raise
    ids = {i for m in decoded for i in (m["key_schema_id"], m["value_schema_id"]) if i}
    uses: dict[int | str, tuple[str, int] | None] = {}
    for schema_id in sorted(ids, key=str):
        if isinstance(schema_id, str):  # a Glue version (it decoded, so the registry has it)
            version = await runtime.resolver.glue_version(uuid.UUID(schema_id))
            uses[schema_id] = (version.subject, version.version)
            continue
        found = await runtime.registry.uses_of(schema_id)
        uses[schema_id] = found[0] if found else None
    return [MessageRow(where=w, key=m["key"], value=m["value"], key_id=m["key_schema_id"],
                       value_id=m["value_schema_id"], op=m["op"], uses=uses)
            for w, m in zip(where, decoded, strict=True)]


async def topic_messages(runtime: Runtime, kafka: dict[str, str], *, topic: str,
                         count: int) -> list[MessageRow]:
    """The last `count` messages of `topic`, decoded (the broker of `kafka`'s settings).

    Raises:
        TopicNotFoundError, KafkaReadError: as `last_messages`.
        InvalidMessagesError: as `decode_messages`.
    """
    if not 1 <= count <= MAX_MESSAGES:
        raise InvalidSearchError(f"count: 1 to {MAX_MESSAGES} messages (got {count})",
                                 field="count")
    raw = await anyio.to_thread.run_sync(
        lambda: last_messages(kafka, topic, count=count))
    messages = [{"key": base64.b64encode(m.key).decode() if m.key is not None else None,
                 "value": base64.b64encode(m.value).decode() if m.value is not None else None}
                for m in raw]
    where = [f"partition {m.partition}, offset {m.offset}" for m in raw]
    if not messages:
        return []
    return await decode_messages(runtime, messages, where=where, encoding="base64")
