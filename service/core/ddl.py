"""MySQL/TiDB ``CREATE TABLE`` statements, parsed with sqlglot into the `Table` model.

TiDB-only syntax sqlglot does not know (``AUTO_RANDOM(...)``, ``CLUSTERED``/``NONCLUSTERED``,
``SHARD_ROW_ID_BITS=...`` and similar table options, ``UNSIGNED`` on FLOAT/DOUBLE) is blanked
out token by token before parsing, so error positions still point into the original text;
``/*T! ... */`` executable comments are ordinary comments to sqlglot and are ignored.
"""

from __future__ import annotations

import decimal
import math
import re
import sys

import sqlglot
from sqlglot import exp
from sqlglot.dialects.mysql import MySQL
from sqlglot.tokens import Token, TokenType

from service.core.errors import (
    Fix,
    InvalidDDLError,
    InvalidDefaultError,
    InvalidTableError,
    MissingDatabaseError,
)
from service.core.limits import check_column_count, check_ddl_size
from service.core.mysql_types import MySQLType, TypeFamily, lookup_type
from service.core.table import Column, ColumnType, Index, Table

__all__ = ["table_from_ddl"]

_DIALECT = MySQL()
_TIDB_COLUMN_WORDS = frozenset({"AUTO_RANDOM", "CLUSTERED", "NONCLUSTERED"})
_TIDB_TABLE_OPTIONS = frozenset({
    "SHARD_ROW_ID_BITS", "PRE_SPLIT_REGIONS", "AUTO_ID_CACHE", "AUTO_RANDOM_BASE", "TTL_ENABLE",
    "TTL_JOB_INTERVAL",
})
_FLOAT_TOKENS = frozenset({TokenType.FLOAT, TokenType.DOUBLE})

# sqlglot data types -> (MySQL base type, unsigned).
_SQLGLOT_TYPES: dict[exp.DataType.Type, tuple[MySQLType, bool]] = {}
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
    table_charset = _table_charset(create)

    columns: list[Column] = []
    indexes: list[Index] = []
    serial_columns: list[str] = []
    for item in target.expressions:
        if isinstance(item, exp.ColumnDef):
            if _is_virtual(item):
                continue  # TiCDC does not replicate virtual generated columns
            column, inline = _column(item, table_charset, real=item.name in real_columns)
            columns.append(column)
            indexes.extend(inline)
            if item.kind is not None and item.kind.this is _SERIAL:
                serial_columns.append(column.name)
        else:
            index = _table_index(item)
            if index is not None:
                indexes.append(index)
    indexes.extend(Index(name=f"{c}_serial", columns=(c,), unique=True) for c in serial_columns)
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
    cleaned, real_columns = _blank_tidb_extras(ddl)
    try:
        statements = [s for s in sqlglot.parse(cleaned, dialect=_DIALECT) if s is not None]
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
        kind = statement.key.upper()
        if isinstance(statement, exp.Create):
            kind = f"CREATE {statement.args.get('kind') or ''}".strip()
            if (statement.args.get("kind") or "").upper() == "TABLE":
                kind = "CREATE TABLE without column definitions (AS SELECT / LIKE)"
        raise InvalidDDLError(
            f"expected a CREATE TABLE statement with column definitions, got {kind} "
            "at line 1, column 1",
            line=1,
            column=1,
        )
    return statement, real_columns


