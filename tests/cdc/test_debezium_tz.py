"""Debezium TIMESTAMP under a changefeed time zone, against TiCDC's own encoders.

golden/debezium/timezone/v9.0.0-beta.2.pre/ holds, for changefeeds in UTC, Asia/Shanghai and
America/New_York, each row event as TiCDC's Debezium encoder wrote it (TIMESTAMP in UTC) and as
its avro encoder wrote the value (TIMESTAMP in the changefeed's zone). flatavro converts the
Debezium message with `--tz` set to that zone and must give the avro encoder's values, except
where TiCDC's Debezium encoder wrote the wrong instant (`WRONG_INSTANT`, README.md there).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from service.cdc.catalog import Protocol
from service.codec.convert import ConvertInput
from service.codec.decode import decode_raw
from service.core.ddl import table_from_ddl
from service.core.options import SchemaOptions
from service.usecases.runtime import Runtime
from service.usecases.settings import RuntimeSettings
from tests.cdc import builders

GOLDEN = Path(__file__).parent / "golden" / "debezium" / "timezone" / "v9.0.0-beta.2.pre"
RUNS: dict[str, list[dict[str, Any]]] = json.loads((GOLDEN / "messages.json").read_text())

META = json.loads((GOLDEN / "meta.json").read_text())
DDL = META["show_create_table"]
TABLE = table_from_ddl(DDL, schema="tz")
_SMALLEST = ("INSERT INTO tz.t VALUES (6, '1969-12-31 19:00:01', '1969-12-31 19:00:01', "
             "'1969-12-31 19:00:01', '1969-12-31 19:00:01')")
WRONG_INSTANT: dict[str, list[tuple[str, str]]] = {
    # TiCDC compares the zone's local text with TIMESTAMP's minimum before converting it:
    # the smallest TIMESTAMP, 1970-01-01 00:00:01 UTC (19:00:01 on Dec 31 in New York), is
    # written as 1970-01-01T00:00:00Z, so it comes back a second early: 19:00:00.
    "America/New_York": [(_SMALLEST, "a"), (_SMALLEST, "b"), (_SMALLEST, "c")],
}


def _avro_values(entry: dict[str, Any]) -> dict[str, Any]:
    value = json.loads(entry["avro_value"])
    return {k: (next(iter(v.values())) if isinstance(v, dict) else v) for k, v in value.items()}


@pytest.mark.parametrize("zone", sorted(RUNS))
def test_debezium_with_tz_gives_the_avro_encoders_values(zone: str, tmp_path: Path) -> None:
    entries = [e for e in RUNS[zone] if e.get("debezium_value") and e.get("avro_value")]
    assert len(entries) >= 8, zone

    async def convert() -> list[tuple[dict[str, Any], dict[str, Any]]]:
        settings = RuntimeSettings(registry_db_path=str(tmp_path / "r.sqlite"), tz=zone)
        runtime = Runtime.start(settings)
        try:
            # The table's DDL event first, as in a changefeed's topic (the vectors hold rows).
            ddl_key, ddl_value = builders.debezium_ddl(TABLE, DDL, int(entries[0]["commit_ts"])
                                                       - 1)
            done = await runtime.converter.convert_raw(Protocol.DEBEZIUM, ConvertInput(
                [(ddl_key.encode(), ddl_value.encode())] + [
                    (e["debezium_key"].encode(), e["debezium_value"].encode())
                    for e in entries], "raw", "tz_{schema}_{table}", True, SchemaOptions()))
            assert not done.pending and not getattr(done, "problems", None)
            pairs = []
            for message in done.messages:
                assert message.value is not None
                decoded = json.loads((await decode_raw(runtime.resolver, message.value)).body)
                pairs.append((entries[message.source_index - 1],
                              decoded["messages"][0]["value"]))
            return pairs
        finally:
            await runtime.stop()

    pairs = asyncio.run(convert())
    assert len(pairs) == len(entries)
    wrong = sorted((entry["statement"], column) for entry, row in pairs
                   for column, want in _avro_values(entry).items() if row[column] != want)
    assert wrong == WRONG_INSTANT.get(zone, [])
