"""DDL statements applied to a table's definition, as TiDB applies them: the statements a TiCDC
topic carries with its rows (Canal-JSON ``sql``, the Open Protocol's ``q``), so a converter
that saw a table's ``CREATE TABLE`` can follow every ``ALTER`` after it exactly.

`apply_ddl` takes the table as it stands (None when unknown) and one statement, and gives what
the statement makes of it: a new definition (``CREATE TABLE``, ``ALTER TABLE``), a new name
(``RENAME TABLE``, ``ALTER TABLE ... RENAME TO``), none (``DROP TABLE``) or the same one
(``TRUNCATE``, and statements that change nothing in the Avro schema: indexes other than the
key, comments, table options). ``ALTER TABLE``'s actions are applied by
`service.core.alter_table`, reading columns with the same rules as ``CREATE TABLE``. A statement
it cannot apply raises `UnappliedDDLError`, naming the table, the statement and why; the caller
then stops trusting its definition of that table.
"""

from __future__ import annotations

import dataclasses
import enum
import re
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.tokens import TokenType

from service.core.alter_table import ActionError, TableDraft
from service.core.ddl import table_from_ddl
from service.core.ddl_tokens import scan_create
from service.core.errors import InvalidInputError
from service.core.table import Table

__all__ = ["DDLChange", "DDLOutcome", "UnappliedDDLError", "UnfollowedDDLError", "apply_ddl",
           "split_statements"]

_RENAME_TABLE = re.compile(r"^\s*RENAME\s+TABLES?\s+(.+?)\s*;?\s*$", re.I | re.S)
_NAME = r"(?:`(?:[^`]|``)+`|[^\s.,`]+)"
_RENAME_PAIR = re.compile(rf"^\s*({_NAME}(?:\s*\.\s*{_NAME})?)\s+TO\s+"
                          rf"({_NAME}(?:\s*\.\s*{_NAME})?)\s*$", re.I | re.S)


class UnappliedDDLError(InvalidInputError):
    """A DDL statement that cannot be applied to the table's definition: it does not parse,
    or contradicts the definition (a column that is not there, or already is; a primary-key
    column dropped, which TiDB refuses) — the definition or the topic is not what it seems."""

    code = "unapplied_ddl"


class UnfollowedDDLError(UnappliedDDLError):
    """A statement this module does not follow (partitioning, ...), or an ``ALTER`` of a table
    whose definition is unknown: nothing is wrong with it, the definition is just no longer
    known."""

    code = "unfollowed_ddl"


class DDLChange(enum.Enum):
    """What a statement did to the table."""

    CREATED = "created"
    ALTERED = "altered"
    RENAMED = "renamed"
    DROPPED = "dropped"
    UNCHANGED = "unchanged"


@dataclass(frozen=True, slots=True)
class DDLOutcome:
    """The table after one statement: `table` None when dropped; `renamed_from` the old
    (schema, table) when the statement renamed it."""

    change: DDLChange
    table: Table | None
    renamed_from: tuple[str, str] | None = None


def apply_ddl(current: Table | None, statement: str, *, schema: str,
              table: str | None = None) -> DDLOutcome:
    """Apply one statement to `current` (the definition of ``schema.table``, None if unknown).

    Args:
        current: the table's definition before the statement.
        statement: the DDL text as TiDB ran it.
        schema: the statement's database (the event's), for names it does not qualify.
        table: the event's table, when the statement names it otherwise (``RENAME``).

    Raises:
        UnappliedDDLError: the statement does not parse, needs a definition that is unknown,
            or does something to the table this module does not follow (named).
        InvalidTableError, UnsupportedTypeError, ...: the new definition is not a valid
            table (as for ``CREATE TABLE``).
    """
    applied = _Statement(statement, f"`{schema}`.`{table or (current.table if current else '?')}`")
    renamed = _RENAME_TABLE.match(statement)
    if renamed:
        return _rename_statement(current, renamed.group(1), schema=schema, statement=applied)
    try:
        # TiDB-only syntax (CLUSTERED, UNSIGNED on FLOAT, ...) blanked, positions kept
        parsed = sqlglot.parse_one(scan_create(statement).text, read="mysql")
    except sqlglot.errors.ParseError as exc:
        first = exc.errors[0] if exc.errors else {}
        at = f" at line {first['line']}, column {first['col']}" if "line" in first else ""
        why = first.get("description") or "a syntax error"
        raise applied.unapplied(f"it does not parse{at}: {why}") from exc
    kind = str(parsed.args.get("kind", "")).upper()
    if isinstance(parsed, exp.Create) and kind == "TABLE":
        return DDLOutcome(DDLChange.CREATED, table_from_ddl(statement, schema=schema))
    if isinstance(parsed, exp.TruncateTable):
        return DDLOutcome(DDLChange.UNCHANGED, current)
    if isinstance(parsed, exp.Drop) and kind == "TABLE":
        return DDLOutcome(DDLChange.DROPPED, None)
    if isinstance(parsed, exp.Alter) and kind == "TABLE":
        if current is None:
            raise applied.unapplied("the table's definition is unknown (no CREATE TABLE seen)",
                                    followed=False)
        return _alter(current, parsed, statement=applied)
    if isinstance(parsed, (exp.Create, exp.Drop)):  # indexes, views, databases, ...
        return DDLOutcome(DDLChange.UNCHANGED, current)
    raise applied.unapplied(f"{type(parsed).__name__} statements are not followed",
                            followed=False)


