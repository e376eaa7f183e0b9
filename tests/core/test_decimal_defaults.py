"""DECIMAL defaults in decimal string mode are TiDB's stored default text, unchanged.

TiCDC's avro sink (tiflow v8.3.0 pkg/sink/codec/avro/avro.go, columns2AvroSchema ->
columnToAvroData) writes a string-mode DECIMAL default as ``col.Value.(string)``, the column's
``ColumnInfo.DefaultValue`` as TiDB stored it. What TiDB v8 stores (pingcap/tidb, pkg/ddl
add_column.go / ddl_api.go):

- ``getDefaultValue`` evaluates the literal (``expression.EvalSimpleAst``) and keeps
  ``Datum.ToString()`` of it; integer and float columns are converted to the column type first
  (``v.ConvertTo``), DECIMAL is not, so the scale is never applied. The literal's datum: a
  decimal literal is a MyDecimal (written fractional digits kept, leading zeros dropped,
  ``MyDecimal.String``), an integer literal an int64, a literal with an exponent a float64
  (``strconv.FormatFloat(f, 'f', -1, 64)``), a quoted string the string itself. ``+`` is
  dropped (expression rewriter: "expression (+ a) is equal to a"), ``-`` negates, and
  ``types.DecimalNeg`` leaves a zero unsigned.
- ``checkDefaultValue`` then casts the stored text to the column type with truncation as an
  error (``table.GetColDefaultValue`` -> ``castColumnValue`` -> ``convertToMysqlDecimal``):
  text that is not a number is refused, rounding to the scale is only a warning
  (``ProduceDecWithSpecifiedTp`` appends ``ErrTruncatedWrongVal`` as a warning), more integer
  digits than precision - scale after rounding is ``ErrOverflow`` -> "Invalid default value".

``SHOW CREATE TABLE`` prints the stored text quoted (``DEFAULT '3.14'``) and a Simple-protocol
``tableSchema`` carries it as a JSON string: both are taken as given, and only validated.
"""

from __future__ import annotations

from typing import Any

import pytest

from service.core.alter import apply_ddl
from service.core.ddl import table_from_ddl
from service.core.errors import InvalidDefaultError, InvalidInputError
from service.core.options import SchemaOptions
from service.core.schema import generate_schemas
from service.core.schema_text import schema_text
from service.core.table_json import table_from_json

STRING = SchemaOptions.from_strings(decimal_handling_mode="string")
PRECISE = SchemaOptions()
DECIMAL_STRING = {"type": "string", "connect.parameters": {"tidb_type": "DECIMAL"}}


def ddl_field(column_ddl: str, options: SchemaOptions = STRING) -> dict[str, Any]:
    table = table_from_ddl(f"CREATE TABLE db.t ({column_ddl})")
    return generate_schemas(table, options).value_schema["fields"][0]


def json_table(default: Any, *, length: int = 10, scale: int = 4,
               nullable: bool = False) -> dict[str, Any]:
    """A Simple-protocol TableSchema with one DECIMAL column `c`."""
    return {
        "schema": "db", "table": "t", "version": 1,
        "columns": [{"name": "c", "dataType": {"mysqlType": "decimal", "charset": "binary",
                                               "collate": "binary", "length": length,
                                               "decimal": scale},
                     "nullable": nullable, "default": default}],
    }


def json_field(default: Any, options: SchemaOptions = STRING, **kw: Any) -> dict[str, Any]:
    table = table_from_json(json_table(default, **kw))
    return generate_schemas(table, options).value_schema["fields"][0]


def test_the_issue_examples_give_ticdc_s_fields() -> None:
    assert ddl_field("c DECIMAL(10,4) NOT NULL DEFAULT 3.14") == {
        "default": "3.14", "name": "c", "type": DECIMAL_STRING}
    assert ddl_field("n DECIMAL(8,2) NULL DEFAULT 1.5") == {
        "default": "1.5", "name": "n", "type": [DECIMAL_STRING, "null"]}


