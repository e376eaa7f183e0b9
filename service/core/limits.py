"""TiDB's table limits, enforced on every table definition before any work is done on it.

TiDB refuses a table with more than 4096 columns (``table-column-count-limit``, at most 4096)
and identifiers longer than 64 characters (databases, tables, columns, indexes); a definition
past them cannot come from TiDB, and accepting one would only let a request run long. A DDL
text is capped before it is parsed: 1 MiB holds the largest legal table with room to spare
(4096 columns of 64-character names with type, NULL and DEFAULT clauses are ~0.5 MB).
"""

from __future__ import annotations

from collections.abc import Iterable

from service.core.errors import LimitExceededError

__all__ = ["MAX_COLUMNS", "MAX_IDENTIFIER_LENGTH", "MAX_DDL_BYTES", "check_ddl_size",
           "check_column_count", "check_identifiers"]

MAX_COLUMNS = 4096
MAX_IDENTIFIER_LENGTH = 64
MAX_DDL_BYTES = 1 << 20


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
            identifiers=[{"kind": kind, "name": name, "length": len(name)}
                         for kind, name in long])
