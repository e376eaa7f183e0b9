"""docs/flat-avro.md §2–§4, row by row: names, key choice, type mapping, nullability, defaults."""

from __future__ import annotations

from typing import Any

import pytest

from service.core.ddl import table_from_ddl
from service.core.errors import InvalidDefaultError, NameCollisionError
from service.core.mysql_types import MySQLType
from service.core.options import SchemaOptions
from service.core.schema import EXTENSION_FIELDS, generate_schemas
from service.core.table import Column, ColumnType, Table

STRING_MODES = SchemaOptions.from_strings(
    decimal_handling_mode="string", bigint_unsigned_handling_mode="string"
)


def field(column_ddl: str, options: SchemaOptions | None = None) -> dict[str, Any]:
    """The value-schema field generated for one column definition."""
    table = table_from_ddl(f"CREATE TABLE db.t ({column_ddl})")
    return generate_schemas(table, options or SchemaOptions()).value_schema["fields"][0]


def col_type(column_ddl: str, options: SchemaOptions | None = None) -> Any:
    return field(f"c {column_ddl} NOT NULL", options)["type"]


# §4: one row per line of the type table.
TYPE_ROWS = [
    ("TINYINT", "int", "INT"), ("BOOL", "int", "INT"), ("SMALLINT", "int", "INT"),
    ("MEDIUMINT", "int", "INT"), ("INT", "int", "INT"),
    ("TINYINT UNSIGNED", "int", "INT UNSIGNED"), ("SMALLINT UNSIGNED", "int", "INT UNSIGNED"),
    ("MEDIUMINT UNSIGNED", "int", "INT UNSIGNED"), ("INT UNSIGNED", "long", "INT UNSIGNED"),
    ("BIGINT", "long", "BIGINT"), ("BIGINT UNSIGNED", "long", "BIGINT UNSIGNED"),
    ("FLOAT", "float", "FLOAT"), ("DOUBLE", "double", "DOUBLE"),
    ("CHAR(3)", "string", "TEXT"), ("VARCHAR(3)", "string", "TEXT"),
    ("TINYTEXT", "string", "TEXT"), ("TEXT", "string", "TEXT"),
    ("MEDIUMTEXT", "string", "TEXT"), ("LONGTEXT", "string", "TEXT"),
    ("BINARY(3)", "bytes", "BLOB"), ("VARBINARY(3)", "bytes", "BLOB"),
    ("TINYBLOB", "bytes", "BLOB"), ("BLOB", "bytes", "BLOB"), ("MEDIUMBLOB", "bytes", "BLOB"),
    ("LONGBLOB", "bytes", "BLOB"), ("TEXT CHARACTER SET binary", "bytes", "BLOB"),
    ("JSON", "string", "JSON"), ("DATE", "string", "DATE"), ("DATETIME", "string", "DATETIME"),
    ("TIMESTAMP", "string", "TIMESTAMP"), ("TIME", "string", "TIME"), ("YEAR", "int", "YEAR"),
    ("VECTOR(3)", "string", "TiDBVECTORFloat32"), ("FLOAT UNSIGNED", "float", "FLOAT"),
    ("DECIMAL(5,2) UNSIGNED", "string", "DECIMAL"),
]


@pytest.mark.parametrize(("sql", "avro", "tidb"), TYPE_ROWS)
def test_type_mapping_rows(sql: str, avro: str, tidb: str) -> None:
    options = STRING_MODES if sql.startswith("DECIMAL") else SchemaOptions()
    assert col_type(sql, options) == {"type": avro, "connect.parameters": {"tidb_type": tidb}}


def test_bigint_unsigned_string_mode() -> None:
    assert col_type("BIGINT UNSIGNED", STRING_MODES)["type"] == "string"


@pytest.mark.parametrize(("sql", "precision", "scale"),
                         [("DECIMAL(12,6)", 12, 6), ("DECIMAL", 10, 0), ("DECIMAL(65,30)", 65, 30),
                          ("NUMERIC(5)", 5, 0)])
def test_decimal_precise_is_a_logical_type(sql: str, precision: int, scale: int) -> None:
    assert col_type(sql) == {
        "type": "bytes", "connect.parameters": {"tidb_type": "DECIMAL"},
        "logicalType": "decimal", "precision": precision, "scale": scale,
    }
    assert col_type(sql, STRING_MODES) == {"type": "string",
                                           "connect.parameters": {"tidb_type": "DECIMAL"}}


