"""Column definitions and key clauses of a ``CREATE``/``ALTER TABLE`` (sqlglot's tree) read
into the `Table` model's `Column` and `Index`.

Shared by ``CREATE TABLE`` (`service.core.ddl`) and ``ALTER TABLE`` (`service.core.alter`), so
a column added later is read by the same rules as one created with the table.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from sqlglot import exp
from sqlglot.dialects.mysql import MySQL

from service.core.ddl_defaults import default_text
from service.core.errors import InvalidTableError
from service.core.mysql_types import MySQLType, TypeFamily, lookup_type
from service.core.table import Column, ColumnType, Index

__all__ = ["column_definition", "is_virtual", "is_serial", "table_index"]

_DIALECT = MySQL()

# sqlglot data types -> (MySQL base type, unsigned).
_SQLGLOT_TYPES: dict[enum.Enum, tuple[MySQLType, bool]] = {}
for _name, _base in [
    ("TINYINT", MySQLType.TINYINT), ("SMALLINT", MySQLType.SMALLINT),
    ("MEDIUMINT", MySQLType.MEDIUMINT), ("INT", MySQLType.INT), ("BIGINT", MySQLType.BIGINT),
    ("DECIMAL", MySQLType.DECIMAL), ("DOUBLE", MySQLType.DOUBLE),
]:
    _SQLGLOT_TYPES[exp.DataType.Type[_name]] = (_base, False)
    if ("U" + _name) in exp.DataType.Type.__members__:
        _SQLGLOT_TYPES[exp.DataType.Type["U" + _name]] = (_base, True)
for _name, _base in [
    ("BOOLEAN", MySQLType.TINYINT), ("FLOAT", MySQLType.FLOAT), ("CHAR", MySQLType.CHAR),
    ("NCHAR", MySQLType.CHAR), ("VARCHAR", MySQLType.VARCHAR), ("NVARCHAR", MySQLType.VARCHAR),
    ("TINYTEXT", MySQLType.TINYTEXT), ("TEXT", MySQLType.TEXT),
    ("MEDIUMTEXT", MySQLType.MEDIUMTEXT), ("LONGTEXT", MySQLType.LONGTEXT),
    ("BINARY", MySQLType.BINARY), ("VARBINARY", MySQLType.VARBINARY),
    ("TINYBLOB", MySQLType.TINYBLOB), ("BLOB", MySQLType.BLOB),
    ("MEDIUMBLOB", MySQLType.MEDIUMBLOB), ("LONGBLOB", MySQLType.LONGBLOB),
    ("BIT", MySQLType.BIT), ("ENUM", MySQLType.ENUM), ("SET", MySQLType.SET),
    ("JSON", MySQLType.JSON), ("DATE", MySQLType.DATE), ("DATETIME", MySQLType.DATETIME),
    ("TIMESTAMP", MySQLType.TIMESTAMP), ("TIMESTAMPTZ", MySQLType.TIMESTAMP),
    ("TIME", MySQLType.TIME), ("YEAR", MySQLType.YEAR), ("VECTOR", MySQLType.VECTOR),
]:
    _SQLGLOT_TYPES[exp.DataType.Type[_name]] = (_base, False)
_SERIAL = exp.DataType.Type.SERIAL
_FSP_TYPES = (MySQLType.TIME, MySQLType.DATETIME, MySQLType.TIMESTAMP)
_UNSIZED_TYPES = (MySQLType.FLOAT, MySQLType.DOUBLE, MySQLType.VECTOR)


def column_definition(item: exp.ColumnDef, *, table_charset: str | None, real: bool
                      ) -> tuple[Column, list[Index]]:
    """The column a definition declares, and the indexes its inline ``PRIMARY KEY`` /
    ``UNIQUE`` make.

    Args:
        item: the column definition.
        table_charset: the table's ``CHARACTER SET``, for text columns that name none.
        real: the column was declared ``REAL`` (a DOUBLE, though sqlglot reads FLOAT).

    Raises:
        InvalidTableError: no type, a type parameter that is not a number, a DEFAULT that is
            an expression.
        UnsupportedTypeError: a type flat-avro has no mapping for.
    """
    name = item.name
    kind = item.kind
    if kind is None:
        raise InvalidTableError(f"column `{name}` has no type", column=name)
    base, unsigned = _base_type(kind, name)
    if real and base is MySQLType.FLOAT:
        base = MySQLType.DOUBLE
    numbers = [_int_param(p, name) for p in kind.expressions if isinstance(p, exp.DataTypeParam)]
    elements = tuple(
        p.this for p in kind.expressions if isinstance(p, exp.Literal) and p.is_string
    )
    facts = _ColumnFacts(name, base, unsigned=unsigned)
    if kind.this is _SERIAL:
        facts.unsigned, facts.nullable = True, False
    for constraint in item.constraints:
        facts.apply(_constraint_kind(constraint))
    if facts.charset is None and base.family is TypeFamily.TEXT:
        facts.charset = table_charset
    length, decimal = _length_and_decimal(base, numbers)
    col_type = ColumnType(
        base=base, unsigned=facts.unsigned,
        zerofill=facts.zerofill, length=length, decimal=decimal, elements=elements,
        charset=facts.charset, collate=facts.collate,
    )
    column = Column(name=name, type=col_type, nullable=facts.nullable, default=facts.default)
    return column, facts.inline


@dataclass(slots=True)
class _ColumnFacts:
    """What a column definition's constraints say, gathered one constraint at a time."""

    name: str
    base: MySQLType
    unsigned: bool
    nullable: bool = True
    default: str | int | None = None
    charset: str | None = None
    collate: str | None = None
    zerofill: bool = False
    inline: list[Index] = field(default_factory=list)

    def apply(self, constraint: exp.Expr | None) -> None:
        """Take in one constraint; those that do not shape the Avro schema are ignored."""
        if isinstance(constraint, exp.NotNullColumnConstraint):
            self.nullable = bool(constraint.args.get("allow_null"))
        elif isinstance(constraint, exp.DefaultColumnConstraint):
            self.default = default_text(constraint.this, base=self.base, column=self.name)
        elif isinstance(constraint, exp.PrimaryKeyColumnConstraint):
            self.inline.append(Index(name="PRIMARY", columns=(self.name,), unique=True,
                                     primary=True))
        elif isinstance(constraint, exp.UniqueColumnConstraint):
            self.inline.append(Index(name=self.name, columns=(self.name,), unique=True))
        elif isinstance(constraint, exp.CharacterSetColumnConstraint):
            self.charset = constraint.this.name
        elif isinstance(constraint, exp.CollateColumnConstraint):
            self.collate = constraint.this.name
        elif isinstance(constraint, exp.ZeroFillColumnConstraint):
            self.zerofill = self.unsigned = True


