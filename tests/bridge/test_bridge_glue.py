"""The bridge with AWS Glue's Schema Registry (moto's server): it registers the tables'
schemas in Glue the way TiCDC's Glue schema manager does and writes Glue-framed messages,
exactly the converter's for the same input, once each, through a real broker."""

from __future__ import annotations

import subprocess
import sys
import uuid

import pytest

from service.cdc.catalog import Protocol
from service.core.framing import GLUE_HEADER_SIZE
from service.usecases.settings import RuntimeSettings
from tests.bridge.test_bridge import create_topic
from tests.bridge.test_bridge_protocols import (
    exactly_once,
    expected,
    produce,
    source_messages,
)
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
        want = expected(Protocol.CANAL_JSON, RuntimeSettings(registry_url=url), messages, rule)
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