def test_bit_carries_its_length_as_a_string() -> None:
    assert col_type("BIT(10)") == {"type": "bytes",
                                   "connect.parameters": {"length": "10", "tidb_type": "BIT"}}
    assert col_type("BIT")["connect.parameters"]["length"] == "1"


def test_enum_and_set_allowed_escapes_commas() -> None:
    assert col_type("ENUM('a','b,c','d')")["connect.parameters"] == {
        "allowed": "a,b\\,c,d", "tidb_type": "ENUM"}
    assert col_type("SET('x','y')")["connect.parameters"] == {"allowed": "x,y", "tidb_type": "SET"}


# §5: nullability and defaults.
def test_nullable_without_default_puts_null_first() -> None:
    f = field("c INT")
    assert f == {"default": None, "name": "c", "type": ["null", f["type"][1]]}
    assert list(f) == ["default", "name", "type"]
    assert field("c INT DEFAULT NULL") == f


def test_nullable_with_default_puts_type_first() -> None:
    f = field("c INT DEFAULT 7")
    assert f["default"] == 7 and f["type"][1] == "null" and f["type"][0]["type"] == "int"


def test_not_null_has_default_key_only_with_a_default() -> None:
    assert "default" not in field("c INT NOT NULL")
    assert field("c INT NOT NULL DEFAULT 3")["default"] == 3


def test_precise_decimal_never_carries_its_default() -> None:
    nullable = field("c DECIMAL(5,2) DEFAULT 1.5")
    assert nullable["default"] is None and nullable["type"][0] == "null"
    assert "default" not in field("c DECIMAL(5,2) NOT NULL DEFAULT 1.5")
    # String mode: TiDB's stored text, not padded (tests/core/test_decimal_defaults.py).
    assert field("c DECIMAL(5,2) DEFAULT 1.5", STRING_MODES)["default"] == "1.5"


@pytest.mark.parametrize(
    ("column", "default", "options"),
    [
        ("c FLOAT DEFAULT 3.14", 3.140000104904175, None),
        ("c DOUBLE DEFAULT 2.5", 2.5, None),
        ("c BIGINT UNSIGNED DEFAULT 18446744073709551615", -1, None),
        ("c BIGINT UNSIGNED DEFAULT 18446744073709551615", "18446744073709551615", STRING_MODES),
        ("c INT UNSIGNED DEFAULT 4294967295", 4294967295, None),
        ("c VARCHAR(5) DEFAULT 'null'", "null", None),
        ("c DATETIME DEFAULT now()", "CURRENT_TIMESTAMP", None),
        ("c TIMESTAMP(3) DEFAULT CURRENT_TIMESTAMP(3)", "CURRENT_TIMESTAMP", None),
        ("c DATETIME DEFAULT '2020-01-02'", "2020-01-02 00:00:00", None),
        ("c BIT(10) DEFAULT b'1010101010'", "Aqo=", None),
        ("c BIT(16) DEFAULT b'1'", "AAE=", None),
        ("c VARBINARY(4) DEFAULT X'FF00'", "/wA=", None),
        ("c BINARY(3) DEFAULT 'a'", "YQAA", None),
        ("c BLOB DEFAULT 'ab'", "YWI=", None),
        ("c SET('a','b') DEFAULT 'b,a'", "a,b", None),
        ("c ENUM('a','b') DEFAULT 'b'", "b", None),
        ("c YEAR DEFAULT 2023", 2023, None),
        ("c TINYINT DEFAULT TRUE", 1, None),
        ("c TIME(2) DEFAULT '-838:59:59'", "-838:59:59.00", None),
    ],
)
def test_default_conversion(column: str, default: Any, options: SchemaOptions | None) -> None:
    assert field(column, options)["default"] == default