def _length_and_decimal(base: MySQLType, numbers: list[int]) -> tuple[int | None, int | None]:
    """The type's (length, decimal) from its parameters: a temporal type's one parameter is
    its fsp (the decimal); FLOAT, DOUBLE and VECTOR keep none."""
    if base in _FSP_TYPES:
        return None, (numbers[0] if numbers else None)
    if base in _UNSIZED_TYPES:
        return None, None
    return (numbers[0] if numbers else None), (numbers[1] if len(numbers) > 1 else None)


def is_virtual(item: exp.ColumnDef) -> bool:
    """Whether the column is a virtual generated column (TiCDC does not replicate those)."""
    for constraint in item.constraints:
        kind = _constraint_kind(constraint)
        if isinstance(kind, exp.ComputedColumnConstraint) and not kind.args.get("persisted"):
            return True
    return False


def _constraint_kind(constraint: exp.ColumnConstraint) -> exp.Expr | None:
    """What a column constraint is (``NOT NULL``, ``DEFAULT``, ``ZEROFILL``, ...). Read from its
    arguments: sqlglot's compiled build (sqlglotc) checks the ``kind`` property's declared type,
    and ``ZEROFILL``'s is not among them (a TypeError)."""
    kind: exp.Expr | None = constraint.args.get("kind")
    return kind


def is_serial(item: exp.ColumnDef) -> bool:
    """Whether the column is declared ``SERIAL`` (BIGINT UNSIGNED NOT NULL with a unique key)."""
    return item.kind is not None and item.kind.this is _SERIAL


def _base_type(kind: exp.DataType, column: str) -> tuple[MySQLType, bool]:
    if kind.this is _SERIAL:
        return MySQLType.BIGINT, True
    mapped = _SQLGLOT_TYPES.get(kind.this)
    if mapped is None:
        return lookup_type(kind.this.name, column=column), False
    return mapped


def _int_param(param: exp.DataTypeParam, column: str) -> int:
    value = param.this
    if isinstance(value, exp.Literal) and not value.is_string and value.this.isdigit():
        return int(value.this)
    raise InvalidTableError(
        f"column `{column}`: type parameter {param.sql(dialect=_DIALECT)!r} is not a number",
        column=column,
    )


def table_index(item: exp.Expression) -> Index | None:
    """Turn a table-level PRIMARY KEY / UNIQUE / KEY clause into an `Index` (None: ignored)."""
    if isinstance(item, exp.Constraint):
        for inner in item.expressions:
            if isinstance(inner, (exp.PrimaryKey, exp.UniqueColumnConstraint)):
                index = table_index(inner)
                if index is not None and not index.primary and item.name:
                    return Index(name=item.name, columns=index.columns, unique=True)
                return index
        return None
    if isinstance(item, exp.PrimaryKey):
        return Index(name="PRIMARY", columns=_names(item.expressions), unique=True, primary=True)
    if isinstance(item, exp.UniqueColumnConstraint):
        schema = item.this
        if isinstance(schema, exp.Schema):
            name = schema.this.name if schema.this is not None else ""
            return Index(name=name, columns=_names(schema.expressions), unique=True)
        return None
    return None  # plain KEY/INDEX, CHECK, FOREIGN KEY: not part of the key choice


def _names(expressions: list[exp.Expression]) -> tuple[str, ...]:
    out = []
    for e in expressions:
        target = e.this if isinstance(e, exp.Ordered) else e
        out.append(target.name)
    return tuple(out)
