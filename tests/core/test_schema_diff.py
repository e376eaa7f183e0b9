"""Column-level diffs of flat-avro value schemas generated from CREATE TABLEs."""

from __future__ import annotations

from typing import Any

import pytest

from service.core.ddl import table_from_ddl
from service.core.options import SchemaOptions
from service.core.schema import generate_schemas
from service.core.schema_diff import ChangeKind, FieldChange, describe_type, diff_schemas

ORDERS = ("CREATE TABLE shop.orders (id BIGINT PRIMARY KEY, sku VARCHAR(64) NOT NULL, "
          "price DECIMAL(12,2) NOT NULL, qty INT DEFAULT 1, note TEXT)")
TEXT = {"type": "string", "connect.parameters": {"tidb_type": "TEXT"}}
INT = {"type": "int", "connect.parameters": {"tidb_type": "INT"}}
BIGINT = {"type": "long", "connect.parameters": {"tidb_type": "BIGINT"}}


def value_schema(ddl: str) -> dict[str, Any]:
    return generate_schemas(table_from_ddl(ddl), SchemaOptions()).value_schema


def changes(old_ddl: str, new_ddl: str) -> list[tuple[str, str | None, Any, Any]]:
    return [(c.kind.value, c.column, c.before, c.after)
            for c in diff_schemas(value_schema(old_ddl), value_schema(new_ddl))]


def test_the_same_schema_has_no_changes() -> None:
    assert diff_schemas(value_schema(ORDERS), value_schema(ORDERS)) == []


def test_an_added_column_names_it_with_its_whole_field() -> None:
    [added] = diff_schemas(value_schema(ORDERS),
                           value_schema(ORDERS.replace("note TEXT", "note TEXT, "
                                                       "paid INT NOT NULL")))
    assert added == FieldChange(
        ChangeKind.ADDED, "paid", None, {"name": "paid", "type": INT},
        "column `paid` was added: int [INT], NOT NULL, no default")


def test_a_removed_column() -> None:
    [removed] = diff_schemas(value_schema(ORDERS),
                             value_schema(ORDERS.replace(", note TEXT", "")))
    assert removed == FieldChange(
        ChangeKind.REMOVED, "note", {"default": None, "name": "note", "type": ["null", TEXT]},
        None, "column `note` was removed (it was string [TEXT], nullable, default null)")


def test_a_type_change_compares_the_non_null_branch() -> None:
    [changed] = diff_schemas(value_schema(ORDERS),
                             value_schema(ORDERS.replace("qty INT", "qty BIGINT")))
    assert changed == FieldChange(ChangeKind.TYPE_CHANGED, "qty", INT, BIGINT,
                                  "column `qty`: type int [INT] -> long [BIGINT]")


def test_a_changed_default_and_a_dropped_one() -> None:
    assert changes(ORDERS, ORDERS.replace("DEFAULT 1", "DEFAULT 2")) == [
        ("default_changed", "qty", {"default": 1}, {"default": 2})]
    [dropped] = diff_schemas(value_schema(ORDERS),
                             value_schema(ORDERS.replace("qty INT DEFAULT 1", "qty INT")))
    # DEFAULT 1 puts the int branch first; without it, null comes first: same column type
    assert (dropped.kind, dropped.column, dropped.message) == (
        ChangeKind.DEFAULT_CHANGED, "qty", "column `qty`: default 1 -> default null")


def test_not_null_to_nullable_is_two_changes_of_one_column() -> None:
    assert changes(ORDERS, ORDERS.replace("sku VARCHAR(64) NOT NULL", "sku VARCHAR(64)")) == [
        ("nullability_changed", "sku", False, True),
        ("default_changed", "sku", None, {"default": None})]
    made_strict = diff_schemas(value_schema(ORDERS),
                               value_schema(ORDERS.replace("note TEXT", "note TEXT NOT NULL")))
    assert [c.message for c in made_strict] == [
        "column `note` became NOT NULL", "column `note`: default null -> no default"]


def test_several_changes_come_in_field_order_then_the_added_ones() -> None:
    new = ("CREATE TABLE shop.orders (id BIGINT PRIMARY KEY, code VARCHAR(8) NOT NULL, "
           "price DECIMAL(14,2) NOT NULL, qty INT DEFAULT 1, note TEXT, total INT)")
    assert [(c.kind.value, c.column) for c in
            diff_schemas(value_schema(ORDERS), value_schema(new))] == [
        ("removed", "sku"), ("type_changed", "price"), ("added", "code"), ("added", "total")]


def test_a_decimal_precision_change_reads_in_its_message() -> None:
    [changed] = diff_schemas(value_schema(ORDERS),
                             value_schema(ORDERS.replace("12,2", "14,2")))
    assert changed.message == ("column `price`: type bytes decimal(12,2) [DECIMAL] -> "
                               "bytes decimal(14,2) [DECIMAL]")


def test_an_enum_member_change_shows_the_parameters_that_differ() -> None:
    [changed] = diff_schemas(
        value_schema("CREATE TABLE s.t (id INT PRIMARY KEY, e ENUM('a','b'))"),
        value_schema("CREATE TABLE s.t (id INT PRIMARY KEY, e ENUM('a','b','c'))"))
    assert (changed.kind, changed.column) == (ChangeKind.TYPE_CHANGED, "e")
    assert changed.message == (
        'column `e`: type {"connect.parameters":{"allowed":"a,b","tidb_type":"ENUM"},'
        '"type":"string"} -> {"connect.parameters":{"allowed":"a,b,c","tidb_type":"ENUM"},'
        '"type":"string"}')


def test_a_renamed_record_is_a_schema_change() -> None:
    [renamed] = diff_schemas(value_schema(ORDERS),
                             value_schema(ORDERS.replace("shop.orders", "shop.refunds")))
    assert (renamed.kind, renamed.column, renamed.before, renamed.after) == (
        ChangeKind.SCHEMA_CHANGED, None, "default.shop.orders", "default.shop.refunds")


@pytest.mark.parametrize(("old", "new", "expected"), [
    ("string", "string", []),
    ({"type": "string"}, {"type": "string"}, []),
    ("string", "long", [(ChangeKind.SCHEMA_CHANGED, "the schema changed from string to long")]),
    ({"type": "record", "name": "r", "fields": []}, "int",
     [(ChangeKind.SCHEMA_CHANGED, "the schema changed from record r to int")]),
])
def test_schemas_that_are_not_two_records(old: Any, new: Any,
                                          expected: list[tuple[ChangeKind, str]]) -> None:
    assert [(c.kind, c.message) for c in diff_schemas(old, new)] == expected


def test_a_true_default_differs_from_a_one() -> None:
    old = {"type": "record", "name": "r", "fields": [{"name": "f", "type": "int", "default": 1}]}
    new = {"type": "record", "name": "r",
           "fields": [{"name": "f", "type": "int", "default": True}]}
    assert [(c.before, c.after) for c in diff_schemas(old, new)] == [
        ({"default": 1}, {"default": True})]


@pytest.mark.parametrize(("avro_type", "text"), [
    ("long", "long"),
    (["null", "string"], "null | string"),
    ({"type": "array", "items": "int"}, "array<int>"),
    ({"type": "map", "values": {"type": "long", "logicalType": "timestamp-millis"}},
     "map<long timestamp-millis>"),
    ({"type": "enum", "name": "color", "symbols": ["r"]}, "enum color"),
    ({"type": "bytes", "logicalType": "decimal", "precision": 5}, "bytes decimal(5,0)"),
])
def test_describe_type(avro_type: Any, text: str) -> None:
    assert describe_type(avro_type) == text
