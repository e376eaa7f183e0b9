"""Test-side TiCDC encoders: the same logical changes written in each protocol, the way
TiCDC writes them (per the research notes on its encoders), for the conformance suite.

A change is ``(op, row, old_row, commit_ts)`` with plain-JSON rows (the /v1 encode format).
"""

from __future__ import annotations

import base64
import decimal
from typing import Any

import orjson

from service.core.mysql_types import MySQLType, TypeFamily
from service.core.table import ColumnType, Table

Change = tuple[str, dict[str, Any] | None, dict[str, Any] | None, int]

_OPEN_CODES = {
    MySQLType.TINYINT: 1, MySQLType.SMALLINT: 2, MySQLType.MEDIUMINT: 9, MySQLType.INT: 3,
    MySQLType.BIGINT: 8, MySQLType.FLOAT: 4, MySQLType.DOUBLE: 5, MySQLType.DECIMAL: 246,
    MySQLType.CHAR: 254, MySQLType.BINARY: 254, MySQLType.VARCHAR: 15,
    MySQLType.VARBINARY: 15, MySQLType.TINYTEXT: 249, MySQLType.TINYBLOB: 249,
    MySQLType.TEXT: 252, MySQLType.BLOB: 252, MySQLType.MEDIUMTEXT: 250,
    MySQLType.MEDIUMBLOB: 250, MySQLType.LONGTEXT: 251, MySQLType.LONGBLOB: 251,
    MySQLType.BIT: 16, MySQLType.ENUM: 247, MySQLType.SET: 248, MySQLType.JSON: 245,
    MySQLType.DATE: 10, MySQLType.DATETIME: 12, MySQLType.TIMESTAMP: 7, MySQLType.TIME: 11,
    MySQLType.YEAR: 13, MySQLType.VECTOR: 225,
}


def _number(value: Any, column_type: ColumnType) -> int:
    """BIT/ENUM/SET plain values as the numbers TiCDC sends."""
    family = column_type.family
    if family is TypeFamily.BIT:
        return int.from_bytes(base64.b64decode(value), "big")
    members = column_type.elements
    if family is TypeFamily.ENUM:
        return members.index(value) + 1
    names = set(value.split(",")) if value else set()
    return sum(1 << bit for bit, m in enumerate(members) if m in names)


def _float_text(value: float) -> str:
    """Go's ``FormatFloat(v, 'f', -1, 64)``: shortest round-trip digits, no exponent."""
    return format(decimal.Decimal(repr(float(value))), "f")


def _text(value: Any, column_type: ColumnType, *, binary: str) -> Any:
    """A plain value as the string TiCDC's JSON protocols write (binary as `binary` says)."""
    if value is None:
        return None
    family = column_type.family
    if family in (TypeFamily.BIT, TypeFamily.ENUM, TypeFamily.SET):
        return str(_number(value, column_type))
    if family in (TypeFamily.FLOAT, TypeFamily.DOUBLE):
        return _float_text(value)
    if family is TypeFamily.BLOB:
        raw = base64.b64decode(value)
        return raw.decode("latin-1") if binary == "latin-1" else value
    return str(value)


# ---- Canal-JSON ---------------------------------------------------------------------------

def canal_messages(table: Table, changes: list[Change]) -> list[str]:
    """One Canal-JSON message per change (default mode: bare ``mysqlType``)."""
    mysql_type = {c.name: c.type.base.value + (" unsigned" if c.type.unsigned else "")
                  for c in table.columns}
    key = [c.name for c in table.key_columns()]

    def row(values: dict[str, Any]) -> dict[str, Any]:
        return {c.name: _text(values.get(c.name), c.type, binary="latin-1")
                for c in table.columns}

    out = []
    for op, after, before, ts in changes:
        data = [row(before if op == "delete" else after)]  # type: ignore[arg-type]
        old = [row(before)] if op == "update" and before is not None else None
        out.append(orjson.dumps({
            "id": 0, "database": table.schema, "table": table.table, "pkNames": key,
            "isDdl": False, "type": op.upper(), "es": ts >> 18, "ts": 1700000000000,
            "sql": "", "sqlType": {c.name: 4 for c in table.columns},
            "mysqlType": mysql_type, "old": old, "data": data,
            "_tidb": {"commitTs": ts}}).decode())
    return out


# ---- Open Protocol ------------------------------------------------------------------------

def go_quote(raw: bytes) -> str:
    """A Go ``strconv.Quote`` body for bytes (printable ASCII kept, the rest escaped)."""
    named = {7: "\\a", 8: "\\b", 12: "\\f", 10: "\\n", 13: "\\r", 9: "\\t", 11: "\\v",
             34: '\\"', 92: "\\\\"}
    return "".join(named.get(b) or (chr(b) if 0x20 <= b < 0x7F else f"\\x{b:02x}")
                   for b in raw)


