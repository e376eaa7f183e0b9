"""`apply_ddl`: each DDL kind TiCDC carries, applied to a table, equals the table that the
equivalent ``CREATE TABLE`` (what ``SHOW CREATE TABLE`` would print after it) defines; the
statements TiDB refuses, or that this module does not follow, are refused with the table, the
statement and why."""

from __future__ import annotations

import pytest

from service.core.alter import DDLChange, UnappliedDDLError, apply_ddl
from service.core.ddl import table_from_ddl

BASE = ("CREATE TABLE shop.items (id INT PRIMARY KEY, name VARCHAR(20), "
        "price DECIMAL(8,2) NOT NULL DEFAULT 1.5, UNIQUE KEY uk_name (name))")


def after(*statements: str) -> object:
    table = table_from_ddl(BASE)
    for statement in statements:
        table = apply_ddl(table, statement, schema="shop", table=table.table).table
    return table


@pytest.mark.parametrize(("statement", "equivalent"), [
    ("ALTER TABLE items ADD COLUMN qty INT NOT NULL DEFAULT 7",
     "id INT PRIMARY KEY, name VARCHAR(20), price DECIMAL(8,2) NOT NULL DEFAULT 1.5, "
     "qty INT NOT NULL DEFAULT 7, UNIQUE KEY uk_name (name)"),
    ("ALTER TABLE `shop`.`items` ADD COLUMN note VARCHAR(8) NULL DEFAULT 'x' AFTER id",
     "id INT PRIMARY KEY, note VARCHAR(8) NULL DEFAULT 'x', name VARCHAR(20), "
     "price DECIMAL(8,2) NOT NULL DEFAULT 1.5, UNIQUE KEY uk_name (name)"),
    ("ALTER TABLE items ADD COLUMN a BIGINT FIRST, ADD b TEXT",
     "a BIGINT, id INT PRIMARY KEY, name VARCHAR(20), price DECIMAL(8,2) NOT NULL "
     "DEFAULT 1.5, b TEXT, UNIQUE KEY uk_name (name)"),
    ("ALTER TABLE items DROP COLUMN price",
     "id INT PRIMARY KEY, name VARCHAR(20), UNIQUE KEY uk_name (name)"),
    ("ALTER TABLE items DROP COLUMN name", "id INT PRIMARY KEY, price DECIMAL(8,2) NOT NULL "
                                           "DEFAULT 1.5"),
    ("ALTER TABLE items MODIFY COLUMN name VARCHAR(40) NOT NULL",
     "id INT PRIMARY KEY, name VARCHAR(40) NOT NULL, price DECIMAL(8,2) NOT NULL DEFAULT 1.5, "
     "UNIQUE KEY uk_name (name)"),
    ("ALTER TABLE items MODIFY price DECIMAL(10,2) NULL FIRST",
     "price DECIMAL(10,2) NULL, id INT PRIMARY KEY, name VARCHAR(20), "
     "UNIQUE KEY uk_name (name)"),
    ("ALTER TABLE items CHANGE COLUMN name title VARCHAR(20) AFTER price",
     "id INT PRIMARY KEY, price DECIMAL(8,2) NOT NULL DEFAULT 1.5, title VARCHAR(20), "
     "UNIQUE KEY uk_name (title)"),
    ("ALTER TABLE items RENAME COLUMN name TO title",
     "id INT PRIMARY KEY, title VARCHAR(20), price DECIMAL(8,2) NOT NULL DEFAULT 1.5, "
     "UNIQUE KEY uk_name (title)"),
    ("ALTER TABLE items ALTER COLUMN price SET DEFAULT 2.25",
     "id INT PRIMARY KEY, name VARCHAR(20), price DECIMAL(8,2) NOT NULL DEFAULT 2.25, "
     "UNIQUE KEY uk_name (name)"),
    ("ALTER TABLE items ALTER COLUMN price DROP DEFAULT",
     "id INT PRIMARY KEY, name VARCHAR(20), price DECIMAL(8,2) NOT NULL, "
     "UNIQUE KEY uk_name (name)"),
    ("ALTER TABLE items DROP INDEX uk_name",
     "id INT PRIMARY KEY, name VARCHAR(20), price DECIMAL(8,2) NOT NULL DEFAULT 1.5"),
    ("ALTER TABLE items ADD UNIQUE INDEX uk_price (price)",
     "id INT PRIMARY KEY, name VARCHAR(20), price DECIMAL(8,2) NOT NULL DEFAULT 1.5, "
     "UNIQUE KEY uk_name (name), UNIQUE KEY uk_price (price)"),
    ("ALTER TABLE items DROP PRIMARY KEY",
     "id INT NOT NULL, name VARCHAR(20), price DECIMAL(8,2) NOT NULL DEFAULT 1.5, "
     "UNIQUE KEY uk_name (name)"),
], ids=lambda s: s[:48])
def test_each_statement_gives_the_table_its_create_table_would(statement: str,
                                                              equivalent: str) -> None:
    assert after(statement) == table_from_ddl(f"CREATE TABLE shop.items ({equivalent})")