@pytest.mark.parametrize(
    "column",
    [
        "c INT DEFAULT 'abc'", "c TINYINT DEFAULT 300", "c INT UNSIGNED DEFAULT -1",
        "c DECIMAL(4,2) DEFAULT 123.45", "c DECIMAL(4,2) DEFAULT 99.995",
        "c ENUM('a','b') DEFAULT 'z'", "c SET('a') DEFAULT 'a,q'", "c BIT(3) DEFAULT 9",
        "c DATE DEFAULT '2021-02-30'", "c DATETIME DEFAULT 'yesterday'", "c YEAR DEFAULT 1800",
        "c VARCHAR(2) DEFAULT 'abc'", "c FLOAT DEFAULT 1e39", "c TIME DEFAULT '839:00:00'",
        "c DATETIME(0) DEFAULT '2020-01-01 00:00:00.5'",
    ],
)
def test_default_that_is_not_a_value_of_its_type_is_refused(column: str) -> None:
    with pytest.raises(InvalidDefaultError) as err:
        field(column)
    assert err.value.details["column"] == "c"


# §2: names.
def test_record_name_namespace_and_field_names_are_sanitized() -> None:
    table = table_from_ddl("CREATE TABLE `2db.x`.`t-1` (`a.b` INT, `中文` INT, `9z` INT)")
    value = generate_schemas(table, SchemaOptions(namespace="my-ns")).value_schema
    assert (value["name"], value["namespace"]) == ("t_1", "my_ns._2db_x")
    assert [f["name"] for f in value["fields"]] == ["a_b", "__", "_9z"]


def test_namespace_without_schema_is_the_first_part_only() -> None:
    # A CREATE TABLE must name its database; a Table built by hand still may not.
    table = Table("", "t", (Column("a", ColumnType(MySQLType.INT)),))
    assert generate_schemas(table).value_schema["namespace"] == "default"


def test_columns_sanitizing_to_one_name_are_refused_naming_both() -> None:
    table = table_from_ddl("CREATE TABLE db.t (`a.b` INT, `a-b` INT)")
    with pytest.raises(NameCollisionError) as err:
        generate_schemas(table)
    assert err.value.code == "avro_name_collision"
    assert {err.value.details["column"], err.value.details["other"]} == {"a.b", "a-b"}


def test_column_colliding_with_an_extension_field_is_refused() -> None:
    table = table_from_ddl("CREATE TABLE db.t (_tidb_op INT)")
    generate_schemas(table)  # fine without the extension
    with pytest.raises(NameCollisionError):
        generate_schemas(table, SchemaOptions(enable_tidb_extension=True))


# §3: key columns.
@pytest.mark.parametrize(
    ("ddl", "key"),
    [
        ("CREATE TABLE db.t (b INT, a INT, PRIMARY KEY (a, b))", ("b", "a")),  # table order
        ("CREATE TABLE db.t (a INT PRIMARY KEY, b INT NOT NULL UNIQUE)", ("a",)),
        ("CREATE TABLE db.t (a INT NOT NULL, b INT NOT NULL, c INT NOT NULL,"
         " UNIQUE KEY (a, b), UNIQUE KEY (c))", ("c",)),
        ("CREATE TABLE db.t (a INT NOT NULL, b INT NOT NULL, UNIQUE KEY (b), UNIQUE KEY (a))",
         ("b",)),
        ("CREATE TABLE db.t (a INT, b INT NOT NULL, UNIQUE KEY (a))", ()),
        ("CREATE TABLE db.t (a INT, KEY (a))", ()),
    ],
)
def test_key_columns(ddl: str, key: tuple[str, ...]) -> None:
    pair = generate_schemas(table_from_ddl(ddl))
    assert pair.key_columns == key
    if key:
        assert pair.key_schema is not None
        assert [f["name"] for f in pair.key_schema["fields"]] == list(key)
    else:
        assert pair.key_schema is None


# §6: extension fields.
def test_extension_fields_follow_all_columns_in_value_only() -> None:
    table = table_from_ddl("CREATE TABLE db.t (id INT PRIMARY KEY, v TEXT)")
    pair = generate_schemas(table, SchemaOptions(enable_tidb_extension=True))
    assert pair.value_schema["fields"][-3:] == [
        {"default": "", "name": "_tidb_op", "type": "string"},
        {"default": 0, "name": "_tidb_commit_ts", "type": "long"},
        {"default": 0, "name": "_tidb_commit_physical_time", "type": "long"},
    ]
    assert list(EXTENSION_FIELDS) == pair.value_schema["fields"][-3:]
    assert pair.key_schema is not None and len(pair.key_schema["fields"]) == 1
