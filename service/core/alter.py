"""DDL statements applied to a table's definition, as TiDB applies them: the statements a TiCDC
topic carries with its rows (Canal-JSON ``sql``, the Open Protocol's ``q``), so a converter
that saw a table's ``CREATE TABLE`` can follow every ``ALTER`` after it exactly.

`apply_ddl` takes the table as it stands (None when unknown) and one statement, and gives what
the statement makes of it: a new definition (``CREATE TABLE``, ``ALTER TABLE``), a new name
(``RENAME TABLE``, ``ALTER TABLE ... RENAME TO``), none (``DROP TABLE``) or the same one
(``TRUNCATE``, and statements that change nothing in the Avro schema: indexes other than the
key, comments, table options). Columns are read with the same rules as ``CREATE TABLE``
(`service.core.ddl`). A statement it cannot apply raises `UnappliedDDLError`, naming the table,
the statement and why; the caller then stops trusting its definition of that table.
"""

from __future__ import annotations

import dataclasses
import enum
import re
from dataclasses import dataclass

import sqlglot
from sqlglot import exp

from service.core.ddl import _column, _default_text, _table_index, table_from_ddl
from service.core.errors import InvalidInputError, ServiceError
from service.core.table import Column, Index, Table

__all__ = ["DDLChange", "DDLOutcome", "UnappliedDDLError", "UnfollowedDDLError", "apply_ddl"]

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
    where = f"`{schema}`.`{table or (current.table if current else '?')}`"
    renamed = _RENAME_TABLE.match(statement)
    if renamed:
        return _rename_statement(current, renamed.group(1), schema, where, statement)
    try:
        parsed = sqlglot.parse_one(statement, read="mysql")
    except sqlglot.errors.ParseError as exc:
        first = exc.errors[0] if exc.errors else {}
        at = f" at line {first['line']}, column {first['col']}" if "line" in first else ""
        why = first.get("description") or "a syntax error"
        raise _unapplied(where, statement, f"it does not parse{at}: {why}") from exc
    if isinstance(parsed, exp.Create) and str(parsed.args.get("kind", "")).upper() == "TABLE":
        return DDLOutcome(DDLChange.CREATED, table_from_ddl(statement, schema=schema))
    if isinstance(parsed, exp.TruncateTable):
        return DDLOutcome(DDLChange.UNCHANGED, current)
    if isinstance(parsed, exp.Drop) and str(parsed.args.get("kind", "")).upper() == "TABLE":
        return DDLOutcome(DDLChange.DROPPED, None)
    if isinstance(parsed, exp.Alter) and str(parsed.args.get("kind", "")).upper() == "TABLE":
        if current is None:
            raise _unapplied(where, statement, "the table's definition is unknown (no CREATE "
                                                "TABLE seen)", followed=False)
        return _alter(current, parsed, where, statement)
    if isinstance(parsed, (exp.Create, exp.Drop)):  # indexes, views, databases, ...
        return DDLOutcome(DDLChange.UNCHANGED, current)
    raise _unapplied(where, statement, f"{type(parsed).__name__} statements are not followed",
                     followed=False)


def _unapplied(where: str, statement: str, why: str, *, followed: bool = True
               ) -> UnappliedDDLError:
    cls = UnappliedDDLError if followed else UnfollowedDDLError
    return cls(f"table {where}: cannot apply `{_short(statement)}`: {why}", statement=statement)


def _short(statement: str, limit: int = 200) -> str:
    text = " ".join(statement.split())
    return text if len(text) <= limit else text[:limit] + "..."


def _rename_statement(current: Table | None, pairs: str, schema: str, where: str,
                      statement: str) -> DDLOutcome:
    """``RENAME TABLE a TO b[, c TO d]``: the pair whose source is `current` (TiCDC splits a
    multi-table rename into one event per table)."""
    for pair in _split_top_level(pairs):
        match = _RENAME_PAIR.match(pair)
        if match is None:
            raise _unapplied(where, statement, f"`{pair.strip()}` is not `old TO new`")
        old, new = _qualified(match.group(1), schema), _qualified(match.group(2), schema)
        if current is None or old == (current.schema, current.table):
            if current is None:
                raise _unapplied(where, statement, "the table's definition is unknown",
                                 followed=False)
            moved = dataclasses.replace(current, schema=new[0], table=new[1])
            return DDLOutcome(DDLChange.RENAMED, moved, renamed_from=old)
    raise _unapplied(where, statement, "it does not rename this table", followed=False)


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


def _alter(current: Table, alter: exp.Alter, where: str, statement: str) -> DDLOutcome:
    columns = list(current.columns)
    indexes = list(current.indexes)
    name = (current.schema, current.table)
    renamed_from = None
    for action in alter.args.get("actions") or ():
        try:
            if isinstance(action, exp.AlterRename):
                target = action.this
                name = (target.db or current.schema, target.name)
                renamed_from = (current.schema, current.table)
            else:
                _apply_action(action, columns, indexes)
        except _ActionError as exc:
            raise _unapplied(where, statement, exc.message, followed=exc.followed) from None
    primary = [i for i in indexes if i.primary]
    if primary:  # MySQL makes every primary-key column NOT NULL
        pk = set(primary[0].columns)
        columns = [dataclasses.replace(c, nullable=False) if c.name in pk else c
                   for c in columns]
    table = Table(schema=name[0], table=name[1], columns=tuple(columns),
                  indexes=tuple(indexes), table_id=current.table_id)
    if renamed_from is not None and table.columns == current.columns \
            and table.indexes == current.indexes:
        return DDLOutcome(DDLChange.RENAMED, table, renamed_from=renamed_from)
    same = table.columns == current.columns and table.indexes == current.indexes
    return DDLOutcome(DDLChange.UNCHANGED if same else DDLChange.ALTERED, table,
                      renamed_from=renamed_from)


