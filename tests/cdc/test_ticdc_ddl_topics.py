"""A Canal-JSON topic and an Open Protocol topic that carry `shop.items`' CREATE TABLE and two
ALTERs (the statements of tests/core/golden/ticdc/v8.3.0), converted with ``register: true`` in
all 8 option combinations: every key and value version registered is, as stored, exactly what
TiCDC v8.3.0's own avro encoder registered for those statements."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from service.cdc.catalog import Protocol
from service.core.alter import apply_ddl
from service.core.ddl import table_from_ddl
from service.registry.canonical import stored_form
from tests.cdc.builders import open_protocol_message
from tests.core.golden.cases import OPTION_CASES
from tests.core.test_ticdc_ground_truth import GOLDEN, STATEMENTS
from tests.support.cdc import Harness, frame_open_protocol
from tests.support.harness import run

LABELS = [label for label in OPTION_CASES if "_ns-" not in label]
STEPS = STATEMENTS["items_v3"]  # CREATE TABLE, ADD COLUMN qty, ADD COLUMN note AFTER id
TS = 450_000_000_000_000_000
ROWS = [
    {"id": 1, "name": "a", "price": "2.50", "c": "1.0000", "n": None},
    {"id": 2, "name": "b", "price": "3.50", "c": "2.0000", "n": "4.25", "qty": 3},
    {"id": 3, "note": "z", "name": "c", "price": "4.50", "c": "3.0000", "n": None, "qty": 4},
]
TYPES = {"id": "int", "note": "varchar(8)", "name": "varchar(20)", "price": "decimal(8,2)",
         "c": "decimal(10,4)", "n": "decimal(8,2)", "qty": "int"}


def canal_topic() -> list[tuple[str | None, str | None]]:
    out: list[tuple[str | None, str | None]] = []
    for step, (statement, row) in enumerate(zip(STEPS, ROWS, strict=True)):
        ts = TS + step * 10
        out.append((None, json.dumps({
            "id": 0, "database": "shop", "table": "items", "pkNames": None, "isDdl": True,
            "type": "CREATE" if step == 0 else "ALTER", "es": 1, "ts": 0, "sql": statement,
            "sqlType": None, "mysqlType": None, "data": None, "old": None,
            "_tidb": {"commitTs": ts}})))
        types = {c: TYPES[c] for c in row}
        out.append((None, json.dumps({
            "id": 0, "database": "shop", "table": "items", "pkNames": ["id"], "isDdl": False,
            "type": "INSERT", "es": 1, "ts": 0, "sql": "", "sqlType": {c: 4 for c in types},
            "mysqlType": types, "data": [{k: None if v is None else str(v)
                                          for k, v in row.items()}],
            "old": None, "_tidb": {"commitTs": ts + 1}})))
    return out


def open_topic() -> list[tuple[str | None, str | None]]:
    out: list[tuple[str | None, str | None]] = []
    table = None
    for step, (statement, row) in enumerate(zip(STEPS, ROWS, strict=True)):
        ts = TS + step * 10
        out.append(frame_open_protocol(
            [json.dumps({"ts": ts, "scm": "shop", "tbl": "items", "t": 2})],
            [json.dumps({"q": statement, "t": 3 if step == 0 else 5})]))
        table = table_from_ddl(statement) if table is None else apply_ddl(
            table, statement, schema="shop", table="items").table
        assert table is not None
        out.append(open_protocol_message(table, [("insert", row, None, ts + 1)]))
    return out


@pytest.mark.parametrize("protocol", [Protocol.CANAL_JSON, Protocol.OPEN_PROTOCOL],
                         ids=lambda p: p.value)
@pytest.mark.parametrize("label", LABELS)
def test_the_registered_versions_are_ticdcs(protocol: Protocol, label: str,
                                            tmp_path: Path) -> None:
    harness = Harness(tmp_path / "r.sqlite")
    messages = canal_topic() if protocol is Protocol.CANAL_JSON else open_topic()
    done = harness.convert(protocol, messages, register=True, options=OPTION_CASES[label],
                           encoding="utf-8" if protocol is Protocol.CANAL_JSON else "base64")
    assert len(done["messages"]) == 3 and done["notes"] == []

    async def stored(subject: str, version: int) -> str:
        return (await harness.registry.get_version(subject, version)).schema

    for version, case in enumerate(["items_v1", "items_v2", "items_v3"], start=1):
        ticdc = (GOLDEN / f"{case}.{label}.value.avsc").read_text(encoding="utf-8")
        assert run(stored("tidb_shop_items-value", version)) == stored_form(ticdc).text, case
    key = (GOLDEN / f"items_v1.{label}.key.avsc").read_text(encoding="utf-8")
    assert run(stored("tidb_shop_items-key", 1)) == stored_form(key).text
    assert run(harness.registry.versions("tidb_shop_items-key")) == [1]
