"""TiDB's table limits on every input form: DDL (size and column count before parsing),
TableSchema JSON (column count before validating columns) and the table model itself."""

from __future__ import annotations

from typing import Any

import pytest

from service.core import ddl as ddl_module
from service.core.ddl import table_from_ddl
from service.core.errors import InvalidTableError, LimitExceededError
from service.core.limits import (
    MAX_COLUMNS,
    MAX_DDL_BYTES,
    MAX_ENUM_MEMBERS,
    MAX_IDENTIFIER_LENGTH,
    MAX_INDEX_COLUMNS,
    MAX_INDEXES,
    MAX_MEMBER_LENGTH,
    MAX_SET_MEMBERS,
)
from service.core.table_json import table_from_json

TYPES = ["INT", "BIGINT UNSIGNED", "VARCHAR(255)", "DECIMAL(12,2)", "DATETIME(3)", "TEXT",
         "ENUM('a','b,c')", "SET('x','y')", "DOUBLE", "BIT(8)", "JSON", "DATE", "TIME(6)",
         "BLOB", "TINYINT(1)", "CHAR(10)"]


def columns_ddl(count: int, *, clauses: str = "", virtual: bool = False) -> str:
    """`count` columns in all (`id` included), types varied, then `clauses`."""
    cols = [f"c{i} {TYPES[i % len(TYPES)]}" for i in range(count - 1 - virtual)]
    if virtual:
        cols.append("v INT AS (id + 1) VIRTUAL")
    return f"CREATE TABLE shop.t (id BIGINT PRIMARY KEY, {', '.join(cols)}{clauses})"


def limit_of(error: pytest.ExceptionInfo[LimitExceededError]) -> dict[str, Any]:
    assert error.value.code == "limit_exceeded"
    assert isinstance(error.value, InvalidTableError)  # per-message errors in convert too
    return error.value.details


def test_the_widest_table_tidb_allows_is_accepted_with_its_index_clauses() -> None:
    clauses = (", UNIQUE KEY u (c0), KEY k (c1), INDEX i (c2), CONSTRAINT ck CHECK (c0 > 0),"
               " FULLTEXT KEY f (c5), `key` INT")  # the last item is a column, quoted
    table = table_from_ddl(columns_ddl(MAX_COLUMNS - 1, clauses=clauses))
    assert len(table.columns) == MAX_COLUMNS
    assert table.columns[-1].name == "key"


def test_one_column_more_is_refused_before_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_parse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the DDL was parsed")

    monkeypatch.setattr(ddl_module.sqlglot, "parse", no_parse)
    with pytest.raises(LimitExceededError) as error:
        table_from_ddl(columns_ddl(MAX_COLUMNS + 1))
    assert limit_of(error) == {"what": "columns", "limit": MAX_COLUMNS,
                               "value": MAX_COLUMNS + 1, "table": "t"}


def test_virtual_columns_count_as_tidb_counts_them() -> None:
    with pytest.raises(LimitExceededError) as error:
        table_from_ddl(columns_ddl(MAX_COLUMNS + 1, virtual=True))
    assert limit_of(error)["value"] == MAX_COLUMNS + 1


