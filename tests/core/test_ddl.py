"""CREATE TABLE statements into the table model: types, constraints, TiDB extras, errors."""

from __future__ import annotations

import pytest

from service.core.ddl import table_from_ddl
from service.core.errors import (
    Fix,
    InvalidDDLError,
    InvalidTableError,
    MissingDatabaseError,
    UnsupportedTypeError,
)
from service.core.mysql_types import MySQLType, TypeFamily


def test_types_with_parameters_flags_and_members() -> None:
    t = table_from_ddl(
        "CREATE TABLE d.t (a DECIMAL(12,4) UNSIGNED ZEROFILL, b VARCHAR(20) CHARACTER SET binary,"
        " c CHAR(3) BINARY, d ENUM('x','y,z'), e BIT(7), f DATETIME(6), g INT(11) UNSIGNED,"
        " h DOUBLE UNSIGNED, i TIME(3))"
    )
    a, b, c, d, e, f, g, h, i = (col.type for col in t.columns)
    assert (a.base, a.precision, a.scale, a.unsigned, a.zerofill) == (
        MySQLType.DECIMAL, 12, 4, True, True)
    assert b.family is TypeFamily.BLOB
    assert c.family is TypeFamily.TEXT  # CHAR(n) BINARY is a binary collation, not bytes
    assert d.elements == ("x", "y,z")
    assert (e.base, e.bit_width) == (MySQLType.BIT, 7)
    assert (f.base, f.fsp) == (MySQLType.DATETIME, 6)
    assert (g.base, g.unsigned) == (MySQLType.INT, True)
    assert h.base is MySQLType.DOUBLE
    assert i.fsp == 3


def test_mysql_synonyms() -> None:
    t = table_from_ddl("CREATE TABLE d.t (a REAL, `b` DOUBLE PRECISION, c INTEGER, d BOOLEAN,"
                       " e NUMERIC(6,2), f SERIAL)")
    assert [c.type.base for c in t.columns] == [
        MySQLType.DOUBLE, MySQLType.DOUBLE, MySQLType.INT, MySQLType.TINYINT,
        MySQLType.DECIMAL, MySQLType.BIGINT]
    assert t.column("f").type.unsigned and not t.column("f").nullable
    assert [c.name for c in t.key_columns()] == ["f"]


def test_defaults_and_nullability() -> None:
    t = table_from_ddl(
        "CREATE TABLE d.t (a INT NOT NULL DEFAULT -5, b VARCHAR(3) DEFAULT NULL, c BIT(3) DEFAULT"
        " b'101', d TIMESTAMP NULL DEFAULT CURRENT_TIMESTAMP, e VARCHAR(4) DEFAULT 'null',"
        " f TINYINT DEFAULT TRUE, g BLOB DEFAULT X'00FF', h INT)"
    )
    cols = {c.name: c for c in t.columns}
    assert (cols["a"].nullable, cols["a"].default) == (False, "-5")
    assert cols["b"].default is None and cols["b"].nullable
    assert cols["c"].default == 5
    assert cols["d"].default == "CURRENT_TIMESTAMP"
    assert cols["e"].default == "null"
    assert cols["f"].default == "1"
    assert cols["g"].default.encode("utf-8", "surrogateescape") == b"\x00\xff"
    assert cols["h"].default is None


def test_inline_table_level_and_composite_keys() -> None:
    t = table_from_ddl("CREATE TABLE d.t (a INT, b INT, c INT UNIQUE, PRIMARY KEY (b, a))")
    assert [c.name for c in t.key_columns()] == ["a", "b"]
    assert not t.column("a").nullable and not t.column("b").nullable  # PK implies NOT NULL
    t = table_from_ddl("CREATE TABLE d.t (a INT PRIMARY KEY, b INT)")
    assert [c.name for c in t.key_columns()] == ["a"]
    t = table_from_ddl("CREATE TABLE d.t (a INT NOT NULL, CONSTRAINT u1 UNIQUE KEY (a))")
    assert [c.name for c in t.key_columns()] == ["a"]


