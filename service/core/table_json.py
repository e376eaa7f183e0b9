"""The TiCDC Simple-protocol ``TableSchema`` JSON object, parsed into the `Table` model.

The pydantic models mirror the wire object field for field (camelCase names, as TiCDC emits
them) so the HTTP layer can publish them in OpenAPI; `table_from_json` is the one door from
that object into a validated `Table`.
"""

from __future__ import annotations

from typing import Any

import orjson
import pydantic
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from service.core.errors import InvalidTableError, MissingDatabaseError
from service.core.limits import check_column_count
from service.core.mysql_types import TypeFamily, parse_type_string
from service.core.table import Column, ColumnType, Index, Table

__all__ = ["DataTypeSpec", "ColumnSpec", "IndexSpec", "TableSchemaSpec", "table_from_json",
           "table_from_json_text", "table_from_spec"]

_UNSPECIFIED = -1  # TiDB's UnspecifiedLength


class DataTypeSpec(BaseModel):
    """``dataType``: the MySQL type with its parameters, as TiCDC's Simple protocol sends it."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    mysql_type: str = Field(alias="mysqlType", examples=["int", "int unsigned", "varchar"])
    charset: str | None = None
    collate: str | None = None
    length: int | None = Field(default=None, description="TiDB flen: precision, width, length")
    decimal: int | None = Field(default=None, description="DECIMAL scale or fractional seconds")
    elements: list[str] | None = Field(default=None, description="ENUM/SET members, in order")
    unsigned: bool = False
    zerofill: bool = False


class ColumnSpec(BaseModel):
    """One entry of ``columns``."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    name: str
    data_type: DataTypeSpec = Field(alias="dataType")
    nullable: bool = True
    default: str | int | float | bool | None = None


class IndexSpec(BaseModel):
    """One entry of ``indexes``."""

    model_config = ConfigDict(extra="ignore")

    name: str = ""
    unique: bool = False
    primary: bool = False
    nullable: bool = False
    columns: list[str]


class TableSchemaSpec(BaseModel):
    """TiCDC's Simple-protocol ``TableSchema``: the canonical table input."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    schema_: str = Field(alias="schema", examples=["shop"])
    table: str = Field(examples=["orders"])
    table_id: int | None = Field(default=None, alias="tableID")
    version: int | None = None
    columns: list[ColumnSpec]
    indexes: list[IndexSpec] = Field(default_factory=list)

    @field_validator("columns", mode="before")
    @classmethod
    def _count_first(cls, columns: Any, info: ValidationInfo) -> Any:
        """Refuse more columns than TiDB allows before validating any of them (100,000
        would take half a second); the `LimitExceededError` is not a validation error, so it
        reaches the caller as it is."""
        if isinstance(columns, list):
            check_column_count(len(columns), str(info.data.get("table", "")))
        return columns


def table_from_json_text(text: str | bytes) -> Table:
    """Parse ``TableSchema`` JSON text (see `table_from_json`).

    Raises:
        InvalidTableError: the text is not JSON (the error names the character position).
    """
    try:
        document = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise InvalidTableError(
            f"TableSchema is not valid JSON at position {exc.pos}: {exc.msg}", position=exc.pos
        ) from exc
    return table_from_json(document)


def table_from_json(document: Any) -> Table:
    """Validate a decoded ``TableSchema`` JSON object and build the `Table`.

    Raises:
        InvalidTableError: a missing or mistyped field (the error names its JSON path), or
            any table-level fault `Table` detects.
        UnsupportedTypeError: a ``mysqlType`` flat-avro cannot map.
    """
    try:
        spec = TableSchemaSpec.model_validate(document)
    except pydantic.ValidationError as exc:
        first = exc.errors()[0]
        path = "/".join(str(p) for p in first["loc"])
        raise InvalidTableError(
            f"TableSchema field `{path}`: {first['msg']}", field=path
        ) from exc
    return table_from_spec(spec)


def table_from_spec(spec: TableSchemaSpec) -> Table:
    """Build a validated `Table` from an already-parsed `TableSchemaSpec`.

    Raises:
        MissingDatabaseError: ``schema`` is empty (TiCDC always sends the database).
    """
    if not spec.schema_:
        raise MissingDatabaseError(f"TableSchema field `schema` (the database of table "
                                   f"`{spec.table}`) is empty", field="schema", table=spec.table)
    columns = tuple(_column(c) for c in spec.columns)
    indexes = tuple(
        Index(name=i.name, columns=tuple(i.columns), unique=i.unique or i.primary,
              primary=i.primary)
        for i in spec.indexes
    )
    return Table(
        schema=spec.schema_,
        table=spec.table,
        columns=columns,
        indexes=indexes,
        table_id=spec.table_id,
        version=spec.version,
    )


def _column(spec: ColumnSpec) -> Column:
    dt = spec.data_type
    parsed = parse_type_string(dt.mysql_type, column=spec.name)
    length = _specified(dt.length)
    decimal = _specified(dt.decimal)
    if parsed.numbers:
        # Parameters written into the type string itself (``decimal(10,4)``) win.
        length = parsed.numbers[0]
        decimal = parsed.numbers[1] if len(parsed.numbers) > 1 else decimal
    elements = tuple(dt.elements) if dt.elements is not None else (parsed.elements or ())
    family = parsed.base.family
    if family in (TypeFamily.ENUM, TypeFamily.SET) and dt.elements is not None and \
            parsed.elements is not None and tuple(dt.elements) != parsed.elements:
        raise InvalidTableError(
            f"column `{spec.name}`: `elements` disagrees with the members in mysqlType",
            column=spec.name,
        )
    col_type = ColumnType(
        base=parsed.base,
        unsigned=parsed.unsigned or dt.unsigned or dt.zerofill,
        zerofill=parsed.zerofill or dt.zerofill,
        length=length,
        decimal=decimal,
        elements=elements,
        charset=dt.charset,
        collate=dt.collate,
    )
    return Column(name=spec.name, type=col_type, nullable=spec.nullable, default=spec.default)


def _specified(value: int | None) -> int | None:
    return None if value is None or value == _UNSPECIFIED else value