# What TiDB v8 stores for `c DECIMAL(10,4) NOT NULL DEFAULT <literal>` (module docstring).
STORED_TEXT = [
    ("3.14", "3.14"),          # MyDecimal keeps its written digits: not padded to the scale
    ("'3.14'", "3.14"),        # a string is stored as written
    ("+3.14", "3.14"),         # the rewriter drops unary plus
    ("3.140", "3.140"),        # trailing zeros as written
    ("1e2", "100"),            # an exponent makes a float64: FormatFloat(100, 'f', -1, 64)
    ("-0", "0"),               # int 0 negated is 0
    ("3.14159", "3.14159"),    # more digits than the scale: a warning, the text is kept
    ("-3.14", "-3.14"),
    ("-0.00", "0.00"),         # DecimalNeg leaves a zero unsigned
    ("007.50", "7.50"),        # MyDecimal.ToString drops leading zeros
    ("007", "7"),              # an int literal: FormatInt
    (".5", "0.5"),
    ("5.", "5"),
    ("1.5E-3", "0.0015"),      # float64 in plain notation
    ("-1e2", "-100"),
    ("(3.14)", "3.14"),
    ("TRUE", "1"),
    ("x'0A'", "10"),           # a hex literal for a numeric column: its integer value
    ("'1e2'", "1e2"),          # strings are never rewritten ...
    ("'+3.14'", "+3.14"),
    ("'-0'", "-0"),
    ("'3.14159'", "3.14159"),
    ("' 3.14 '", " 3.14 "),    # ... blanks around a number parse (MyDecimal.FromString)
]


@pytest.mark.parametrize(("literal", "stored"), STORED_TEXT)
def test_create_table_literal_becomes_tidb_s_stored_text(literal: str, stored: str) -> None:
    table = table_from_ddl(f"CREATE TABLE db.t (c DECIMAL(10,4) NOT NULL DEFAULT {literal})")
    assert table.columns[0].default == stored
    assert ddl_field(f"c DECIMAL(10,4) NOT NULL DEFAULT {literal}")["default"] == stored


@pytest.mark.parametrize(
    ("column", "stored"),
    [
        # Rounded half-up to the scale the value still fits: accepted, text unchanged.
        ("c DECIMAL(10,4) DEFAULT 99999.99995", "99999.99995"),  # -> 100000.0000, 6 digits
        ("c DECIMAL(4,2) DEFAULT 1.234", "1.234"),
        ("c DECIMAL(4,2) DEFAULT 99.994", "99.994"),
        ("c DECIMAL(65,30) NOT NULL DEFAULT 0", "0"),
        ("c DECIMAL DEFAULT 12.5", "12.5"),  # DECIMAL(10,0): rounds to 13
        ("c DECIMAL(5,2) DEFAULT 1e-9", "0.000000001"),
        # ProduceDecWithSpecifiedTp clamps a negative value of DECIMAL UNSIGNED to 0 with no
        # error, so TiDB keeps the default (and so does TiCDC's schema).
        ("c DECIMAL(5,2) UNSIGNED DEFAULT -1", "-1"),
    ],
)
def test_accepted_with_tidb_s_rounding_warning_only(column: str, stored: str) -> None:
    assert ddl_field(column)["default"] == stored


@pytest.mark.parametrize(
    "column",
    [
        "c DECIMAL(10,4) DEFAULT 1234567",          # 7 integer digits, the column keeps 6
        "c DECIMAL(10,4) DEFAULT -1234567.5",
        "c DECIMAL(10,4) DEFAULT 999999.99995",     # rounds to 1000000.0000
        "c DECIMAL(4,2) DEFAULT 99.995",            # rounds to 100.00
        "c DECIMAL(10,4) DEFAULT 1e7",              # 10000000
        "c DECIMAL(10,4) DEFAULT '1234567'",
        "c DECIMAL(10,4) DEFAULT '1e7'",
        "c DECIMAL(10,4) DEFAULT 'abc'",            # MyDecimal.FromString: not a number
        "c DECIMAL(10,4) DEFAULT ''",
        "c DECIMAL(10,4) DEFAULT '3.14abc'",        # ErrTruncated is an error in DDL
        "c DECIMAL(10,4) DEFAULT '.'",
        "c DECIMAL(10,4) DEFAULT '1e'",
        "c DECIMAL(10,4) DEFAULT 1e400",            # TiDB's lexer refuses the float literal
        "c DECIMAL(10,4) DEFAULT '0." + "1" * 82 + "'",  # more than 81 digits: truncated
        "c DECIMAL(10,4) DEFAULT '1e-90'",          # the shift truncates past 81 digits
        "c DECIMAL(10,4) DEFAULT '0e2000000000'",   # exponent beyond MaxInt32/2
    ],
)
def test_what_tidb_refuses_is_refused_naming_the_column(column: str) -> None:
    for options in (STRING, PRECISE):  # validated even where not emitted
        with pytest.raises(InvalidDefaultError) as err:
            ddl_field(column, options)
        assert isinstance(err.value, InvalidInputError)  # HTTP 422 (service/api/problems.py)
        assert err.value.code == "invalid_default"
        assert err.value.details["column"] == "c"
        assert "`c`" in err.value.message


