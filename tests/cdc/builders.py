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


# ---- Debezium -----------------------------------------------------------------------------

_DBZ_NAMED = {
    MySQLType.DATE: ("int32", "io.debezium.time.Date"),
    MySQLType.TIMESTAMP: ("string", "io.debezium.time.ZonedTimestamp"),
    MySQLType.TIME: ("int64", "io.debezium.time.MicroTime"),
    MySQLType.JSON: ("string", "io.debezium.data.Json"),
    MySQLType.YEAR: ("int32", "io.debezium.time.Year"),
    MySQLType.VECTOR: ("string", "io.debezium.data.TiDBVectorFloat32"),
}
_DBZ_INTEGERS = {  # (signed, unsigned)
    MySQLType.TINYINT: ("int16", "int16"), MySQLType.SMALLINT: ("int16", "int32"),
    MySQLType.MEDIUMINT: ("int32", "int32"), MySQLType.INT: ("int32", "int64"),
    MySQLType.BIGINT: ("int64", "int64"),
}


def _dbz_field(column: Any) -> dict[str, Any]:
    """A column's field schema as TiCDC's Debezium encoder writes it (with tidb_type)."""
    t: ColumnType = column.type
    tidb_type = t.base.value + (" unsigned" if t.unsigned and t.family is TypeFamily.INTEGER
                                else "")
    out: dict[str, Any] = {"tidb_type": tidb_type}
    if t.base is MySQLType.BIT:
        out |= ({"type": "boolean"} if t.length == 1 else {
            "type": "bytes", "name": "io.debezium.data.Bits", "version": 1,
            "parameters": {"length": str(t.length)}})
    elif t.family in (TypeFamily.ENUM, TypeFamily.SET):
        out |= {"type": "string", "name": "io.debezium.data."
                + ("Enum" if t.family is TypeFamily.ENUM else "EnumSet"), "version": 1,
                "parameters": {"allowed": ",".join(
                    m.replace(",", "\\,") if t.family is TypeFamily.ENUM else m
                    for m in t.elements)}}
    elif t.base is MySQLType.DATETIME:
        out |= {"type": "int64", "name": "io.debezium.time." + (
            "Timestamp" if (t.decimal or 0) <= 3 else "MicroTimestamp"), "version": 1}
    elif t.base in _DBZ_NAMED:
        kind, name = _DBZ_NAMED[t.base]
        out |= {"type": kind, "name": name, "version": 1}
    elif t.family is TypeFamily.INTEGER:
        out["type"] = _DBZ_INTEGERS[t.base][t.unsigned]
    elif t.family in (TypeFamily.DOUBLE, TypeFamily.DECIMAL):
        out["type"] = "double"
    elif t.family is TypeFamily.FLOAT:
        out["type"] = "float"
    else:
        out["type"] = "string"
    return out | {"optional": column.nullable, "field": column.name}


