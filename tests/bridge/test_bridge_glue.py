"""The bridge with AWS Glue's Schema Registry (moto's server): it registers the tables'
schemas in Glue the way TiCDC's Glue schema manager does and writes Glue-framed messages,
exactly the converter's for the same input, once each, through a real broker."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from collections import defaultdict

import pytest

from service.cdc.catalog import Protocol
from service.codec.convert import ConvertInput
from service.core.framing import GLUE_HEADER_SIZE
from service.core.options import SchemaOptions
from service.usecases.runtime import Runtime
from service.usecases.settings import RuntimeSettings
from tests.bridge.test_bridge import create_topic
from tests.bridge.test_bridge_protocols import Raw, exactly_once, produce, source_messages
from tests.support.glue import MotoGlue
from tests.support.parts import ROOT, Broker


def test_canal_json_through_the_bridge_into_glue(kafka: Broker,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    moto = MotoGlue()
    try:
        url = moto.registry("cdc")
        source, rule = "src_glue", "glue_{schema}_{table}"
        create_topic(kafka, source)
        messages = source_messages(Protocol.CANAL_JSON, 2, 15)
        produce(kafka, source, messages)
        done = subprocess.run(
            [sys.executable, "-m", "service.cli.main", "bridge", "--protocol", "canal-json",
             "--source-topic", source, "--bootstrap-servers", kafka.bootstrap,
             "--registry-url", url, "--register", "--create-topics", "--group-id", "g",
             "--instance-id", "one", "--topic", rule, "--exit-when-idle", "3"],
            cwd=ROOT, capture_output=True, text=True, timeout=300, check=False, env=moto.env())
        assert done.returncode == 0, done.stderr[-3000:]
        glue = moto.client()
        for name, setting in moto.env().items():
            if name.startswith("AWS_"):
                monkeypatch.setenv(name, setting)
        want = _expected(url, messages, rule)
        assert sorted(want) == ["glue_shop_items", "glue_shop_users"]
        for topic, wanted in want.items():
            latest = glue.get_schema_version(
                SchemaId={"RegistryName": "cdc", "SchemaName": f"{topic}-value"},
                SchemaVersionNumber={"LatestVersion": True})
            header = b"\x03\x00" + uuid.UUID(latest["SchemaVersionId"]).bytes
            assert latest["VersionNumber"] == 1
            assert {value[:GLUE_HEADER_SIZE] for _, value in wanted if value} == {header}
            assert glue.get_schema(SchemaId={"RegistryName": "cdc", "SchemaName":
                                             f"{topic}-key"})["DataFormat"] == "AVRO"
        exactly_once(kafka, want)
    finally:
        moto.stop()


def _expected(url: str, by_partition: dict[int, list[Raw]], rule: str
              ) -> dict[str, list[Raw]]:
    """The converter's messages for the same input, in a process of its own numbering, on
    the versions the bridge registered (found again by their definitions)."""
    async def convert() -> dict[str, list[Raw]]:
        runtime = Runtime.start(RuntimeSettings(registry_url=url))
        out: dict[str, list[Raw]] = defaultdict(list)
        try:
            for partition in sorted(by_partition):
                done = await runtime.converter.convert_raw(Protocol.CANAL_JSON, ConvertInput(
                    by_partition[partition], "raw", rule, False, SchemaOptions()))
                assert not done.pending
                for m in done.messages:
                    out[m.schemas.topic].append((m.key, m.value))
        finally:
            await runtime.stop()
        return out

    return asyncio.run(convert())
