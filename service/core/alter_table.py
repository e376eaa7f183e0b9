"""The actions of one ``ALTER TABLE`` applied to a table's columns and indexes, as TiDB applies
them: add, modify, change, rename and drop columns, set or drop a default, add a primary or
unique key, drop an index or the primary key.

Columns are read with the same rules as ``CREATE TABLE`` (`service.core.ddl_columns`). An
action that contradicts the definition, or that this module does not follow, raises
`ActionError`; `service.core.alter` names the statement and the table in the error it raises.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from sqlglot import exp

from service.core.ddl_columns import column_definition, table_index
from service.core.ddl_defaults import default_text
from service.core.table import Column, Index

__all__ = ["ActionError", "TableDraft"]


class ActionError(Exception):
    """An action that cannot be applied: it contradicts the definition, or (`followed` False)
    it is not one this module follows."""

    def __init__(self, message: str, *, followed: bool = True) -> None:
        super().__init__(message)
        self.message, self.followed = message, followed


def _not_followed(action: exp.Expr) -> ActionError:
    return ActionError(f"`{action.sql('mysql')}` is not followed", followed=False)


@dataclass(slots=True)
class TableDraft:
    """A table's columns and indexes while the actions of one statement change them."""

    columns: list[Column]
    indexes: list[Index]

    def apply(self, action: exp.Expr) -> None:
        """Apply one action (``ADD COLUMN``, ``MODIFY``, ``DROP``, ...) in place.

        Raises:
            ActionError: the action contradicts the draft, or is not followed.
            InvalidTableError, UnsupportedTypeError, ...: a column definition that is not valid.
        """
        if isinstance(action, exp.ColumnDef):
            self._add_column(action)
        elif isinstance(action, exp.ModifyColumn):
            self._modify_column(action)
        elif isinstance(action, exp.Drop):
            self._drop(action)
        elif isinstance(action, exp.RenameColumn):
            self._rename_column(action.this.name, action.args["to"].name)
        elif isinstance(action, exp.AlterColumn):
            self._alter_default(action)
        elif isinstance(action, exp.AddConstraint):
            self._add_keys(action)
        elif isinstance(action, exp.DropPrimaryKey):
            self._drop_primary_key()
        else:
            raise _not_followed(action)

    def _position(self, action: exp.ColumnDef) -> int:
        position = action.args.get("position")
        if position is None:
            return len(self.columns)
        if str(position.args.get("position", "")).upper() == "FIRST":
            return 0
        after = position.this.name
        return self._index_of(after) + 1

    def _index_of(self, name: str) -> int:
        for i, column in enumerate(self.columns):
            if column.name.lower() == name.lower():
                return i
        raise ActionError(f"column `{name}` does not exist")

    def _add_column(self, action: exp.ColumnDef) -> None:
        if any(c.name.lower() == action.name.lower() for c in self.columns):
            raise ActionError(f"column `{action.name}` already exists")
        column, inline = column_definition(action, table_charset=None, real=False)
        if not column.nullable and column.default is None:  # TiDB fills the rows: origin default
            column = dataclasses.replace(column, added_without_default=True)
        self.columns.insert(self._position(action), column)
        self.indexes.extend(inline)

    def _modify_column(self, action: exp.ModifyColumn) -> None:
        definition = action.this
        old = action.args.get("rename_from")
        old_name = old.name if old is not None else definition.name
        at = self._index_of(old_name)
        column, inline = column_definition(definition, table_charset=None, real=False)
        before = self.columns[at]
        if column.type.charset is None and before.type.family is column.type.family:
            column = dataclasses.replace(column, type=dataclasses.replace(
                column.type, charset=before.type.charset))
        del self.columns[at]
        if old_name != column.name:
            self._rename_in_indexes(old_name, column.name)
        position = self._position(definition) if definition.args.get("position") else at
        self.columns.insert(position, column)
        self.indexes.extend(inline)

    def _drop(self, action: exp.Drop) -> None:
        kind = str(action.args.get("kind", "")).upper()
        names = [t.name for t in action.args.get("tables") or ()]
        if kind == "COLUMN":
            for name in names:
                self._drop_column(name)
        elif kind in ("INDEX", "KEY"):
            for name in names:
                self.indexes[:] = [i for i in self.indexes
                                   if i.name.lower() != name.lower() or i.primary]
        else:
            raise _not_followed(action)

    def _drop_column(self, name: str) -> None:
        at = self._index_of(name)
        if any(i.primary and name in i.columns for i in self.indexes):
            raise ActionError(f"column `{name}` is part of the PRIMARY KEY (TiDB refuses to "
                              "drop it)")
        del self.columns[at]
        # MySQL drops a dropped column from its indexes, and an index left with none.
        self.indexes[:] = [i for i in (_without(i, name) for i in self.indexes) if i.columns]

    def _rename_column(self, old: str, new: str) -> None:
        at = self._index_of(old)
        if any(c.name.lower() == new.lower() for c in self.columns):
            raise ActionError(f"column `{new}` already exists")
        self.columns[at] = dataclasses.replace(self.columns[at], name=new)
        self._rename_in_indexes(self.columns[at].name if old == new else old, new)

    def _rename_in_indexes(self, old: str, new: str) -> None:
        self.indexes[:] = [dataclasses.replace(i, columns=tuple(new if c == old else c
                                                                for c in i.columns))
                           for i in self.indexes]

    def _alter_default(self, action: exp.AlterColumn) -> None:
        at = self._index_of(action.this.name)
        column = self.columns[at]
        if action.args.get("drop"):
            self.columns[at] = dataclasses.replace(column, default=None)
        elif action.args.get("default") is not None:  # read as CREATE TABLE reads a DEFAULT
            self.columns[at] = dataclasses.replace(column, default=default_text(
                action.args["default"], base=column.type.base, column=column.name))
        else:
            raise _not_followed(action)

    def _add_keys(self, action: exp.AddConstraint) -> None:
        for item in action.expressions:
            index = table_index(item)
            if index is None:
                continue
            for name in index.columns:
                self._index_of(name)  # each must exist
            if index.primary and any(i.primary for i in self.indexes):
                raise ActionError("the table already has a PRIMARY KEY")
            self.indexes.append(index)

    def _drop_primary_key(self) -> None:
        if not any(i.primary for i in self.indexes):
            raise ActionError("the table has no PRIMARY KEY to drop")
        self.indexes[:] = [i for i in self.indexes if not i.primary]


def _without(index: Index, column: str) -> Index:
    """The index without `column`."""
    return dataclasses.replace(index, columns=tuple(c for c in index.columns if c != column))
