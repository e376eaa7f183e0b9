"""MySQL/TiDB ``CREATE TABLE`` statements, parsed with sqlglot into the `Table` model.

TiDB-only syntax sqlglot does not know (``AUTO_RANDOM(...)``, ``CLUSTERED``/``NONCLUSTERED``,
``SHARD_ROW_ID_BITS=...`` and similar table options, ``UNSIGNED`` on FLOAT/DOUBLE) is blanked
out token by token before parsing (`service.core.ddl_tokens`), so error positions still point
into the original text; ``/*T! ... */`` executable comments are ordinary comments to sqlglot
and are ignored. Column definitions are read by `service.core.ddl_columns`.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.dialects.mysql import MySQL

from service.core.ddl_columns import column_definition, is_serial, is_virtual, table_index
from service.core.ddl_tokens import scan_create
from service.core.errors import (
    Fix,
    InvalidDDLError,
    InvalidTableError,
    MissingDatabaseError,
)
from service.core.limits import check_ddl_size
from service.core.table import Column, Index, Table

__all__ = ["table_from_ddl"]

_DIALECT = MySQL()


def table_from_ddl(ddl: str, *, schema: str | None = None) -> Table:
    """Parse one ``CREATE TABLE`` statement into a validated `Table`.

    Args:
        ddl: the statement (a trailing ``;`` is fine; one statement only).
        schema: the database to use when the statement names none (``CREATE TABLE t``); the
            statement's own ``db.t`` wins.

    Raises:
        InvalidDDLError: the text does not parse (the error gives line and column), holds
            several statements, or is not a ``CREATE TABLE`` with column definitions.
        MissingDatabaseError: neither the statement nor `schema` names the database.
        LimitExceededError: the text is over 1 MiB or declares more than 4096 columns (both
            checked before parsing), or the table is past another of TiDB's limits.
        InvalidTableError / UnsupportedTypeError: as for any table definition.
    """
    check_ddl_size(ddl)
    create, real_columns = _parse_single_create(ddl)
    target = create.this
    table_expr = target.this
    table_name = table_expr.name
    db_name = _database(table_expr, schema)
    columns, indexes = _body(target.expressions, table_charset=_table_charset(create),
                             real_columns=real_columns)
    primary = [i for i in indexes if i.primary]
    if len(primary) > 1:
        raise InvalidTableError(f"table `{table_name}` declares more than one PRIMARY KEY")
    if primary:
        # MySQL makes every primary-key column NOT NULL.
        pk = set(primary[0].columns)
        columns = [
            Column(c.name, c.type, nullable=False, default=c.default) if c.name in pk else c
            for c in columns
        ]
    return Table(schema=db_name, table=table_name, columns=tuple(columns), indexes=tuple(indexes))


def _body(items: list[exp.Expression], *, table_charset: str | None,
          real_columns: frozenset[str]) -> tuple[list[Column], list[Index]]:
    """The columns and indexes of a CREATE TABLE body, in their order (a SERIAL column's
    unique index after the others)."""
    columns: list[Column] = []
    indexes: list[Index] = []
    serial_columns: list[str] = []
    for item in items:
        if isinstance(item, exp.ColumnDef):
            if is_virtual(item):
                continue  # TiCDC does not replicate virtual generated columns
            column, inline = column_definition(item, table_charset=table_charset,
                                               real=item.name in real_columns)
            columns.append(column)
            indexes.extend(inline)
            if is_serial(item):
                serial_columns.append(column.name)
        else:
            index = table_index(item)
            if index is not None:
                indexes.append(index)
    indexes.extend(Index(name=f"{c}_serial", columns=(c,), unique=True) for c in serial_columns)
    return columns, indexes


def _database(table_expr: exp.Table, schema: str | None) -> str:
    """The table's database: the statement's ``db.t``, else `schema`.

    TiCDC always knows it, so a guess ("" makes topic ``tidb__t``) would only hide a mistake.
    """
    name = table_expr.db or schema
    if not name:
        raise MissingDatabaseError(
            f"CREATE TABLE `{table_expr.name}` names no database (the topic, subjects and "
            f"Avro namespace are built from it)", table=table_expr.name, fix=[Fix.DATABASE])
    return name


def _parse_single_create(ddl: str) -> tuple[exp.Create, frozenset[str]]:
    scanned = scan_create(ddl)
    try:
        parsed = (sqlglot.parse(scanned.text, dialect=_DIALECT) if scanned.tokens is None
                  else _DIALECT.parser().parse(scanned.tokens, scanned.text))
        statements = [s for s in parsed if s is not None]
    except sqlglot.errors.ParseError as exc:
        first = exc.errors[0] if exc.errors else {}
        line, col = first.get("line"), first.get("col")
        raise InvalidDDLError(
            f"DDL does not parse at line {line}, column {col}: {first.get('description', exc)}",
            line=line,
            column=col,
        ) from exc
    except sqlglot.errors.TokenError as exc:
        raise InvalidDDLError(f"DDL does not tokenize: {exc}") from exc
    if len(statements) != 1:
        raise InvalidDDLError(
            f"expected exactly one CREATE TABLE statement, found {len(statements)} statements"
        )
    statement = statements[0]
    if not (
        isinstance(statement, exp.Create)
        and (statement.args.get("kind") or "").upper() == "TABLE"
        and isinstance(statement.this, exp.Schema)
    ):
        raise InvalidDDLError(
            f"expected a CREATE TABLE statement with column definitions, got "
            f"{_statement_kind(statement)} at line 1, column 1",
            line=1,
            column=1,
        )
    return statement, scanned.real_columns


def _statement_kind(statement: exp.Expr) -> str:
    """What a statement that is not a usable CREATE TABLE is, for the message."""
    if not isinstance(statement, exp.Create):
        return statement.key.upper()
    if (statement.args.get("kind") or "").upper() == "TABLE":
        return "CREATE TABLE without column definitions (AS SELECT / LIKE)"
    return f"CREATE {statement.args.get('kind') or ''}".strip()


def _table_charset(create: exp.Create) -> str | None:
    props = create.args.get("properties")
    if props is None:
        return None
    for prop in props.expressions:
        if isinstance(prop, exp.CharacterSetProperty):
            return str(prop.this.name)
    return None
