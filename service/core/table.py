"""The table model every input form is turned into: columns, their types, indexes, key choice.

Objects here are immutable and already validated: a `Table` that exists is one flat-avro can
describe (known types, unique column names, sane DECIMAL/BIT/ENUM parameters, indexes that
name real columns).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from service.core.errors import DuplicateColumnError, InvalidTableError
from service.core.limits import (
    check_column_count,
    check_identifiers,
    check_indexes,
    check_members,
)
from service.core.mysql_types import MySQLType, TypeFamily

__all__ = ["ColumnType", "Column", "Index", "Table", "MAX_DECIMAL_PRECISION", "MAX_DECIMAL_SCALE"]

MAX_DECIMAL_PRECISION = 65
MAX_DECIMAL_SCALE = 30
DEFAULT_DECIMAL_PRECISION = 10
MAX_BIT_WIDTH = 64
MAX_FSP = 6


@dataclass(frozen=True, slots=True)
class ColumnType:
    """A column's data type, in TiDB's terms.

    Attributes:
        base: the base MySQL type.
        unsigned: UNSIGNED (integers; also accepted and ignored on FLOAT/DOUBLE/DECIMAL).
        zerofill: ZEROFILL (implies unsigned in MySQL).
        length: TiDB's ``flen``: DECIMAL precision, BIT width, CHAR/VARCHAR length; None if
            unspecified.
        decimal: TiDB's ``decimal``: DECIMAL scale, fractional seconds of TIME/DATETIME/
            TIMESTAMP; None if unspecified.
        elements: ENUM/SET members in definition order.
        charset: the column charset (``binary`` makes a text type binary).
        collate: the column collation.
    """

    base: MySQLType
    unsigned: bool = False
    zerofill: bool = False
    length: int | None = None
    decimal: int | None = None
    elements: tuple[str, ...] = ()
    charset: str | None = None
    collate: str | None = None

    @property
    def family(self) -> TypeFamily:
        """The flat-avro mapping family, with binary-charset text types counted as BLOB."""
        family = self.base.family
        if family is TypeFamily.TEXT and self.is_binary_charset:
            return TypeFamily.BLOB
        return family

    @property
    def is_binary_charset(self) -> bool:
        """True when the charset or collation is ``binary``."""
        return (self.charset or "").lower() == "binary" or (self.collate or "").lower() == "binary"

    @property
    def precision(self) -> int:
        """DECIMAL precision (10 when unspecified, as MySQL defaults it)."""
        return DEFAULT_DECIMAL_PRECISION if self.length is None else self.length

    @property
    def scale(self) -> int:
        """DECIMAL scale (0 when unspecified)."""
        return 0 if self.decimal is None else self.decimal

    @property
    def bit_width(self) -> int:
        """BIT(n) width n (1 when unspecified)."""
        return 1 if self.length is None else self.length

    @property
    def fsp(self) -> int:
        """Fractional-second digits of TIME/DATETIME/TIMESTAMP (0 when unspecified)."""
        return 0 if self.decimal is None else self.decimal

    def check(self, column: str) -> None:
        """Validate the type's parameters for `column`.

        Raises:
            InvalidTableError: DECIMAL precision > 65, scale > 30 or > precision; BIT width
                outside 1..64; fsp > 6; ENUM/SET without members.
            LimitExceededError: a SET of more than 64 members, a member over 255 characters.
        """
        family = self.base.family
        if family is TypeFamily.DECIMAL:
            p, s = self.precision, self.scale
            if not 1 <= p <= MAX_DECIMAL_PRECISION:
                _bad(column, f"DECIMAL precision {p} is outside 1..{MAX_DECIMAL_PRECISION}")
            if s > MAX_DECIMAL_SCALE:
                _bad(column, f"DECIMAL scale {s} exceeds the maximum {MAX_DECIMAL_SCALE}")
            if s > p:
                _bad(column, f"DECIMAL scale {s} exceeds its precision {p}")
        elif family is TypeFamily.BIT and not 1 <= self.bit_width <= MAX_BIT_WIDTH:
            _bad(column, f"BIT width {self.bit_width} is outside 1..{MAX_BIT_WIDTH}")
        elif family in (TypeFamily.ENUM, TypeFamily.SET) and not self.elements:
            _bad(column, f"{self.base.value.upper()} needs at least one member")
        elif self.base in (MySQLType.TIME, MySQLType.DATETIME, MySQLType.TIMESTAMP):
            if self.fsp > MAX_FSP:
                _bad(column, f"fractional seconds precision {self.fsp} exceeds {MAX_FSP}")
        if family in (TypeFamily.ENUM, TypeFamily.SET):
            check_members(column, kind=self.base.value.upper(), members=self.elements)


def _bad(column: str, why: str) -> None:
    raise InvalidTableError(f"column `{column}`: {why}", column=column)


@dataclass(frozen=True, slots=True)
class Column:
    """One column: name, type, nullability and default.

    ``default`` is the column default as TiDB stores it (a string such as ``"0"``,
    ``"abc"``, ``"CURRENT_TIMESTAMP"``, or a JSON number/bool from a TableSchema); None means
    no default or DEFAULT NULL, which flat-avro treats alike. ``added_without_default``: the
    column was added by ``ALTER TABLE ... ADD COLUMN`` NOT NULL without a DEFAULT, so TiDB gave
    it an *origin* default (the value it filled the existing rows with), which TiCDC v8.3 to
    v8.5.1 wrote as the field's default (`options.TicdcRelease`); known only to a table followed
    through its DDL, and not part of the table's identity.
    """

    name: str
    type: ColumnType
    nullable: bool = True
    default: str | int | float | bool | None = None
    added_without_default: bool = field(default=False, compare=False)

    @property
    def has_default(self) -> bool:
        """True when the column has a non-NULL default."""
        return self.default is not None


@dataclass(frozen=True, slots=True)
class Index:
    """An index: its name, flags and the columns it covers, in index order."""

    name: str
    columns: tuple[str, ...]
    unique: bool = False
    primary: bool = False


@dataclass(frozen=True, slots=True)
class Table:
    """A validated table definition.

    Attributes:
        schema: the database name.
        table: the table name.
        columns: the columns in table order.
        indexes: the indexes (primary key included) in declaration order.
        table_id: TiDB's table id when known.
        version: TiDB's schema version when known.
    """

    schema: str
    table: str
    columns: tuple[Column, ...]
    indexes: tuple[Index, ...] = ()
    table_id: int | None = None
    version: int | None = None
    _by_name: dict[str, Column] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.table:
            raise InvalidTableError("the table name is missing", field="table")
        if not self.columns:
            raise InvalidTableError(f"table `{self.table}` has no columns", field="columns")
        check_column_count(len(self.columns), self.table)
        check_identifiers([("database", self.schema), ("table", self.table),
                           *(("column", c.name) for c in self.columns),
                           *(("index", i.name) for i in self.indexes)])
        check_indexes(self.table, [(i.name, len(i.columns)) for i in self.indexes])
        by_name: dict[str, Column] = {}
        for position, col in enumerate(self.columns):
            if not col.name:
                raise InvalidTableError(
                    f"column #{position} has no name", field=f"columns/{position}/name"
                )
            if col.name in by_name:
                raise DuplicateColumnError(
                    f"column `{col.name}` is defined twice", column=col.name
                )
            by_name[col.name] = col
            col.type.check(col.name)
        object.__setattr__(self, "_by_name", by_name)
        for index in self.indexes:
            if not index.columns:
                raise InvalidTableError(
                    f"index `{index.name}` has no columns", index=index.name
                )
            for name in index.columns:
                if name not in by_name:
                    raise InvalidTableError(
                        f"index `{index.name}` names unknown column `{name}`",
                        index=index.name,
                        column=name,
                    )

    def column(self, name: str) -> Column:
        """Return the column called `name` (KeyError if there is none)."""
        return self._by_name[name]

    @property
    def primary_key(self) -> Index | None:
        """The PRIMARY KEY index, if the table has one."""
        return next((i for i in self.indexes if i.primary), None)

    def handle_index(self) -> Index | None:
        """The index whose columns form the Kafka key, as TiCDC picks it.

        The primary key; else, among UNIQUE indexes whose columns are all NOT NULL, the one
        with the fewest columns (ties: the first declared); else None (no key schema).
        """
        if self.primary_key is not None:
            return self.primary_key
        best: Index | None = None
        for index in self.indexes:
            if not index.unique:
                continue
            if any(self._by_name[c].nullable for c in index.columns):
                continue
            if best is None or len(index.columns) < len(best.columns):
                best = index
        return best

    def key_columns(self) -> tuple[Column, ...]:
        """The handle key columns in table column order (empty when there is no key)."""
        index = self.handle_index()
        if index is None:
            return ()
        names = set(index.columns)
        return tuple(c for c in self.columns if c.name in names)