@dataclass(frozen=True, slots=True)
class _Statement:
    """The statement being applied and the table it is applied to, for its errors."""

    text: str
    where: str

    def unapplied(self, why: str, *, followed: bool = True) -> UnappliedDDLError:
        """The error saying the statement cannot be applied, and why."""
        cls = UnappliedDDLError if followed else UnfollowedDDLError
        return cls(f"table {self.where}: cannot apply `{_short(self.text)}`: {why}",
                   statement=self.text)


def _short(statement: str, limit: int = 200) -> str:
    text = " ".join(statement.split())
    return text if len(text) <= limit else text[:limit] + "..."


def _rename_statement(current: Table | None, pairs: str, *, schema: str,
                      statement: _Statement) -> DDLOutcome:
    """``RENAME TABLE a TO b[, c TO d]``: the pair whose source is `current` (TiCDC splits a
    multi-table rename into one event per table)."""
    for pair in _split_top_level(pairs):
        match = _RENAME_PAIR.match(pair)
        if match is None:
            raise statement.unapplied(f"`{pair.strip()}` is not `old TO new`")
        old, new = _qualified(match.group(1), schema), _qualified(match.group(2), schema)
        if current is None or old == (current.schema, current.table):
            if current is None:
                raise statement.unapplied("the table's definition is unknown", followed=False)
            moved = dataclasses.replace(current, schema=new[0], table=new[1])
            return DDLOutcome(DDLChange.RENAMED, moved, renamed_from=old)
    raise statement.unapplied("it does not rename this table", followed=False)


def split_statements(script: str) -> list[str]:
    """The statements of a script, split at its top-level semicolons (not those inside
    strings, identifiers or comments), each stripped; empty statements dropped.

    Raises:
        UnappliedDDLError: the script does not tokenize (an unclosed quote, say).
    """
    try:
        tokens = sqlglot.Dialect.get_or_raise("mysql").tokenize(script)
    except sqlglot.errors.TokenError as exc:
        raise UnappliedDDLError(f"the statements do not parse: {exc}") from exc
    out, start = [], 0
    for token in tokens:
        if token.token_type == TokenType.SEMICOLON:
            out.append(script[start:token.start])
            start = token.end + 1
    out.append(script[start:])
    return [s.strip() for s in out if s.strip()]


def _split_top_level(text: str) -> list[str]:
    out, depth, start = [], False, 0
    for i, char in enumerate(text):
        if char == "`":
            depth = not depth
        elif char == "," and not depth:
            out.append(text[start:i])
            start = i + 1
    out.append(text[start:])
    return out


def _qualified(name: str, schema: str) -> tuple[str, str]:
    parts = [p.strip().strip("`").replace("``", "`")
             for p in re.split(r"\.(?=(?:[^`]*`[^`]*`)*[^`]*$)", name)]
    return (parts[0], parts[1]) if len(parts) == 2 else (schema, parts[0])


def _alter(current: Table, alter: exp.Alter, *, statement: _Statement) -> DDLOutcome:
    draft = TableDraft(list(current.columns), list(current.indexes))
    name = (current.schema, current.table)
    renamed_from = None
    for action in alter.args.get("actions") or ():
        try:
            if isinstance(action, exp.AlterRename):
                target = action.this
                name = (target.db or current.schema, target.name)
                renamed_from = (current.schema, current.table)
            else:
                draft.apply(action)
        except ActionError as exc:
            raise statement.unapplied(exc.message, followed=exc.followed) from None
    columns = draft.columns
    primary = [i for i in draft.indexes if i.primary]
    if primary:  # MySQL makes every primary-key column NOT NULL
        pk = set(primary[0].columns)
        columns = [dataclasses.replace(c, nullable=False) if c.name in pk else c
                   for c in columns]
    table = Table(schema=name[0], table=name[1], columns=tuple(columns),
                  indexes=tuple(draft.indexes), table_id=current.table_id)
    same = table.columns == current.columns and table.indexes == current.indexes
    if renamed_from is not None and same:
        return DDLOutcome(DDLChange.RENAMED, table, renamed_from=renamed_from)
    return DDLOutcome(DDLChange.UNCHANGED if same else DDLChange.ALTERED, table,
                      renamed_from=renamed_from)
