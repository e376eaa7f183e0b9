"""TiCDC Simple-protocol TableSchema JSON into the table model, and its bad inputs."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from service.core.errors import (
    DuplicateColumnError,
    InvalidTableError,
    MissingDatabaseError,
    UnsupportedTypeError,
)
from service.core.mysql_types import MySQLType
from service.core.table_json import table_from_json, table_from_json_text

SEED_TABLE: dict[str, Any] = {  # the TableSchema example of TiCDC's Simple protocol document
    "schema": "simple", "table": "user", "tableID": 148, "version": 447984074911121426,
    "columns": [
        {"name": "id", "dataType": {"mysqlType": "int", "charset": "binary",
                                    "collate": "binary", "length": 11},
         "nullable": False, "default": None},
        {"name": "name", "dataType": {"mysqlType": "varchar", "charset": "utf8mb4",
                                      "collate": "utf8mb4_bin", "length": 255},
         "nullable": True, "default": None},
        {"name": "age", "dataType": {"mysqlType": "int", "charset": "binary",
                                     "collate": "binary", "length": 11},
         "nullable": True, "default": None},
        {"name": "score", "dataType": {"mysqlType": "float", "charset": "binary",
                                       "collate": "binary", "length": 12},
         "nullable": True, "default": None},
    ],
    "indexes": [{"name": "primary", "unique": True, "primary": True, "nullable": False,
                 "columns": ["id"]}],
}


def with_column(**data_type: Any) -> dict[str, Any]:
    doc = copy.deepcopy(SEED_TABLE)
    doc["columns"][1]["dataType"] = {"charset": "binary", "collate": "binary", **data_type}
    return doc


def test_seed_example_parses() -> None:
    table = table_from_json(SEED_TABLE)
    assert (table.schema, table.table, table.table_id) == ("simple", "user", 148)
    assert [c.name for c in table.columns] == ["id", "name", "age", "score"]
    assert table.columns[1].type.base is MySQLType.VARCHAR
    assert [c.name for c in table.key_columns()] == ["id"]


@pytest.mark.parametrize(
    ("data_type", "unsigned", "base"),
    [
        ({"mysqlType": "int unsigned"}, True, MySQLType.INT),
        ({"mysqlType": "int", "unsigned": True}, True, MySQLType.INT),
        ({"mysqlType": "INT UNSIGNED ZEROFILL"}, True, MySQLType.INT),
        ({"mysqlType": "tinyint", "zerofill": True}, True, MySQLType.TINYINT),
        ({"mysqlType": "var_string"}, False, MySQLType.VARCHAR),
        ({"mysqlType": "vector"}, False, MySQLType.VECTOR),
    ],
)
def test_mysql_type_spellings(data_type: dict[str, Any], unsigned: bool, base: MySQLType) -> None:
    column = table_from_json(with_column(**data_type)).columns[1]
    assert (column.type.base, column.type.unsigned) == (base, unsigned)


def test_type_parameters_in_the_type_string_and_in_fields() -> None:
    a = table_from_json(with_column(mysqlType="decimal(10, 4)")).columns[1].type
    b = table_from_json(with_column(mysqlType="decimal", length=10, decimal=4)).columns[1].type
    assert (a.precision, a.scale) == (b.precision, b.scale) == (10, 4)
    e = table_from_json(with_column(mysqlType="enum('a','b''c','d\\,e')")).columns[1].type
    assert e.elements == ("a", "b'c", "d,e")
    s = table_from_json(with_column(mysqlType="set", elements=["x", "y"])).columns[1].type
    assert s.elements == ("x", "y")


def test_unspecified_length_is_minus_one() -> None:
    t = table_from_json(with_column(mysqlType="decimal", length=-1, decimal=-1)).columns[1].type
    assert (t.precision, t.scale) == (10, 0)


def test_binary_charset_makes_text_binary() -> None:
    from service.core.mysql_types import TypeFamily
    t = table_from_json(with_column(mysqlType="varchar", charset="binary")).columns[1].type
    assert t.family is TypeFamily.BLOB


@pytest.mark.parametrize(
    ("mutate", "error", "column"),
    [
        (lambda d: d["columns"][1]["dataType"].update(mysqlType="geometry"),
         UnsupportedTypeError, "name"),
        (lambda d: d["columns"][1]["dataType"].update(mysqlType="hyperint"),
         UnsupportedTypeError, "name"),
        (lambda d: d["columns"][1]["dataType"].update(mysqlType="decimal", length=66),
         InvalidTableError, "name"),
        (lambda d: d["columns"][1]["dataType"].update(mysqlType="decimal", length=40,
                                                      decimal=31), InvalidTableError, "name"),
        (lambda d: d["columns"][1]["dataType"].update(mysqlType="decimal", length=5, decimal=6),
         InvalidTableError, "name"),
        (lambda d: d["columns"][1]["dataType"].update(mysqlType="enum"),
         InvalidTableError, "name"),
        (lambda d: d["columns"][1]["dataType"].update(mysqlType="set", elements=[]),
         InvalidTableError, "name"),
        (lambda d: d["columns"][1]["dataType"].update(mysqlType="bit", length=65),
         InvalidTableError, "name"),
        (lambda d: d["columns"][2].update(name="name"), DuplicateColumnError, "name"),
        (lambda d: d["indexes"][0].update(columns=["nope"]), InvalidTableError, "nope"),
    ],
)
def test_bad_table_definitions_name_the_column(mutate: Any, error: type, column: str) -> None:
    doc = copy.deepcopy(SEED_TABLE)
    mutate(doc)
    with pytest.raises(error) as err:
        table_from_json(doc)
    assert err.value.details["column"] == column
    assert column in err.value.message


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda d: d["columns"][1].pop("name"), "columns/1/name"),
        (lambda d: d.pop("table"), "table"),
        (lambda d: d["columns"][0]["dataType"].pop("mysqlType"), "columns/0/dataType/mysqlType"),
        (lambda d: d["columns"][0].update(nullable="maybe"), "columns/0/nullable"),
    ],
)
def test_missing_or_mistyped_fields_name_their_json_path(mutate: Any, field: str) -> None:
    doc = copy.deepcopy(SEED_TABLE)
    mutate(doc)
    with pytest.raises(InvalidTableError) as err:
        table_from_json(doc)
    assert err.value.details["field"] == field
    assert err.value.code == "invalid_table"


def test_empty_names_are_refused() -> None:
    doc = copy.deepcopy(SEED_TABLE)
    doc["columns"][2]["name"] = ""
    with pytest.raises(InvalidTableError) as err:
        table_from_json(doc)
    assert err.value.details["field"] == "columns/2/name"
    doc = copy.deepcopy(SEED_TABLE)
    doc["table"] = ""
    with pytest.raises(InvalidTableError):
        table_from_json(doc)


def test_bad_default_is_reported_when_generating() -> None:
    from service.core.errors import InvalidDefaultError
    from service.core.schema import generate_schemas
    doc = copy.deepcopy(SEED_TABLE)
    doc["columns"][2]["default"] = "twelve"
    with pytest.raises(InvalidDefaultError) as err:
        generate_schemas(table_from_json(doc))
    assert err.value.details["column"] == "age"


def test_not_json_gives_the_position() -> None:
    with pytest.raises(InvalidTableError) as err:
        table_from_json_text('{"schema": "a",, }')
    assert err.value.details["position"] == 15


def test_an_empty_schema_is_refused_naming_the_field() -> None:
    doc = dict(SEED_TABLE, schema="")
    with pytest.raises(MissingDatabaseError) as err:
        table_from_json(doc)
    assert err.value.code == "missing_database"
    assert err.value.details == {"field": "schema", "table": "user"}
