"""TiDB-only syntax blanked out of a ``CREATE TABLE`` before sqlglot parses it, token by token.

sqlglot's MySQL dialect does not know ``AUTO_RANDOM(...)``, ``CLUSTERED``/``NONCLUSTERED``,
``SHARD_ROW_ID_BITS=...`` and similar table options, or ``UNSIGNED`` on FLOAT/DOUBLE: each is
replaced by spaces (line breaks kept), so every other character stays where it was and a
parse error's line and column still point into the original text. The same tokens count the
declared columns, so a statement past TiDB's column limit is refused before it is parsed.
"""

from __future__ import annotations

from typing import NamedTuple

import sqlglot
from sqlglot.dialects.mysql import MySQL
from sqlglot.tokens import Token, TokenType

from service.core.limits import check_column_count

__all__ = ["Scanned", "scan_create"]

_DIALECT = MySQL()
_TIDB_COLUMN_WORDS = frozenset({"AUTO_RANDOM", "CLUSTERED", "NONCLUSTERED"})
_TIDB_TABLE_OPTIONS = frozenset({
    "SHARD_ROW_ID_BITS", "PRE_SPLIT_REGIONS", "AUTO_ID_CACHE", "AUTO_RANDOM_BASE", "TTL_ENABLE",
    "TTL_JOB_INTERVAL",
})
_FLOAT_TOKENS = frozenset({TokenType.FLOAT, TokenType.DOUBLE})

# The first words of the table-level clauses of a CREATE TABLE body (reserved words in MySQL,
# so never an unquoted column name); an item whose second word is INDEX or KEY (FULLTEXT KEY,
# VECTOR INDEX, ...) is a clause too. Every other item defines a column.
_CLAUSE_WORDS = frozenset({"PRIMARY", "UNIQUE", "KEY", "INDEX", "CONSTRAINT", "FOREIGN",
                           "CHECK"})
_INDEX_WORDS = frozenset({"INDEX", "KEY"})


class Scanned(NamedTuple):
    """A ``CREATE TABLE`` ready for the parser.

    Attributes:
        text: the statement with TiDB-only tokens blanked.
        real_columns: the columns declared ``REAL``.
        tokens: the statement's tokens when nothing was blanked, for the parser to take as
            they are (tokenizing again cost a fifth of parsing a 4096-column table); else None.
    """

    text: str
    real_columns: frozenset[str]
    tokens: list[Token] | None


def scan_create(ddl: str) -> Scanned:
    """Replace TiDB-only tokens with spaces, keeping every other character where it was.

    Also names the columns declared ``REAL`` (MySQL's REAL is DOUBLE, sqlglot reads FLOAT),
    keeps the tokens when nothing was blanked, and refuses more columns than TiDB allows
    (`LimitExceededError`) before anything parses. Text that does not tokenize is returned as
    it is (the parser reports it, with its position).
    """
    try:
        tokens = _DIALECT.tokenize(ddl)
    except sqlglot.errors.TokenError:
        return Scanned(ddl, frozenset(), None)
    # Counted on the tokens: parsing costs four times as much as tokenizing.
    check_column_count(_declared_columns(tokens), _table_name(tokens))
    real_columns = frozenset(
        tokens[k - 1].text for k in range(1, len(tokens))
        if tokens[k].text.upper() == "REAL" and tokens[k].token_type is TokenType.FLOAT
    )
    spans = _tidb_spans(tokens)
    if not spans:
        return Scanned(ddl, real_columns, tokens)
    chars = list(ddl)
    for start, end in spans:
        for pos in range(start, end + 1):
            if chars[pos] not in "\r\n":
                chars[pos] = " "
    return Scanned("".join(chars), real_columns, None)


def _tidb_spans(tokens: list[Token]) -> list[tuple[int, int]]:
    """The (first, last) character positions of each TiDB-only word with its arguments."""
    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        word = tok.text.upper() if tok.token_type is TokenType.VAR else ""
        if word in _TIDB_COLUMN_WORDS:
            end = _skip_parens(tokens, i + 1)
        elif word in _TIDB_TABLE_OPTIONS:
            end = _skip_option_value(tokens, i + 1)
        else:
            if tok.text.upper() == "UNSIGNED" and _after_float_type(tokens, i):
                spans.append((tok.start, tok.end))
            i += 1
            continue
        spans.append((tok.start, tokens[end - 1].end))
        i = end
    return spans


def _skip_option_value(tokens: list[Token], i: int) -> int:
    """The index after a table option's ``[=] value`` that starts at `i`."""
    if i < len(tokens) and tokens[i].token_type is TokenType.EQ:
        i += 1
    return min(i + 1, len(tokens))


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
                return count + _is_column_item(tokens, start=first, end=i)
        elif kind is TokenType.COMMA and depth == 1:
            count += _is_column_item(tokens, start=first, end=i)
            first = i + 1
    return count


def _is_column_item(tokens: list[Token], *, start: int, end: int) -> bool:
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
