"""A Simple-protocol ``tableSchema`` DECIMAL default is TiDB's stored text: kept as given."""

from __future__ import annotations

from typing import Any

import pytest

from service.cdc.simple.columns import parse_table_schema
from service.core.errors import InvalidDefaultError
from service.core.options import SchemaOptions
from service.core.schema import generate_schemas

STRING = SchemaOptions.from_strings(decimal_handling_mode="string")


def table_schema(default: Any, nullable: bool) -> dict[str, Any]:
    """What TiCDC's Simple encoder sends for `c DECIMAL(10,4) [NOT NULL] DEFAULT ...`."""
    return {"schema": "db", "table": "t", "tableID": 1, "version": 7,
            "columns": [{"name": "id", "dataType": {"mysqlType": "int", "charset": "binary",
                                                    "collate": "binary", "length": 11},
                         "nullable": False, "default": None},
                        {"name": "c", "dataType": {"mysqlType": "decimal", "charset": "binary",
                                                   "collate": "binary", "length": 10,
                                                   "decimal": 4},
                         "nullable": nullable, "default": default}],
            "indexes": [{"name": "primary", "unique": True, "primary": True, "nullable": False,
                         "columns": ["id"]}]}


@pytest.mark.parametrize(("default", "nullable"),
                         [("3.14", False), ("1.5", True), ("3.14159", True), ("100", False)])
def test_table_schema_decimal_default_is_written_as_given(default: str, nullable: bool) -> None:
    definition = parse_table_schema(table_schema(default, nullable), "tableSchema")
    value = generate_schemas(definition.to_table(STRING), STRING).value_schema
    assert value["fields"][1]["default"] == default


def test_table_schema_decimal_default_out_of_range_is_refused() -> None:
    definition = parse_table_schema(table_schema("1234567", False), "tableSchema")
    with pytest.raises(InvalidDefaultError) as err:
        generate_schemas(definition.to_table(STRING), STRING)
    assert err.value.details["column"] == "c"