def test_tidb_extras_are_tolerated() -> None:
    t = table_from_ddl(
        "CREATE TABLE `db`.`t` (\n  id BIGINT NOT NULL AUTO_RANDOM(5, 54),\n"
        "  v INT /*T![auto_rand] AUTO_RANDOM(3) */,\n"
        "  PRIMARY KEY (id) /*T![clustered_index] CLUSTERED */\n"
        ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 /*T! SHARD_ROW_ID_BITS=4 PRE_SPLIT_REGIONS=2 */"
        " SHARD_ROW_ID_BITS=4;"
    )
    assert [c.name for c in t.columns] == ["id", "v"]
    t2 = table_from_ddl("CREATE TABLE d.t (id BIGINT AUTO_RANDOM PRIMARY KEY NONCLUSTERED)")
    assert [c.name for c in t2.key_columns()] == ["id"]


def test_table_charset_binary_makes_text_columns_binary() -> None:
    t = table_from_ddl("CREATE TABLE d.t (a VARCHAR(3), b TEXT) DEFAULT CHARSET=binary")
    assert {c.type.family for c in t.columns} == {TypeFamily.BLOB}


def test_virtual_generated_columns_are_not_replicated() -> None:
    t = table_from_ddl("CREATE TABLE d.t (a INT, b INT AS (a + 1) VIRTUAL,"
                       " c INT AS (a * 2) STORED)")
    assert [c.name for c in t.columns] == ["a", "c"]


def test_schema_option_names_an_unqualified_table() -> None:
    assert table_from_ddl("CREATE TABLE t (a INT)", schema="shop").schema == "shop"
    assert table_from_ddl("CREATE TABLE x.t (a INT)", schema="shop").schema == "x"


@pytest.mark.parametrize("schema", [None, ""])
def test_a_table_without_a_database_is_refused(schema: str | None) -> None:
    with pytest.raises(MissingDatabaseError) as err:
        table_from_ddl("CREATE TABLE t (a INT PRIMARY KEY)", schema=schema)
    assert err.value.code == "missing_database"
    assert err.value.details == {"table": "t"}
    assert err.value.fix == (Fix.DATABASE,)
    assert err.value.to_dict()["fix"] == ["database"]


def test_a_quoted_database_counts() -> None:
    assert table_from_ddl("CREATE TABLE `my db`.`t` (a INT)").schema == "my db"


def test_syntax_error_gives_line_and_column() -> None:
    with pytest.raises(InvalidDDLError) as err:
        table_from_ddl("CREATE TABLE d.t (\n  a INT,\n  b VARCHAR(10) DEFAULT 'x' 'y' ]\n)")
    assert err.value.details["line"] == 3
    assert isinstance(err.value.details["column"], int)
    assert "line 3" in err.value.message


@pytest.mark.parametrize(
    "ddl",
    ["SELECT 1", "CREATE VIEW v AS SELECT 1", "CREATE TABLE t AS SELECT 1",
     "CREATE TABLE a (x INT); CREATE TABLE b (y INT)", "DROP TABLE t", ""],
)
def test_not_a_single_create_table(ddl: str) -> None:
    with pytest.raises(InvalidDDLError) as err:
        table_from_ddl(ddl)
    assert err.value.code == "invalid_ddl"


def test_unsupported_type_names_the_column() -> None:
    with pytest.raises(UnsupportedTypeError) as err:
        table_from_ddl("CREATE TABLE d.t (id INT, g GEOMETRY)")
    assert err.value.details["column"] == "g"


def test_expression_default_is_refused_naming_the_column() -> None:
    with pytest.raises(InvalidTableError) as err:
        table_from_ddl("CREATE TABLE d.t (a INT, u VARCHAR(36) DEFAULT (uuid()))")
    assert err.value.details["column"] == "u"


def test_two_primary_keys_are_refused() -> None:
    with pytest.raises(InvalidTableError):
        table_from_ddl("CREATE TABLE d.t (a INT PRIMARY KEY, b INT, PRIMARY KEY (b))")


def test_the_service_parses_with_sqlglots_compiled_build() -> None:
    """pyproject installs sqlglot[c]: the parser is sqlglotc's compiled module (bench_ddl: 2.3x
    at 4,096 columns), not the pure-Python one."""
    import sqlglot.parser

    assert not sqlglot.parser.__file__.endswith(".py"), sqlglot.parser.__file__