def test_a_ddl_over_the_size_cap_is_refused_by_its_utf8_bytes(
        monkeypatch: pytest.MonkeyPatch) -> None:
    head = "CREATE TABLE shop.t (id INT) /* "
    fits = head + "x" * (MAX_DDL_BYTES - len(head) - 3) + " */"
    assert len(table_from_ddl(fits).columns) == 1
    monkeypatch.setattr(ddl_module.sqlglot, "parse", lambda *a, **k: pytest.fail("parsed"))
    wide = head + "é" * (MAX_DDL_BYTES // 2) + " */"  # fewer characters than bytes
    assert len(wide) < MAX_DDL_BYTES
    with pytest.raises(LimitExceededError) as error:
        table_from_ddl(wide)
    assert limit_of(error) == {"what": "ddl_bytes", "limit": MAX_DDL_BYTES,
                               "value": len(wide.encode())}


@pytest.mark.parametrize("kind, ddl", [
    ("database", "CREATE TABLE `{name}`.t (id INT)"),
    ("table", "CREATE TABLE shop.`{name}` (id INT)"),
    ("column", "CREATE TABLE shop.t (`{name}` INT)"),
    ("index", "CREATE TABLE shop.t (id INT, UNIQUE KEY `{name}` (id))"),
])
def test_identifiers_are_counted_in_characters(kind: str, ddl: str) -> None:
    longest = "é" * MAX_IDENTIFIER_LENGTH  # 128 UTF-8 bytes: still allowed
    assert table_from_ddl(ddl.format(name=longest)).table
    over = "é" * (MAX_IDENTIFIER_LENGTH + 1)
    with pytest.raises(LimitExceededError) as error:
        table_from_ddl(ddl.format(name=over))
    assert limit_of(error) == {
        "what": "identifier_length", "limit": MAX_IDENTIFIER_LENGTH, "value": len(over),
        "identifiers": [{"kind": kind, "name": over, "length": len(over)}]}


def test_set_members_and_member_length() -> None:
    members = ", ".join(f"'m{i}'" for i in range(MAX_SET_MEMBERS))
    assert table_from_ddl(f"CREATE TABLE shop.t (s SET({members}))").columns
    with pytest.raises(LimitExceededError) as error:
        table_from_ddl(f"CREATE TABLE shop.t (s SET({members}, 'one_more'))")
    assert limit_of(error) == {"what": "set_members", "limit": MAX_SET_MEMBERS,
                               "value": MAX_SET_MEMBERS + 1, "column": "s"}
    longest = "x" * MAX_MEMBER_LENGTH
    assert table_from_ddl(f"CREATE TABLE shop.t (e ENUM('a', '{longest}'))").columns
    with pytest.raises(LimitExceededError) as error:
        table_from_ddl(f"CREATE TABLE shop.t (e ENUM('a', '{longest}y'))")
    assert limit_of(error) == {"what": "member_length", "limit": MAX_MEMBER_LENGTH,
                               "value": MAX_MEMBER_LENGTH + 1, "column": "e", "member": 1}


def table_schema(columns: int, indexes: list[list[str]]) -> dict[str, Any]:
    return {"schema": "shop", "table": "t",
            "columns": [{"name": f"c{i}", "dataType": {"mysqlType": "int"}, "nullable": False}
                        for i in range(columns)],
            "indexes": [{"name": f"u{i}", "unique": True, "columns": names}
                        for i, names in enumerate(indexes)]}


def test_table_schema_indexes_and_their_columns() -> None:
    assert len(table_from_json(table_schema(2, [["c0"]] * MAX_INDEXES)).indexes) == MAX_INDEXES
    with pytest.raises(LimitExceededError) as error:
        table_from_json(table_schema(2, [["c0"]] * (MAX_INDEXES + 1)))
    assert limit_of(error) == {"what": "indexes", "limit": MAX_INDEXES,
                               "value": MAX_INDEXES + 1, "table": "t"}
    widest = [f"c{i}" for i in range(MAX_INDEX_COLUMNS)]
    assert table_from_json(table_schema(MAX_INDEX_COLUMNS + 1, [widest])).indexes
    with pytest.raises(LimitExceededError) as error:
        table_from_json(table_schema(MAX_INDEX_COLUMNS + 1, [[*widest, "c16"]]))
    assert limit_of(error) == {"what": "index_columns", "limit": MAX_INDEX_COLUMNS,
                               "value": MAX_INDEX_COLUMNS + 1, "table": "t", "index": "u0"}


def test_table_schema_columns_are_counted_before_any_is_validated() -> None:
    document = table_schema(MAX_COLUMNS + 1, [])
    for column in document["columns"]:
        del column["dataType"]  # would be a field error, if the columns were looked at
    with pytest.raises(LimitExceededError) as error:
        table_from_json(document)
    assert limit_of(error) == {"what": "columns", "limit": MAX_COLUMNS,
                               "value": MAX_COLUMNS + 1, "table": "t"}
    assert len(table_from_json(table_schema(MAX_COLUMNS, [])).columns) == MAX_COLUMNS


def test_enum_members_as_mysql_counts_them() -> None:
    def with_enum(count: int) -> dict[str, Any]:
        document = table_schema(1, [])
        document["columns"].append({"name": "e", "nullable": True, "dataType": {
            "mysqlType": "enum", "elements": [f"m{i}" for i in range(count)]}})
        return document

    assert len(table_from_json(with_enum(MAX_ENUM_MEMBERS)).columns[1].type.elements) == \
        MAX_ENUM_MEMBERS
    with pytest.raises(LimitExceededError) as error:
        table_from_json(with_enum(MAX_ENUM_MEMBERS + 1))
    assert limit_of(error) == {"what": "enum_members", "limit": MAX_ENUM_MEMBERS,
                               "value": MAX_ENUM_MEMBERS + 1, "column": "e"}