def _blank_tidb_extras(ddl: str) -> tuple[str, frozenset[str]]:
    """Replace TiDB-only tokens with spaces, keeping every other character where it was.

    Also returns the columns declared ``REAL``: MySQL's REAL is DOUBLE, sqlglot reads FLOAT;
    and refuses more columns than TiDB allows (`LimitExceededError`) before anything parses.
    """
    try:
        tokens = _DIALECT.tokenize(ddl)
    except sqlglot.errors.TokenError:
        return ddl, frozenset()  # the parser reports the problem with its position
    # Counted on the tokens: parsing costs four times as much as tokenizing.
    check_column_count(_declared_columns(tokens), _table_name(tokens))
    chars = list(ddl)
    spans: list[tuple[int, int]] = []
    real_columns = {
        tokens[k - 1].text for k in range(1, len(tokens))
        if tokens[k].text.upper() == "REAL" and tokens[k].token_type is TokenType.FLOAT
    }
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        word = tok.text.upper() if tok.token_type is TokenType.VAR else ""
        if word in _TIDB_COLUMN_WORDS:
            end = _skip_parens(tokens, i + 1)
            spans.append((tok.start, tokens[end - 1].end))
            i = end
            continue
        if word in _TIDB_TABLE_OPTIONS:
            end = i + 1
            if end < len(tokens) and tokens[end].token_type is TokenType.EQ:
                end += 1
            end = min(end + 1, len(tokens))
            spans.append((tok.start, tokens[end - 1].end))
            i = end
            continue
        if tok.text.upper() == "UNSIGNED" and _after_float_type(tokens, i):
            spans.append((tok.start, tok.end))
        i += 1
    for start, end in spans:
        for pos in range(start, end + 1):
            if chars[pos] not in "\r\n":
                chars[pos] = " "
    return "".join(chars), frozenset(real_columns)


# The first words of the table-level clauses of a CREATE TABLE body (reserved words in MySQL,
# so never an unquoted column name); an item whose second word is INDEX or KEY (FULLTEXT KEY,
# VECTOR INDEX, ...) is a clause too. Every other item defines a column.
_CLAUSE_WORDS = frozenset({"PRIMARY", "UNIQUE", "KEY", "INDEX", "CONSTRAINT", "FOREIGN",
                           "CHECK"})
_INDEX_WORDS = frozenset({"INDEX", "KEY"})


def _declared_columns(tokens: list[Token]) -> int:
    """How many column definitions the statement's first ``( ... )`` holds, virtual ones
    included (TiDB's column limit counts them)."""
    count, depth, first = 0, 0, -1
    for i, tok in enumerate(tokens):
        kind = tok.token_type
        if kind is TokenType.L_PAREN:
            depth += 1
            first = i + 1 if depth == 1 else first
        elif kind is TokenType.R_PAREN:
            depth -= 1
            if depth == 0:
                return count + _is_column_item(tokens, first, i)
        elif kind is TokenType.COMMA and depth == 1:
            count += _is_column_item(tokens, first, i)
            first = i + 1
    return count


def _is_column_item(tokens: list[Token], start: int, end: int) -> bool:
    """Whether tokens[start:end], one item of a CREATE TABLE body, defines a column."""
    if start < 0 or start >= end:
        return False
    head = tokens[start]
    if head.token_type is TokenType.IDENTIFIER:  # a `quoted` name
        return True
    second = tokens[start + 1].text.split()[0].upper() if start + 1 < end else ""
    return head.text.split()[0].upper() not in _CLAUSE_WORDS and second not in _INDEX_WORDS


def _table_name(tokens: list[Token]) -> str:
    """The name before the statement's first ``(`` (for messages; "" if there is none)."""
    for before, tok in zip(tokens, tokens[1:], strict=False):
        if tok.token_type is TokenType.L_PAREN:
            return before.text
    return ""


def _skip_parens(tokens: list[Token], i: int) -> int:
    """Return the index after a balanced ``( ... )`` group starting at `i` (or `i` if none)."""
    if i >= len(tokens) or tokens[i].token_type is not TokenType.L_PAREN:
        return i
    depth = 0
    while i < len(tokens):
        if tokens[i].token_type is TokenType.L_PAREN:
            depth += 1
        elif tokens[i].token_type is TokenType.R_PAREN:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return i


def _after_float_type(tokens: list[Token], i: int) -> bool:
    """True when token `i` (UNSIGNED) follows FLOAT/DOUBLE/REAL, optionally with ``(m,d)``."""
    j = i - 1
    if j >= 0 and tokens[j].token_type is TokenType.R_PAREN:
        while j >= 0 and tokens[j].token_type is not TokenType.L_PAREN:
            j -= 1
        j -= 1
    return j >= 0 and (
        tokens[j].token_type in _FLOAT_TOKENS or tokens[j].text.upper() in ("REAL", "PRECISION")
    )