def _open_value(value: Any, column_type: ColumnType) -> Any:
    if value is None:
        return None
    family, code = column_type.family, _OPEN_CODES[column_type.base]
    if family in (TypeFamily.BIT, TypeFamily.ENUM, TypeFamily.SET):
        return _number(value, column_type)
    if family is TypeFamily.BLOB:
        return value if code in (249, 250, 251, 252) else go_quote(base64.b64decode(value))
    if family is TypeFamily.TEXT and code in (249, 250, 251, 252):
        return base64.b64encode(value.encode()).decode()
    return value


def open_protocol_message(table: Table, changes: list[Change]) -> tuple[str, str]:
    """All changes as one Open Protocol batch message (base64 key and value)."""
    key_names = {c.name for c in table.key_columns()}

    def columns(values: dict[str, Any]) -> dict[str, Any]:
        out = {}
        for c in table.columns:
            flags = (64 if c.nullable else 0) | (128 if c.type.unsigned else 0) | (
                1 if c.type.family is TypeFamily.BLOB else 0)
            obj: dict[str, Any] = {"t": _OPEN_CODES[c.type.base]}
            if c.name in key_names:
                obj["h"] = True
                flags |= 2 | 8
            obj["f"] = flags
            obj["v"] = _open_value(values.get(c.name), c.type)
            out[c.name] = obj
        return out

    keys, values = [], []
    for op, after, before, ts in changes:
        keys.append(orjson.dumps({"ts": ts, "scm": table.schema, "tbl": table.table, "t": 1}))
        if op == "delete":
            body = {"d": columns(before)}  # type: ignore[arg-type]
        else:
            body = {"u": columns(after)}  # type: ignore[arg-type]
            if before is not None:
                body["p"] = columns(before)
        values.append(orjson.dumps(body))
    key = (1).to_bytes(8, "big") + b"".join(len(k).to_bytes(8, "big") + k for k in keys)
    value = b"".join(len(v).to_bytes(8, "big") + v for v in values)
    return base64.b64encode(key).decode(), base64.b64encode(value).decode()


# ---- Simple ------------------------------------------------------------------------------

def table_schema(table: Table, version: int) -> dict[str, Any]:
    """The Simple protocol ``TableSchema`` of a table."""
    def data_type(t: ColumnType) -> dict[str, Any]:
        binary = t.family in (TypeFamily.BLOB, TypeFamily.INTEGER, TypeFamily.BIT)
        out: dict[str, Any] = {"mysqlType": t.base.value,
                               "charset": "binary" if binary else "utf8mb4",
                               "collate": "binary" if binary else "utf8mb4_bin"}
        if t.length is not None:
            out["length"] = t.length
        if t.decimal is not None:
            out["decimal"] = t.decimal
        if t.elements:
            out["elements"] = list(t.elements)
        if t.unsigned:
            out["unsigned"] = True
        return out

    return {"schema": table.schema, "table": table.table, "tableID": 100, "version": version,
            "columns": [{"name": c.name, "dataType": data_type(c.type),
                         "nullable": c.nullable, "default": c.default}
                        for c in table.columns],
            "indexes": [{"name": i.name, "unique": i.unique, "primary": i.primary,
                         "nullable": False, "columns": list(i.columns)}
                        for i in table.indexes]}


def simple_messages(table: Table, changes: list[Change], version: int = 1) -> list[str]:
    """A BOOTSTRAP, then one Simple protocol DML message per change."""
    def row(values: dict[str, Any]) -> dict[str, Any]:
        out = {}
        for c in table.columns:
            text = _text(values.get(c.name), c.type, binary="base64")
            if c.type.base is MySQLType.TIMESTAMP and text is not None:
                text = {"location": "UTC", "value": text}
            out[c.name] = text
        return out

    messages = [{"version": 1, "type": "BOOTSTRAP", "commitTs": 0, "buildTs": 1,
                 "tableSchema": table_schema(table, version)}]
    for op, after, before, ts in changes:
        message: dict[str, Any] = {
            "version": 1, "database": table.schema, "table": table.table, "tableID": 100,
            "type": op.upper(), "commitTs": ts, "buildTs": 1, "schemaVersion": version}
        if op != "delete":
            message["data"] = row(after)  # type: ignore[arg-type]
        if before is not None:
            message["old"] = row(before)
        messages.append(message)
    return [orjson.dumps(m).decode() for m in messages]