def test_a_new_primary_key_makes_its_columns_not_null_and_keys_the_table() -> None:
    table = after("ALTER TABLE items DROP PRIMARY KEY",
                  "ALTER TABLE items ADD PRIMARY KEY (id, price)")
    assert [c.name for c in table.key_columns()] == ["id", "price"]  # type: ignore[attr-defined]
    assert table == table_from_ddl(
        "CREATE TABLE shop.items (id INT NOT NULL, name VARCHAR(20), price DECIMAL(8,2) NOT "
        "NULL DEFAULT 1.5, UNIQUE KEY uk_name (name), PRIMARY KEY (id, price))")


@pytest.mark.parametrize("statement", [
    "ALTER TABLE items ADD INDEX ix_price (price)", "ALTER TABLE items COMMENT 'items'",
    "TRUNCATE TABLE items", "CREATE INDEX ix ON items (price)", "DROP INDEX ix ON items",
])
def test_statements_that_do_not_touch_the_avro_schema_change_nothing(statement: str) -> None:
    table = table_from_ddl(BASE)
    outcome = apply_ddl(table, statement, schema="shop", table="items")
    assert outcome.change is DDLChange.UNCHANGED and outcome.table == table


def test_create_drop_and_renames() -> None:
    created = apply_ddl(None, "CREATE TABLE items (id INT PRIMARY KEY)", schema="shop")
    assert created.change is DDLChange.CREATED
    assert created.table == table_from_ddl("CREATE TABLE shop.items (id INT PRIMARY KEY)")
    assert apply_ddl(created.table, "DROP TABLE items", schema="shop").table is None
    for statement in ("ALTER TABLE items RENAME TO shop2.goods",
                      "RENAME TABLE `shop`.`items` TO `shop2`.`goods`",
                      "RENAME TABLE other TO x, items TO shop2.goods"):
        moved = apply_ddl(created.table, statement, schema="shop", table="items")
        assert moved.change is DDLChange.RENAMED, statement
        assert moved.renamed_from == ("shop", "items")
        assert moved.table is not None
        assert (moved.table.schema, moved.table.table) == ("shop2", "goods")
        assert moved.table.columns == created.table.columns  # type: ignore[union-attr]


@pytest.mark.parametrize("statement", [
    # TiDB's own syntax, as TiCDC carries it in DDL events (tiflow v9.0.0-beta.2.pre vectors)
    "CREATE TABLE fa.t_cpk (a INT, b VARCHAR(8), v INT, PRIMARY KEY (a, b) NONCLUSTERED)",
    "CREATE TABLE fa.t_cpk (a INT, b VARCHAR(8), v INT, PRIMARY KEY (a, b) CLUSTERED)",
    "CREATE TABLE fa.t_num (id INT PRIMARY KEY, d_u DECIMAL(10,4) UNSIGNED, f FLOAT, "
    "f7_3 FLOAT(7,3), f_u FLOAT UNSIGNED, db DOUBLE, db10_2 DOUBLE(10,2), rl REAL)",
])
def test_a_create_table_with_tidb_syntax_is_followed_as_its_ddl_registers(statement: str
                                                                         ) -> None:
    created = apply_ddl(None, statement, schema="fa")
    assert created.change is DDLChange.CREATED
    assert created.table == table_from_ddl(statement)


@pytest.mark.parametrize(("statement", "why"), [
    ("ALTER TABLE items DROP COLUMN id", "column `id` is part of the PRIMARY KEY"),
    ("ALTER TABLE items ADD COLUMN name INT", "column `name` already exists"),
    ("ALTER TABLE items DROP COLUMN nope", "column `nope` does not exist"),
    ("ALTER TABLE items ADD COLUMN x INT AFTER nope", "column `nope` does not exist"),
    ("ALTER TABLE items ADD PRIMARY KEY (name)", "already has a PRIMARY KEY"),
    ("ALTER TABLE items PARTITION BY HASH(id) PARTITIONS 4", "are not followed"),
    ("ALTER TABLE items ADD COLUMN (", "does not parse at line 1, column 30: Required keyword"),
    ("RENAME TABLE a TO b", "does not rename this table"),
])
def test_what_cannot_be_applied_is_named(statement: str, why: str) -> None:
    with pytest.raises(UnappliedDDLError) as err:
        apply_ddl(table_from_ddl(BASE), statement, schema="shop", table="items")
    assert err.value.message.startswith(f"table `shop`.`items`: cannot apply `{statement}`: ")
    assert why in err.value.message


def test_an_alter_of_an_unknown_table_is_named() -> None:
    with pytest.raises(UnappliedDDLError, match="the table's definition is unknown"):
        apply_ddl(None, "ALTER TABLE x ADD COLUMN a INT", schema="shop", table="x")
