"""Iceberg tables read back with PyIceberg (no JVM), through the SQLite catalog the stream's
default JDBC catalog writes (PyIceberg's ``SqlCatalog`` reads the same tables)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # PyIceberg takes 1.5 s to import: on use, not when each worker collects
    import pyarrow as pa
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.table import Table


def catalog(warehouse: Path) -> SqlCatalog:
    """The catalog of ``--iceberg-warehouse`` `warehouse` (its default SQLite file)."""
    from pyiceberg.catalog.sql import SqlCatalog

    return SqlCatalog("flatavro", uri=f"sqlite:///{warehouse}/catalog.sqlite",
                      warehouse=f"file://{warehouse}")


def load(warehouse: Path, name: str) -> Table:
    """Table `name` (``namespace.table``) as PyIceberg sees it now."""
    return catalog(warehouse).load_table(name)


def read_iceberg(warehouse: Path, name: str) -> pa.Table:
    """The table's current snapshot, every delete file applied."""
    return load(warehouse, name).scan().to_arrow()


def sorted_rows(warehouse: Path, name: str, *columns: str) -> list[tuple[Any, ...]]:
    """The rows as tuples of `columns` (all when none), sorted."""
    table = read_iceberg(warehouse, name)
    names = list(columns) or table.column_names
    return sorted(tuple(r[c] for c in names) for r in table.to_pylist())