def test_precise_mode_still_emits_no_default() -> None:
    assert ddl_field("c DECIMAL(10,4) DEFAULT 3.14", PRECISE)["default"] is None
    assert "default" not in ddl_field("c DECIMAL(10,4) NOT NULL DEFAULT 3.14", PRECISE)


SHOW_CREATE_TABLE = """CREATE TABLE `t` (
  `id` int(11) NOT NULL,
  `c` decimal(10,4) NOT NULL DEFAULT '3.14',
  `n` decimal(8,2) DEFAULT '1.5',
  `r` decimal(10,4) DEFAULT '3.14159',
  `z` decimal(10,4) DEFAULT '0',
  PRIMARY KEY (`id`) /*T![clustered_index] CLUSTERED */
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"""


def test_show_create_table_defaults_are_taken_as_printed() -> None:
    """TiDB prints the stored text quoted (pkg/executor show.go: DEFAULT '%s')."""
    table = table_from_ddl(SHOW_CREATE_TABLE, schema="db")
    fields = generate_schemas(table, STRING).value_schema["fields"]
    assert [f.get("default") for f in fields[1:]] == ["3.14", "1.5", "3.14159", "0"]


@pytest.mark.parametrize("default", ["3.14", "3.140", "3.14159", "1e2", "-0", "0", "100"])
def test_table_schema_default_is_the_text_as_given(default: str) -> None:
    assert json_field(default)["default"] == default


@pytest.mark.parametrize("default", ["abc", "1234567", "", "99999999.5"])
def test_table_schema_default_is_still_validated(default: str) -> None:
    with pytest.raises(InvalidDefaultError) as err:
        json_field(default)
    assert err.value.details["column"] == "c"


def test_ddl_and_table_schema_of_one_table_give_one_schema() -> None:
    """A registry shared with a TiCDC changefeed sees one schema per table version."""
    from_ddl = table_from_ddl("CREATE TABLE db.t (c DECIMAL(10,4) NOT NULL DEFAULT 3.14)")
    from_json = table_from_json(json_table("3.14"))
    for options in (STRING, PRECISE):
        assert schema_text(generate_schemas(from_ddl, options).value_schema) == \
            schema_text(generate_schemas(from_json, options).value_schema)


@pytest.mark.parametrize(
    ("statement", "stored"),
    [
        ("ALTER TABLE db.t ADD COLUMN e DECIMAL(8,2) NOT NULL DEFAULT 1.5 AFTER id", "1.5"),
        ("ALTER TABLE db.t ALTER COLUMN d SET DEFAULT 3.140", "3.140"),
        ("ALTER TABLE db.t MODIFY COLUMN d DECIMAL(8,2) DEFAULT 1e2", "100"),
    ],
)
def test_alter_defaults_follow_the_same_rule(statement: str, stored: str) -> None:
    """ALTER goes through the same SetDefaultValue in TiDB, and through ddl.py here."""
    current = table_from_ddl("CREATE TABLE db.t (id INT PRIMARY KEY, d DECIMAL(8,2))")
    table = apply_ddl(current, statement, schema="db").table
    assert table is not None
    fields = generate_schemas(table, STRING).value_schema["fields"]
    assert fields[1]["default"] == stored