class _ActionError(ServiceError):
    code = "unapplied_ddl"

    def __init__(self, message: str, *, followed: bool = True) -> None:
        super().__init__(message)
        self.followed = followed


def _apply_action(action: exp.Expression, columns: list[Column], indexes: list[Index]) -> None:
    if isinstance(action, exp.ColumnDef):
        _add_column(action, columns, indexes)
    elif isinstance(action, exp.ModifyColumn):
        _modify_column(action, columns, indexes)
    elif isinstance(action, exp.Drop):
        _drop(action, columns, indexes)
    elif isinstance(action, exp.RenameColumn):
        old, new = action.this.name, action.args["to"].name
        _rename_column(old, new, columns, indexes)
    elif isinstance(action, exp.AlterColumn):
        _alter_default(action, columns)
    elif isinstance(action, exp.AddConstraint):
        for item in action.expressions:
            index = _table_index(item)
            if index is not None:
                _require_columns(index.columns, columns)
                if index.primary and any(i.primary for i in indexes):
                    raise _ActionError("the table already has a PRIMARY KEY")
                indexes.append(index)
    elif isinstance(action, exp.DropPrimaryKey):
        if not any(i.primary for i in indexes):
            raise _ActionError("the table has no PRIMARY KEY to drop")
        indexes[:] = [i for i in indexes if not i.primary]
    else:
        raise _ActionError(f"`{action.sql('mysql')}` is not followed", followed=False)


def _position(action: exp.ColumnDef, columns: list[Column]) -> int:
    position = action.args.get("position")
    if position is None:
        return len(columns)
    if str(position.args.get("position", "")).upper() == "FIRST":
        return 0
    after = position.this.name
    return _index_of(after, columns) + 1


def _index_of(name: str, columns: list[Column]) -> int:
    for i, column in enumerate(columns):
        if column.name.lower() == name.lower():
            return i
    raise _ActionError(f"column `{name}` does not exist")


def _add_column(action: exp.ColumnDef, columns: list[Column], indexes: list[Index]) -> None:
    if any(c.name.lower() == action.name.lower() for c in columns):
        raise _ActionError(f"column `{action.name}` already exists")
    column, inline = _column(action, None, real=False)
    columns.insert(_position(action, columns), column)
    indexes.extend(inline)


def _modify_column(action: exp.ModifyColumn, columns: list[Column],
                   indexes: list[Index]) -> None:
    definition = action.this
    old = action.args.get("rename_from")
    old_name = old.name if old is not None else definition.name
    at = _index_of(old_name, columns)
    column, inline = _column(definition, None, real=False)
    if column.type.charset is None and columns[at].type.family is column.type.family:
        column = dataclasses.replace(column, type=dataclasses.replace(
            column.type, charset=columns[at].type.charset))
    del columns[at]
    if old_name != column.name:
        _rename_in_indexes(old_name, column.name, indexes)
    position = _position(definition, columns) if definition.args.get("position") else at
    columns.insert(position, column)
    indexes.extend(inline)


def _drop(action: exp.Drop, columns: list[Column], indexes: list[Index]) -> None:
    kind = str(action.args.get("kind", "")).upper()
    names = [t.name for t in action.args.get("tables") or ()]
    if kind == "COLUMN":
        for name in names:
            at = _index_of(name, columns)
            primary = [i for i in indexes if i.primary and name in i.columns]
            if primary:
                raise _ActionError(f"column `{name}` is part of the PRIMARY KEY (TiDB refuses "
                                   "to drop it)")
            del columns[at]
            indexes[:] = [i for i in (_without(i, name) for i in indexes) if i.columns]
    elif kind in ("INDEX", "KEY"):
        for name in names:
            indexes[:] = [i for i in indexes if i.name.lower() != name.lower() or i.primary]
    else:
        raise _ActionError(f"`{action.sql('mysql')}` is not followed", followed=False)


def _without(index: Index, column: str) -> Index:
    """The index without `column` (MySQL drops a dropped column from its indexes)."""
    return dataclasses.replace(index, columns=tuple(c for c in index.columns if c != column))


def _rename_column(old: str, new: str, columns: list[Column], indexes: list[Index]) -> None:
    at = _index_of(old, columns)
    if any(c.name.lower() == new.lower() for c in columns):
        raise _ActionError(f"column `{new}` already exists")
    columns[at] = dataclasses.replace(columns[at], name=new)
    _rename_in_indexes(columns[at].name if old == new else old, new, indexes)


def _rename_in_indexes(old: str, new: str, indexes: list[Index]) -> None:
    indexes[:] = [dataclasses.replace(i, columns=tuple(new if c == old else c
                                                       for c in i.columns)) for i in indexes]


def _alter_default(action: exp.AlterColumn, columns: list[Column]) -> None:
    at = _index_of(action.this.name, columns)
    column = columns[at]
    if action.args.get("drop"):
        columns[at] = dataclasses.replace(column, default=None)
    elif action.args.get("default") is not None:  # read as CREATE TABLE reads a DEFAULT
        columns[at] = dataclasses.replace(column, default=_default_text(
            action.args["default"], column.type.base, column.name))
    else:
        raise _ActionError(f"`{action.sql('mysql')}` is not followed", followed=False)


def _require_columns(names: tuple[str, ...], columns: list[Column]) -> None:
    for name in names:
        _index_of(name, columns)
