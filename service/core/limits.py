"""TiDB's table limits, enforced on every table definition before any work is done on it.

From TiDB's "TiDB Limitations" page: at most 4096 columns (``table-column-count-limit``, at
most 4096), identifiers (database, table, column, index) of at most 64 characters, at most 512
indexes (``index-limit``, at most 512) and 16 columns in one index; from TiDB's DDL checks: a
SET of at most 64 members, and ENUM/SET members of at most 255 characters
(``enable-enum-length-limit``, on by default); from MySQL, whose types TiDB follows: an ENUM of
at most 65535 members (its index is two bytes). Lengths are in characters, as TiDB counts them.
A definition past them cannot come from TiDB, and accepting one would only let a request run
long. A DDL text is capped before it is parsed: 1 MiB holds the largest legal table with room
to spare (4096 columns of 64-character names with type, NULL and DEFAULT clauses are ~0.5 MB).
Only an ENUM could legitimately need more (65535 members of up to 255 characters): past ~13
characters a member on average such a list no longer fits, and is refused by name
(``ddl_bytes``) rather than parsed for seconds (a 0.9 MB ENUM parses in ~1.8 s).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from service.core.errors import LimitExceededError

__all__ = ["MAX_COLUMNS", "MAX_IDENTIFIER_LENGTH", "MAX_DDL_BYTES", "MAX_INDEXES",
           "MAX_INDEX_COLUMNS", "MAX_SET_MEMBERS", "MAX_ENUM_MEMBERS", "MAX_MEMBER_LENGTH",
           "check_ddl_size", "check_column_count", "check_identifiers", "check_indexes",
           "check_members"]

MAX_COLUMNS = 4096
MAX_IDENTIFIER_LENGTH = 64
MAX_DDL_BYTES = 1 << 20
MAX_INDEXES = 512
MAX_INDEX_COLUMNS = 16
MAX_SET_MEMBERS = 64
MAX_ENUM_MEMBERS = 65535
MAX_MEMBER_LENGTH = 255


def check_ddl_size(ddl: str) -> None:
    """Refuse a DDL text over `MAX_DDL_BYTES` (UTF-8), before parsing it."""
    size = len(ddl.encode("utf-8", "surrogatepass"))
    if size > MAX_DDL_BYTES:
        raise LimitExceededError(
            f"the DDL is {size} bytes; at most {MAX_DDL_BYTES} are accepted (the largest "
            f"table TiDB allows fits well within that)", what="ddl_bytes", limit=MAX_DDL_BYTES,
            value=size)


def check_column_count(count: int, table: str) -> None:
    """Refuse a table with more columns than TiDB allows."""
    if count > MAX_COLUMNS:
        raise LimitExceededError(
            f"table `{table}` has {count} columns; TiDB allows at most {MAX_COLUMNS}",
            what="columns", limit=MAX_COLUMNS, value=count, table=table)


def check_identifiers(named: Iterable[tuple[str, str]]) -> None:
    """Refuse identifiers longer than TiDB allows; `named` yields (kind, name) pairs, e.g.
    ("column", "sku"). Every one over the limit is named, in one error."""
    long = [(kind, name) for kind, name in named if len(name) > MAX_IDENTIFIER_LENGTH]
    if long:
        listed = ", ".join(f"{kind} `{name[:20]}...` ({len(name)} characters)"
                           for kind, name in long)
        raise LimitExceededError(
            f"identifiers longer than TiDB's {MAX_IDENTIFIER_LENGTH} characters: {listed}",
            what="identifier_length", limit=MAX_IDENTIFIER_LENGTH,
            value=max(len(name) for _, name in long),
            identifiers=[{"kind": kind, "name": name, "length": len(name)}
                         for kind, name in long])


def check_indexes(table: str, indexes: Sequence[tuple[str, int]]) -> None:
    """Refuse more indexes than TiDB allows, or an index of more than 16 columns; `indexes`
    holds (name, column count) pairs."""
    if len(indexes) > MAX_INDEXES:
        raise LimitExceededError(
            f"table `{table}` has {len(indexes)} indexes; TiDB allows at most {MAX_INDEXES}",
            what="indexes", limit=MAX_INDEXES, value=len(indexes), table=table)
    for name, columns in indexes:
        if columns > MAX_INDEX_COLUMNS:
            raise LimitExceededError(
                f"index `{name}` of table `{table}` has {columns} columns; TiDB allows at most "
                f"{MAX_INDEX_COLUMNS} in one index", what="index_columns",
                limit=MAX_INDEX_COLUMNS, value=columns, table=table, index=name)


def check_members(column: str, *, kind: str, members: Sequence[str]) -> None:
    """Refuse a SET of more than 64 members, an ENUM of more than 65535, or an ENUM/SET
    member over 255 characters; `kind` is ``ENUM`` or ``SET``."""
    most = MAX_SET_MEMBERS if kind == "SET" else MAX_ENUM_MEMBERS
    if len(members) > most:
        raise LimitExceededError(
            f"column `{column}`: {kind} has {len(members)} members; TiDB allows at most "
            f"{most}", what=f"{kind.lower()}_members", limit=most, value=len(members),
            column=column)
    for position, member in enumerate(members):
        if len(member) > MAX_MEMBER_LENGTH:
            raise LimitExceededError(
                f"column `{column}`: {kind} member #{position} is {len(member)} characters; "
                f"TiDB allows at most {MAX_MEMBER_LENGTH}", what="member_length",
                limit=MAX_MEMBER_LENGTH, value=len(member), column=column, member=position)
