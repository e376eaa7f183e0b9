"""flatavro against TiCDC's own avro encoder with AWS Glue's Schema Registry.

golden/glue/v9.0.0-beta.2.pre/ holds what tiflow v9.0.0-beta.2.pre's encoder did against moto
(its Glue API calls, the schemas it registered, its Kafka messages; README.md there says how).
Here TiCDC's registrations are replayed, call for call, into a fresh moto registry; flatavro
then registers the same tables there and must find TiCDC's versions (nothing new registered,
the definitions byte for byte), write every row event as the very bytes TiCDC wrote (headers
with the same version UUIDs), and decode every TiCDC message, including the inserts and
updates TiCDC's own Glue decoder cannot read back (README.md: it looks values up with the
key's schema).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from service.codec.decode import decode_raw
from service.codec.resolver import BoundSchema, TopicSchemas
from service.codec.writer import ChangeWriter
from service.core.ddl import table_from_ddl
from service.core.options import SchemaOptions
from service.usecases.runtime import Runtime
from service.usecases.settings import RuntimeSettings
from tests.support.glue import MotoGlue

GOLDEN = Path(__file__).parent / "golden" / "glue" / "v9.0.0-beta.2.pre"
MESSAGES = json.loads((GOLDEN / "messages.json").read_text())
CALLS = json.loads((GOLDEN / "api_calls.json").read_text())["runs"]
TOPIC = "flatavro_glue_{}"
"""The vectors' topics: one per table, named by TiCDC's dispatcher (a literal topic here)."""
REPLAYED = ("AWSGlue.CreateSchema", "AWSGlue.RegisterSchemaVersion")

# The table versions TiCDC encoded with, each before the events it wrote with it. The keyless
# table is left out: TiCDC's avro refuses it (`force-replicate`), the vectors bypass that.
STEPS = [
    (MESSAGES["statements"][1]["sql"], [0, 1, 2, 3]),
    (MESSAGES["show_create_tables"]["fg.orders"], [4, 5, 6]),
    (MESSAGES["show_create_tables"]["fg.items"], [7, 8]),
]


@pytest.fixture(scope="module")
def moto() -> Iterator[MotoGlue]:
    server = MotoGlue()
    yield server
    server.stop()


def _replay(moto: MotoGlue, run: str, name: str) -> dict[tuple[str, int], uuid.UUID]:
    """TiCDC's own CreateSchema/RegisterSchemaVersion requests of `run`, sent again as they
    were into the new registry `name`: (schema name, version number) -> the version's id."""
    glue = moto.client()
    glue.create_registry(RegistryName=name)
    for call in CALLS[run]:
        if call["x_amz_target"] not in REPLAYED or call["response_status"] != 200:
            continue
        request = json.loads(call["request_body"])
        (request.get("RegistryId") or request["SchemaId"])["RegistryName"] = name
        operation = call["x_amz_target"].split(".")[1]
        getattr(glue, "create_schema" if operation == "CreateSchema" else
                "register_schema_version")(**request)
    versions = {}
    for message in MESSAGES["messages"]:
        for part in ("key", "value"):
            framed = message[part]
            if message["run"] == run and framed["hex"] is not None:
                subject, number = framed["registry_schema_name"], framed[
                    "registry_version_number"]
                got = glue.get_schema_version(
                    SchemaId={"RegistryName": name, "SchemaName": subject},
                    SchemaVersionNumber={"VersionNumber": number})
                versions[subject, number] = uuid.UUID(got["SchemaVersionId"])
    return versions


def _row(columns: list[dict[str, Any]] | None) -> dict[str, Any] | None:
    """An event's columns as flatavro's plain-JSON row."""
    if columns is None:
        return None
    row: dict[str, Any] = {}
    for column in columns:
        value, kind = column["value"], column["tidb_type"]
        if value is not None and kind.startswith(("int", "bigint")):
            value = int(value)
        elif value is not None and kind.startswith("double"):
            value = float(value)
        row[column["name"]] = value
    return row


