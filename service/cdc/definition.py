"""`TableDefinition`: a table as a message gives it, exact or derived, and what it lacks.

A Simple protocol ``TableSchema`` is exact. Canal-JSON (``mysqlType`` + ``pkNames``) and the
Open Protocol (type codes + flags) only imply a table: the facts they do not carry are
recorded as `MissingFact`s, and `to_table` refuses (never invents) when the schema to generate
needs one of them. docs/flat-avro.md §8 lists the rules.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from service.core.errors import Fix, InvalidInputError
from service.core.mysql_types import TypeFamily
from service.core.options import DecimalHandlingMode, SchemaOptions
from service.core.table import Column, ColumnType, Index, Table

__all__ = ["MissingFact", "MissingFactError", "TableDefinition", "type_text"]


class MissingFactError(InvalidInputError):
    """The message lacks a fact the flat-avro schema needs (e.g. DECIMAL precision)."""

    code = "missing_table_fact"


@dataclass(frozen=True, slots=True)
class MissingFact:
    """A fact about `column` that the message does not carry."""

    column: str
    fact: str

    def matters(self, column_type: ColumnType, options: SchemaOptions) -> bool:
        """Whether the schema generated under `options` needs the fact."""
        if column_type.family is TypeFamily.DECIMAL:
            return options.decimal_handling_mode is DecimalHandlingMode.PRECISE
        return True


@dataclass(frozen=True)
class TableDefinition:
    """A table definition taken from a message.

    Attributes:
        schema, table: the table's names.
        columns: the columns in message order (facts in `missing` are left unset).
        key: the handle key column names ("" entries never; empty when the table has none).
        exact: True when the message carries the whole definition (Simple ``TableSchema``).
        source: which message facts it comes from (for error messages).
        missing: facts the message lacks.
        version: TiDB's schema version when the message gives it.
        exact_table: the validated table, for exact definitions.
    """

    schema: str
    table: str
    columns: tuple[Column, ...]
    key: tuple[str, ...]
    exact: bool
    source: str
    missing: tuple[MissingFact, ...] = ()
    version: int | None = None
    exact_table: Table | None = None

    @classmethod
    def of_table(cls, table: Table, source: str) -> TableDefinition:
        """An exact definition wrapping a validated table."""
        index = table.handle_index()
        return cls(table.schema, table.table, table.columns,
                   () if index is None else tuple(c.name for c in table.key_columns()),
                   True, source, version=table.version, exact_table=table)

    def column_type(self, name: str) -> ColumnType | None:
        """The type of column `name` (None if the definition has no such column)."""
        return self._types.get(name)

    @functools.cached_property
    def _types(self) -> dict[str, ColumnType]:
        return {c.name: c.type for c in self.columns}

    def to_table(self, options: SchemaOptions) -> Table:
        """The table to generate schemas from under `options`.

        Raises:
            MissingFactError: a fact the schema needs is missing; its `fix` says what to do
                (register the table from its DDL first, or use decimal string mode).
        """
        if self.exact_table is not None:
            return self.exact_table
        needed = [m for m in self.missing
                  if m.matters(_type_of(self.columns, m.column), options)]
        if needed:
            facts = "; ".join(f"column `{m.column}`: {m.fact}" for m in needed)
            only_decimal = all(_type_of(self.columns, m.column).family is TypeFamily.DECIMAL
                               for m in needed)
            fixes = [Fix.REGISTER_TABLE, *([Fix.DECIMAL_STRING] if only_decimal else [])]
            raise MissingFactError(
                f"table `{self.schema}`.`{self.table}`: the {self.source} does not say {facts}",
                schema=self.schema, table=self.table,
                columns=[m.column for m in needed], fix=fixes)
        indexes = (Index("primary", self.key, unique=True, primary=True),) if self.key else ()
        return Table(self.schema, self.table, self.columns, indexes, version=self.version)

    def to_json(self) -> dict[str, Any]:
        """The definition as JSON, for golden files."""
        out: dict[str, Any] = {
            "source": self.source, "exact": self.exact,
            "columns": [{"name": c.name, "type": type_text(c.type), "nullable": c.nullable,
                         **({"default": c.default} if c.default is not None else {})}
                        for c in self.columns],
            "key": list(self.key)}
        if self.missing:
            out["missing"] = [{"column": m.column, "fact": m.fact} for m in self.missing]
        if self.version is not None:
            out["version"] = self.version
        return out


def _type_of(columns: tuple[Column, ...], name: str) -> ColumnType:
    return next(c.type for c in columns if c.name == name)


def type_text(column_type: ColumnType) -> str:
    """A column type as MySQL writes it: ``decimal(10,4)``, ``enum('a','b')``, ``int unsigned``."""
    text = column_type.base.value
    if column_type.elements:
        members = ",".join("'" + e.replace("'", "''") + "'" for e in column_type.elements)
        text += f"({members})"
    elif column_type.length is not None and column_type.decimal is not None:
        text += f"({column_type.length},{column_type.decimal})"
    elif column_type.length is not None:
        text += f"({column_type.length})"
    if column_type.charset:
        text += f" charset {column_type.charset}"
    return text + (" unsigned" if column_type.unsigned else "")