def _table_charset(create: exp.Create) -> str | None:
    props = create.args.get("properties")
    if props is None:
        return None
    for prop in props.expressions:
        if isinstance(prop, exp.CharacterSetProperty):
            return prop.this.name
    return None


def _column(
    item: exp.ColumnDef, table_charset: str | None, *, real: bool
) -> tuple[Column, list[Index]]:
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
    nullable = True
    default: str | int | None = None
    charset: str | None = None
    collate: str | None = None
    zerofill = False
    inline: list[Index] = []
    if kind.this is _SERIAL:
        unsigned, nullable = True, False
    for constraint in item.constraints:
        ck = constraint.kind
        if isinstance(ck, exp.NotNullColumnConstraint):
            nullable = bool(ck.args.get("allow_null"))
        elif isinstance(ck, exp.DefaultColumnConstraint):
            default = _default_text(ck.this, base, name)
        elif isinstance(ck, exp.PrimaryKeyColumnConstraint):
            inline.append(Index(name="PRIMARY", columns=(name,), unique=True, primary=True))
        elif isinstance(ck, exp.UniqueColumnConstraint):
            inline.append(Index(name=name, columns=(name,), unique=True))
        elif isinstance(ck, exp.CharacterSetColumnConstraint):
            charset = ck.this.name
        elif isinstance(ck, exp.CollateColumnConstraint):
            collate = ck.this.name
        elif isinstance(ck, exp.ZeroFillColumnConstraint):
            zerofill = unsigned = True
    if charset is None and base.family is TypeFamily.TEXT:
        charset = table_charset
    length = numbers[0] if numbers else None
    decimal = numbers[1] if len(numbers) > 1 else None
    if base in (MySQLType.TIME, MySQLType.DATETIME, MySQLType.TIMESTAMP):
        length, decimal = None, (numbers[0] if numbers else None)
    elif base in (MySQLType.FLOAT, MySQLType.DOUBLE, MySQLType.VECTOR):
        length = decimal = None
    col_type = ColumnType(
        base=base, unsigned=unsigned,
        zerofill=zerofill, length=length, decimal=decimal, elements=elements,
        charset=charset, collate=collate,
    )
    return Column(name=name, type=col_type, nullable=nullable, default=default), inline


def _is_virtual(item: exp.ColumnDef) -> bool:
    return any(
        isinstance(c.kind, exp.ComputedColumnConstraint) and not c.kind.args.get("persisted")
        for c in item.constraints
    )


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