def _ticdc_bytes(framed: dict[str, Any], versions: dict[tuple[str, int], uuid.UUID]
                 ) -> bytes | None:
    """TiCDC's message part with the header of the replayed registry's version."""
    if framed["hex"] is None:  # a tombstone's value, a keyless table's key
        return None
    version = versions[framed["registry_schema_name"], framed["registry_version_number"]]
    return b"\x03\x00" + version.bytes + bytes.fromhex(framed["avro_body_hex"])


@pytest.mark.parametrize("run", ["ext-off", "ext-on"])
def test_flatavro_writes_what_ticdc_wrote_into_glue(run: str, moto: MotoGlue,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    name = f"replayed-{run}"
    versions = _replay(moto, run, name)
    for variable, setting in moto.env().items():
        if variable.startswith("AWS_"):
            monkeypatch.setenv(variable, setting)
    options = SchemaOptions(enable_tidb_extension=run == "ext-on")
    events = {e["event_id"]: e["event"] for e in MESSAGES["events"]}
    messages = {m["event_id"]: m for m in MESSAGES["messages"] if m["run"] == run}
    glue = moto.client()

    async def scenario() -> None:
        runtime = Runtime.start(RuntimeSettings(registry_url=f"glue://{name}"))
        try:
            for ddl, event_ids in STEPS:
                table = table_from_ddl(ddl, schema="fg")
                done = await runtime.register_table(table, options,
                                                    topic_rule=TOPIC.format(table.table))
                assert done.key is not None
                for registered in (done.key, done.value):
                    assert registered.glue_id == versions[registered.subject,
                                                          registered.version]
                    stored = glue.get_schema_version(SchemaVersionId=str(registered.glue_id))
                    assert registered.schema == stored["SchemaDefinition"]  # byte for byte
                # The versions just registered (the replay holds later ones too, as TiCDC's
                # registry did when it had run on).
                resolver = runtime.resolver
                writer = ChangeWriter(TopicSchemas(
                    done.topic, BoundSchema(done.key, await resolver.codec(done.key.id, key=True)),
                    BoundSchema(done.value, await resolver.codec(done.value.id))))
                for event_id in event_ids:
                    event, message = events[event_id], messages[event_id]
                    row = _row(event.get("columns"))
                    old = _row(event.get("pre_columns"))
                    [(_, key, value)] = writer.write(
                        event["event_kind"], row, old_row=old, commit_ts=event["commit_ts"])
                    assert (key, value) == (_ticdc_bytes(message["key"], versions),
                                            _ticdc_bytes(message["value"], versions)), event_id
                    await _decodes_ticdc(runtime, message, versions, row or old)
        finally:
            await runtime.stop()

    asyncio.run(scenario())
    # flatavro added no version: each registration found TiCDC's.
    for subject, number in versions:
        latest = glue.get_schema(SchemaId={"RegistryName": name, "SchemaName": subject})
        assert latest["LatestSchemaVersion"] == max(
            n for s, n in versions if s == subject), (subject, number)


async def _decodes_ticdc(runtime: Runtime, message: dict[str, Any],
                         versions: dict[tuple[str, int], uuid.UUID],
                         row: dict[str, Any] | None) -> None:
    """TiCDC's own message part decodes with flatavro to the event's row."""
    for part in ("key", "value"):
        raw = _ticdc_bytes(message[part], versions)
        if raw is None:
            continue
        body = json.loads((await decode_raw(runtime.resolver, raw, key=part == "key")).body)
        [decoded] = body["messages"]
        assert decoded[f"{part}_schema_id"] == str(uuid.UUID(bytes=raw[2:18]))
        assert row is not None
        got = {k: v for k, v in decoded[part].items() if not k.startswith("_tidb")}
        assert got == {k: row[k] for k in got}, (part, message["event_id"])


def test_vectors_are_what_the_readme_says() -> None:
    """The golden run's facts the docs quote: header 03 00, TiCDC creates with NONE."""
    creates = [json.loads(c["request_body"]) for run in CALLS.values() for c in run
               if c["x_amz_target"] == "AWSGlue.CreateSchema"]
    assert creates and {(c["DataFormat"], c["Compatibility"]) for c in creates} == {
        ("AVRO", "NONE")}
    heads = {bytes.fromhex(m[p]["hex"])[:2] for m in MESSAGES["messages"]
             for p in ("key", "value") if m[p]["hex"] is not None}
    assert heads == {b"\x03\x00"}
