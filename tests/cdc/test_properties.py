"""Property tests: no input makes a protocol decoder raise anything but `MessageFormatError`
(random bytes, and random JSON shaped like each protocol's messages)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from service.cdc.catalog import DECODERS, Protocol
from service.cdc.errors import MessageFormatError
from service.cdc.events import SourceMessage
from tests.support.hypothesis_profile import examples

FIELDS = ["isDdl", "type", "data", "old", "mysqlType", "sqlType", "pkNames", "database",
          "table", "_tidb", "es", "commitTs", "watermarkTs", "version", "schemaVersion",
          "tableSchema", "preTableSchema", "columns", "indexes", "name", "dataType",
          "nullable", "default", "schema", "u", "p", "d", "t", "f", "h", "v", "q", "ts",
          "scm", "tbl", "id", "c", "mysqlType"]
TYPES = ["INSERT", "UPDATE", "DELETE", "TIDB_WATERMARK", "WATERMARK", "BOOTSTRAP", "ALTER",
         "QUERY", "int", "varchar", "decimal(10,2)", "enum('a')", "bit", "blob", "timestamp"]
scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70),
                    st.floats(allow_nan=False), st.text(max_size=8), st.sampled_from(TYPES),
                    st.integers(0, 260))
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.sampled_from(FIELDS), inner, max_size=6)),
    max_leaves=30)
messages = st.dictionaries(st.sampled_from(FIELDS), json_values, max_size=10)
SETTINGS = settings(max_examples=examples(300), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def _dumps(value: Any) -> bytes:
    return json.dumps(value).encode()


def _decode(protocol: Protocol, key: bytes | None, value: bytes | None) -> None:
    decoder = DECODERS[protocol](schema_cache_size=4)
    try:
        decoder.decode(SourceMessage(0, key, value))
    except MessageFormatError:
        pass


def _framed(texts: list[bytes], *, version: int = 1) -> bytes:
    return version.to_bytes(8, "big", signed=True) + b"".join(
        len(t).to_bytes(8, "big") + t for t in texts)


@SETTINGS
@given(protocol=st.sampled_from(list(Protocol)), key=st.none() | st.binary(max_size=64),
       value=st.none() | st.binary(max_size=256))
def test_random_bytes(protocol: Protocol, key: bytes | None, value: bytes | None) -> None:
    _decode(protocol, key, value)


@SETTINGS
@given(protocol=st.sampled_from([Protocol.CANAL_JSON, Protocol.SIMPLE]), message=messages,
       kind=st.sampled_from(TYPES), version=st.sampled_from([1, 2, None]))
def test_json_shaped_like_the_protocol(protocol: Protocol, message: dict[str, Any], kind: str,
                                       version: int | None) -> None:
    message.setdefault("type", kind)
    message.setdefault("version", version)
    _decode(protocol, None, _dumps(message))


@SETTINGS
@given(keys=st.lists(messages, min_size=1, max_size=3),
       values=st.lists(messages, max_size=3), row_kind=st.sampled_from([1, 2, 3]),
       cut=st.integers(0, 40), version=st.sampled_from([1, 1, 1, 0, 2]))
def test_open_protocol_batches(keys: list[dict[str, Any]], values: list[dict[str, Any]],
                               row_kind: int, cut: int, version: int) -> None:
    for key in keys:
        key.setdefault("t", row_kind)
        key.setdefault("ts", 1)
    key_bytes = _framed([_dumps(k) for k in keys], version=version)
    value_bytes = _framed([_dumps(v) for v in values])[8:]
    _decode(Protocol.OPEN_PROTOCOL, key_bytes, value_bytes)
    _decode(Protocol.OPEN_PROTOCOL, key_bytes[:len(key_bytes) - cut], value_bytes)


column_names = st.sampled_from(["id", "a", "b", "c"])
values = st.one_of(scalars, st.lists(scalars, max_size=2),
                   st.dictionaries(st.sampled_from(["location", "value"]), scalars))


@SETTINGS
@given(types=st.dictionaries(column_names, st.sampled_from(TYPES) | scalars, min_size=1),
       rows=st.lists(st.dictionaries(column_names, values), min_size=1, max_size=2),
       kind=st.sampled_from(["INSERT", "UPDATE", "DELETE"]),
       pk=st.lists(column_names, max_size=2))
def test_canal_dml_with_random_columns(types: dict[str, Any], rows: list[dict[str, Any]],
                                       kind: str, pk: list[str]) -> None:
    message = {"database": "d", "table": "t", "isDdl": False, "type": kind, "pkNames": pk,
               "mysqlType": types, "sqlType": {n: 2004 for n in types}, "data": rows,
               "old": rows[::-1], "es": 1}
    _decode(Protocol.CANAL_JSON, None, _dumps(message))


@SETTINGS
@given(types=st.dictionaries(column_names, st.sampled_from(TYPES), min_size=1),
       data=st.dictionaries(column_names, values), old=st.dictionaries(column_names, values),
       kind=st.sampled_from(["INSERT", "UPDATE", "DELETE"]),
       elements=st.none() | st.lists(st.text(max_size=3), max_size=3))
def test_simple_dml_after_random_bootstrap(types: dict[str, str], data: dict[str, Any],
                                           old: dict[str, Any], kind: str,
                                           elements: list[str] | None) -> None:
    decoder = DECODERS[Protocol.SIMPLE](schema_cache_size=4)
    schema = {"schema": "d", "table": "t", "version": 7, "columns": [
        {"name": n, "dataType": {"mysqlType": t, "elements": elements}, "nullable": True}
        for n, t in types.items()], "indexes": []}
    dml = {"version": 1, "type": kind, "commitTs": 5, "database": "d", "table": "t",
           "schemaVersion": 7, "data": data, "old": old}
    for index, message in enumerate(
            ({"version": 1, "type": "BOOTSTRAP", "commitTs": 0, "tableSchema": schema}, dml)):
        try:
            decoder.decode(SourceMessage(index, None, _dumps(message)))
        except MessageFormatError:
            pass


@SETTINGS
@given(columns=st.dictionaries(column_names, st.fixed_dictionaries(
           {"t": st.sampled_from([1, 3, 4, 7, 8, 13, 15, 16, 245, 246, 247, 252, 254, 255, 6, 99]),
            "v": values}, optional={"f": st.integers(0, 300), "h": st.booleans()})),
       image=st.sampled_from(["u", "d", "p"]))
def test_open_protocol_random_columns(columns: dict[str, Any], image: str) -> None:
    key = _framed([_dumps({"ts": 1, "scm": "d", "tbl": "t", "t": 1})])
    value = _framed([_dumps({image: columns, "u": columns} if image == "p" else
                            {image: columns})])[8:]
    _decode(Protocol.OPEN_PROTOCOL, key, value)