def _default_text(value: exp.Expression, base: MySQLType, column: str) -> str | int | None:
    """Render a DEFAULT expression as TiDB stores it: the literal's text, NULL as None."""
    if isinstance(value, exp.Null):
        return None
    if isinstance(value, exp.Paren):
        value = value.this
    if isinstance(value, exp.Literal):
        if base.family is TypeFamily.DECIMAL and not value.is_string:
            return _decimal_literal_text(value.this, negative=False, column=column)
        return value.this
    if isinstance(value, exp.Neg) and isinstance(value.this, exp.Literal):
        if base.family is TypeFamily.DECIMAL and not value.this.is_string:
            return _decimal_literal_text(value.this.this, negative=True, column=column)
        return "-" + value.this.this
    if isinstance(value, exp.Boolean):
        return "1" if value.this else "0"
    if isinstance(value, (exp.CurrentTimestamp, exp.CurrentDate, exp.CurrentTime)) or (
        isinstance(value, exp.Anonymous) and value.name.upper() in _NOW_FUNCTIONS
    ):
        return "CURRENT_TIMESTAMP"
    if isinstance(value, exp.BitString):
        return _bits_text(int(value.this or "0", 2), base)
    if isinstance(value, exp.HexString):
        digits = value.this
        return _bits_text(int(digits or "0", 16), base, width=(len(digits) + 1) // 2)
    raise InvalidTableError(
        f"column `{column}`: DEFAULT {value.sql(dialect=_DIALECT)} is an expression; "
        "flat-avro needs a literal default",
        column=column,
    )


_NOW_FUNCTIONS = frozenset({"NOW", "LOCALTIME", "LOCALTIMESTAMP", "CURRENT_TIMESTAMP"})
_INT_LITERAL = re.compile(r"[0-9]+", re.ASCII)
_DECIMAL_LITERAL = re.compile(r"([0-9]*)\.([0-9]*)", re.ASCII)


def _decimal_literal_text(literal: str, *, negative: bool, column: str) -> str:
    """The text TiDB v8 stores for a numeric ``DEFAULT`` literal of a DECIMAL column.

    pkg/ddl getDefaultValue evaluates the literal (EvalSimpleAst) and keeps ``Datum.ToString()``
    of it; unlike integer and float columns it does not convert it to the column type first, so
    the scale is not applied (``3.14`` in DECIMAL(10,4) stays ``3.14``). The lexer makes
    ``3.140`` a MyDecimal (its written fractional digits kept, leading zeros dropped: ``3.140``,
    ``007.50`` -> ``7.50``, ``.5`` -> ``0.5``, ``5.`` -> ``5``), ``7`` an integer, and anything
    with an exponent a float64, printed by strconv.FormatFloat(f, 'f', -1, 64) (``1e2`` ->
    ``100``, ``1.5e-3`` -> ``0.0015``). A leading ``+`` is dropped by the rewriter (``+3.14`` ->
    ``3.14``); ``-`` negates the value, and a negated zero is zero (``-0`` -> ``0``,
    ``-0.00`` -> ``0.00``; types.DecimalNeg) except for a float (``-0e0`` -> ``-0``).
    Whether the value fits the column is checked later, on this text (defaults.py).

    Raises:
        InvalidDefaultError: a float literal beyond DOUBLE (``1e400``: TiDB's lexer refuses it).
    """
    sign = "-" if negative else ""
    if _INT_LITERAL.fullmatch(literal):
        digits = literal.lstrip("0") or "0"
        return digits if digits == "0" else sign + digits
    match = _DECIMAL_LITERAL.fullmatch(literal)
    if match is not None:
        whole, fraction = match[1].lstrip("0") or "0", match[2]
        text = whole + ("." + fraction if fraction else "")
        return text if not (whole + fraction).strip("0") else sign + text
    number = float(literal)
    if not math.isfinite(number):
        raise InvalidDefaultError(
            f"column `{column}`: DEFAULT {sign}{literal} is out of range for a numeric literal "
            f"(at most ±{sys.float_info.max})",
            column=column,
        )
    return _go_float_text(-number if negative else number)


def _go_float_text(number: float) -> str:
    """Go's strconv.FormatFloat(number, 'f', -1, 64): the shortest digits that read back as
    `number`, in plain notation, without a trailing ``.0``."""
    text = format(decimal.Decimal(repr(number)), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def _bits_text(number: int, base: MySQLType, *, width: int | None = None) -> str | int:
    """A ``b'...'`` / ``0x...`` literal as TiDB keeps it for the column's type.

    BIT columns: the number (TiCDC's TableSchema sends BIT defaults as integers); numeric
    columns: its decimal text; text and binary columns: the literal's big-endian bytes,
    carried as a str whose UTF-8 (surrogateescape) encoding gives those bytes back.
    """
    family = base.family
    if family is TypeFamily.BIT:
        return number
    if family in (TypeFamily.INTEGER, TypeFamily.DECIMAL, TypeFamily.FLOAT, TypeFamily.DOUBLE,
                  TypeFamily.YEAR):
        return str(number)
    size = width if width is not None else max(1, (number.bit_length() + 7) // 8)
    return number.to_bytes(size, "big").decode("utf-8", errors="surrogateescape")


def _table_index(item: exp.Expression) -> Index | None:
    """Turn a table-level PRIMARY KEY / UNIQUE / KEY clause into an `Index` (None: ignored)."""
    if isinstance(item, exp.Constraint):
        for inner in item.expressions:
            if isinstance(inner, (exp.PrimaryKey, exp.UniqueColumnConstraint)):
                index = _table_index(inner)
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