def _dbz_value(value: Any, t: ColumnType) -> Any:
    """A plain value as TiCDC's Debezium encoder writes it (the changefeed in UTC)."""
    import datetime

    if value is None:
        return None
    family = t.family
    if family is TypeFamily.INTEGER:
        return value - (1 << 64) if value >= 1 << 63 else value
    if family in (TypeFamily.FLOAT, TypeFamily.DOUBLE, TypeFamily.DECIMAL):
        return float(value)
    if family is TypeFamily.BIT:
        number = int.from_bytes(base64.b64decode(value), "big")
        if t.length == 1:
            return number != 0
        return base64.b64encode(number.to_bytes(((t.length or 1) + 7) // 8, "little")).decode()
    if t.base is MySQLType.DATE:
        return (datetime.date.fromisoformat(value) - datetime.date(1970, 1, 1)).days
    if t.base is MySQLType.DATETIME:
        moment = datetime.datetime.fromisoformat(value) - datetime.datetime(1970, 1, 1)
        micros = moment // datetime.timedelta(microseconds=1)
        return micros if (t.decimal or 0) > 3 else micros // 1000
    if t.base is MySQLType.TIMESTAMP:
        return value.replace(" ", "T") + "Z"
    if t.base is MySQLType.TIME:
        sign = -1 if value.startswith("-") else 1
        hours, minutes, seconds = value.lstrip("-").split(":")
        whole, _, fraction = seconds.partition(".")
        micros = ((int(hours) * 60 + int(minutes)) * 60 + int(whole)) * 1_000_000
        return sign * (micros + int((fraction + "000000")[:6]))
    return value


def debezium_ddl(table: Table, query: str, ts: int) -> tuple[str, str]:
    """The CREATE TABLE event of `table` (key, value) as TiCDC's Debezium encoder writes it."""
    def column(position: int, c: Any) -> dict[str, Any]:
        t: ColumnType = c.type
        temporal = t.base in (MySQLType.DATETIME, MySQLType.TIMESTAMP, MySQLType.TIME)
        return {"name": c.name, "jdbcType": 0, "nativeType": None, "comment": None,
                "defaultValueExpression": None,
                "enumValues": [f"'{m}'" for m in t.elements] or None,
                "typeName": t.base.value.upper() + (" UNSIGNED" if t.unsigned else ""),
                "typeExpression": t.base.value.upper(), "charsetName": None,
                "length": (t.decimal or 0) if temporal else t.length,
                "scale": float(t.decimal) if t.family is TypeFamily.DECIMAL else None,
                "position": position + 1, "optional": c.nullable, "autoIncremented": False,
                "generated": False}

    source = _dbz_source(table, ts)
    value = {"payload": {
        "source": source, "ts_ms": 1700000000000, "databaseName": table.schema,
        "schemaName": None, "ddl": query, "tableChanges": [{
            "type": "CREATE", "id": f'"{table.schema}"."{table.table}"',
            "table": {"defaultCharsetName": "utf8mb4",
                      "primaryKeyColumnNames": [c.name for c in table.key_columns()],
                      "columns": [column(i, c) for i, c in enumerate(table.columns)],
                      "comment": None}}]}}
    key = {"payload": {"databaseName": table.schema}}
    return orjson.dumps(key).decode(), orjson.dumps(value).decode()


def _dbz_source(table: Table, ts: int) -> dict[str, Any]:
    return {"version": "2.4.0.Final", "connector": "TiCDC", "name": "default",
            "ts_ms": ts >> 18, "snapshot": "false", "db": table.schema, "table": table.table,
            "server_id": 0, "gtid": None, "file": "", "pos": 0, "row": 0, "thread": 0,
            "query": None, "commit_ts": ts, "cluster_id": "default"}


_DBZ_OPS = {"insert": "c", "update": "u", "delete": "d"}


def debezium_messages(table: Table, changes: list[Change]) -> list[tuple[str, str]]:
    """One Debezium message (key, value) per change, with the schema blocks, tidb_type and
    old values (``debezium-output-old-value``), as TiCDC writes them."""
    fields = [_dbz_field(c) for c in table.columns]
    key_columns = table.key_columns()

    def image(values: dict[str, Any] | None) -> dict[str, Any] | None:
        if values is None:
            return None
        return {c.name: _dbz_value(values.get(c.name), c.type) for c in table.columns}

    out = []
    for op, after, before, ts in changes:
        keyed = before if op == "delete" else after
        assert keyed is not None
        key = {"payload": {c.name: _dbz_value(keyed.get(c.name), c.type) for c in key_columns},
               "schema": {"type": "struct", "name": f"default.{table.schema}.{table.table}.Key",
                          "optional": False, "fields": [_dbz_field(c) for c in key_columns]}}
        value = {"payload": {"source": _dbz_source(table, ts), "ts_ms": 1700000000000,
                             "transaction": None, "op": _DBZ_OPS[op],
                             "before": image(before), "after": image(after)},
                 "schema": {"type": "struct", "optional": False, "version": 1, "fields": [
                     {"type": "struct", "optional": True, "field": "before", "fields": fields},
                     {"type": "struct", "optional": True, "field": "after", "fields": fields}]}}
        out.append((orjson.dumps(key).decode(), orjson.dumps(value).decode()))
    return out
