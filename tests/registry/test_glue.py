"""AWS Glue's Schema Registry as flatavro's registry (``glue://``), against moto's server.

moto runs Glue's API as AWS documents it but checks no compatibility: what flatavro checks
itself (at the Glue schema's own level) is shown here to be refused before Glue is asked.
"""

from __future__ import annotations

import asyncio
import base64
import json
import subprocess
import uuid
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from service.api.models import CONVERT_EXAMPLES
from service.codec.decode import decode_raw
from service.core.errors import FramingError
from service.core.framing import GLUE_HEADER_SIZE, unframe_any
from service.registry.errors import (
    IncompatibleSchemaError,
    InvalidRegistryUrlError,
    InvalidSchemaError,
    RegistryUnsupportedError,
    SchemaNotFoundError,
)
from service.registry.glue import GlueLocation, GlueSchemaRegistry
from service.usecases.runtime import Runtime
from service.usecases.settings import RuntimeSettings
from tests.cli.test_schema_cmd import FLATAVRO
from tests.support.glue import MotoGlue

V1 = json.dumps({"type": "record", "name": "t", "fields": [{"name": "id", "type": "int"}]})
V2 = json.dumps({"type": "record", "name": "t", "fields": [
    {"name": "id", "type": "int"}, {"name": "note", "type": ["null", "string"],
                                    "default": None}]})
NOT_BACKWARD = json.dumps({"type": "record", "name": "t", "fields": [
    {"name": "id", "type": "int"}, {"name": "must", "type": "string"}]})


@pytest.fixture(scope="module")
def moto() -> Iterator[MotoGlue]:
    server = MotoGlue()
    yield server
    server.stop()


def _registry(moto: MotoGlue, name: str, **options: Any) -> GlueSchemaRegistry:
    moto.client().create_registry(RegistryName=name)
    return GlueSchemaRegistry(GlueLocation(name), client=moto.client(), **options)


def test_register_creates_then_adds_versions_and_is_idempotent(moto: MotoGlue) -> None:
    glue = _registry(moto, "reg-idem")

    async def scenario() -> None:
        first = await glue.register("orders-value", V1)
        again = await glue.register("orders-value", V1)
        second = await glue.register("orders-value", V2)
        assert (first.version, second.version) == (1, 2)
        assert again == first and first.glue_id is not None
        assert second.glue_id != first.glue_id
        # What Glue holds: the schema made with AVRO and the configured level, both versions.
        about = moto.client().get_schema(
            SchemaId={"RegistryName": "reg-idem", "SchemaName": "orders-value"})
        assert (about["DataFormat"], about["Compatibility"]) == ("AVRO", "BACKWARD")
        assert about["LatestSchemaVersion"] == 2
        latest = await glue.get_version("orders-value")
        assert (latest.version, latest.schema, latest.glue_id) == (2, V2, second.glue_id)
        assert await glue.versions("orders-value") == [1, 2]
        # A fresh process (new numbers) finds a version by the UUID a frame carries.
        other = GlueSchemaRegistry(GlueLocation("reg-idem"), client=moto.client())
        found = await other.glue_version(first.glue_id)
        assert (found.subject, found.version, found.schema) == ("orders-value", 1, V1)
        assert await other.schema_by_id(found.id) == V1

    asyncio.run(scenario())


def test_flatavro_checks_what_moto_does_not(moto: MotoGlue) -> None:
    """moto takes an incompatible version at BACKWARD; flatavro refuses it first, names the
    column, and Glue is left with the versions it had."""
    glue = _registry(moto, "reg-compat")
    raw = moto.client()
    schema_id = {"RegistryName": "reg-compat", "SchemaName": "t-value"}

    async def scenario() -> None:
        await glue.register("t-value", V1)
        with pytest.raises(IncompatibleSchemaError, match="must"):
            await glue.register("t-value", NOT_BACKWARD)
        assert raw.get_schema(SchemaId=schema_id)["LatestSchemaVersion"] == 1
        verdict = await glue.check_compatibility("t-value", NOT_BACKWARD)
        assert not verdict.compatible
        # moto itself accepts it (the gap flatavro fills):
        raw.register_schema_version(SchemaId=schema_id, SchemaDefinition=NOT_BACKWARD)
        assert raw.get_schema(SchemaId=schema_id)["LatestSchemaVersion"] == 2
        # At NONE (TiCDC's choice) anything goes; DISABLED takes no new version.
        raw.update_schema(SchemaId=schema_id, Compatibility="NONE")
        assert (await glue.register("t-value", V2)).version == 3
        raw.update_schema(SchemaId=schema_id, Compatibility="DISABLED")
        with pytest.raises(IncompatibleSchemaError, match="DISABLED"):
            await glue.register("t-value", V1.replace('"t"', '"u"'))
        with pytest.raises(InvalidSchemaError):
            await glue.register("t-value", "{not avro")

    asyncio.run(scenario())


def test_missing_registry_and_unknown_version_are_named(moto: MotoGlue) -> None:
    missing = GlueSchemaRegistry(GlueLocation("no-such-registry"), client=moto.client())
    present = _registry(moto, "reg-errors")
    unknown = uuid.UUID(int=7)

    async def scenario() -> None:
        with pytest.raises(RegistryUnsupportedError, match="no-such-registry must exist"):
            await missing.probe(5)
        with pytest.raises(RegistryUnsupportedError, match="no-such-registry"):
            await missing.register("t-value", V1)
        await present.probe(5)
        with pytest.raises(SchemaNotFoundError, match=str(unknown)):
            await present.glue_version(unknown)

    asyncio.run(scenario())


def test_glue_urls() -> None:
    assert GlueLocation.parse("glue://cdc?region=eu-west-1&endpoint=http://127.0.0.1:1") == \
        GlueLocation("cdc", "eu-west-1", "http://127.0.0.1:1")
    assert GlueLocation.parse("glue://cdc") == GlueLocation("cdc")
    for bad in ("glue://", "http://cdc", "glue://cdc?regoin=x"):
        with pytest.raises(InvalidRegistryUrlError, match="glue://"):
            GlueLocation.parse(bad)


def _convert(moto: MotoGlue, url: str, tmp_path: Path) -> list[dict[str, Any]]:
    source = tmp_path / "in.ndjson"
    messages = CONVERT_EXAMPLES["canal-json"]["value"]["messages"]
    source.write_text("".join(json.dumps(m) + "\n" for m in messages), encoding="utf-8")
    done = subprocess.run(
        [str(FLATAVRO), "convert", "--protocol", "canal-json", "--registry-url", url,
         "--register", "--enable-tidb-extension", str(source)],
        capture_output=True, text=True, timeout=120, check=False, env=moto.env())
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_convert_writes_glue_frames_that_decode_in_another_process(
        moto: MotoGlue, tmp_path: Path) -> None:
    """`flatavro convert --registry-url glue://...`: the value is framed ``03 00 <UUID of the
    version registered under <topic>-value>`` and its Avro body is the one flatavro writes for
    a Confluent registry; a service started on the same registry decodes it by that UUID."""
    url = moto.registry("reg-convert")
    [message] = _convert(moto, url, tmp_path)
    value = base64.b64decode(message["value"])
    assert value[:2] == b"\x03\x00"
    version_id = uuid.UUID(bytes=value[2:GLUE_HEADER_SIZE])
    stored = moto.client().get_schema_version(SchemaVersionId=str(version_id))
    assert stored["SchemaArn"].endswith(f"/reg-convert/{message['topic']}-value")

    confluent = subprocess.run(
        [str(FLATAVRO), "convert", "--protocol", "canal-json", "--registry-file",
         str(tmp_path / "r.sqlite"), "--register", "--enable-tidb-extension",
         str(tmp_path / "in.ndjson")],
        capture_output=True, text=True, timeout=120, check=False)
    assert confluent.returncode == 0, confluent.stderr
    embedded = base64.b64decode(json.loads(confluent.stdout)["value"])
    assert value[GLUE_HEADER_SIZE:] == embedded[5:]
    assert json.loads(stored["SchemaDefinition"]) == json.loads(
        _embedded_schema(tmp_path / "r.sqlite", f"{message['topic']}-value"))

    async def decoded(raw: bytes) -> dict[str, Any]:
        runtime = Runtime.start(RuntimeSettings(registry_url=url))
        try:
            return json.loads((await decode_raw(runtime.resolver, raw)).body)
        finally:
            await runtime.stop()

    with pytest.MonkeyPatch.context() as env:
        for name, setting in moto.env().items():
            if name.startswith("AWS_"):
                env.setenv(name, setting)
        [row] = asyncio.run(decoded(value))["messages"]
        assert row["value"]["c_int"] == 2147483647
        assert row["value_schema_id"] == str(version_id)
        # AWS's own serializer may deflate the body (compression byte 5): read as well.
        deflated = value[:1] + b"\x05" + value[2:GLUE_HEADER_SIZE] + zlib.compress(
            value[GLUE_HEADER_SIZE:])
        assert asyncio.run(decoded(deflated))["messages"][0]["value"] == row["value"]


def _embedded_schema(path: Path, subject: str) -> str:
    from service.registry.embedded.registry import EmbeddedRegistry

    registry = EmbeddedRegistry(path)
    try:
        return asyncio.run(registry.get_version(subject)).schema
    finally:
        registry.close()


@pytest.mark.parametrize(("message", "offset", "reason"), [
    (b"\x03\x00" + bytes(10), 12, "truncated AWS Glue header"),
    (b"\x03\x01" + bytes(20), 1, "unknown AWS Glue compression byte 0x01"),
    (b"\x03\x05" + bytes(16) + b"not zlib", 18, "does not inflate"),
    (b"\x07" + bytes(20), 0, "magic byte 0x07 at offset 0, expected 0x00"),
], ids=["truncated", "compression", "zlib", "magic"])
def test_bad_glue_frames_name_the_offset(message: bytes, offset: int, reason: str) -> None:
    with pytest.raises(FramingError, match=reason) as raised:
        unframe_any(message)
    assert raised.value.details["offset"] == offset


def test_the_service_on_glue_registers_encodes_and_decodes(
        moto: MotoGlue, monkeypatch: pytest.MonkeyPatch) -> None:
    """`flatavro serve` with FLATAVRO_REGISTRY_URL=glue://...: /v1/tables/register makes the
    Glue schemas, /v1/encode answers Glue frames whose UUID is the registered version's,
    /v1/decode reads them back, /readyz asks Glue; an unknown version is named."""
    from fastapi.testclient import TestClient

    from service.api.app import create_app
    from service.api.settings import Settings

    url = moto.registry("reg-service")
    for name, setting in moto.env().items():
        if name.startswith("AWS_"):
            monkeypatch.setenv(name, setting)
    with TestClient(create_app(Settings(registry_url=url, log_level="WARNING"))) as http:
        assert http.get("/readyz").status_code == 200
        done = http.post("/v1/tables/register", json={
            "ddl": "CREATE TABLE shop.orders (id BIGINT PRIMARY KEY, note VARCHAR(8))"})
        assert done.status_code == 200, done.text
        encoded = http.post("/v1/topics/tidb_shop_orders/encode", json={"records": [
            {"op": "insert", "row": {"id": 7, "note": "hi"}}]})
        assert encoded.status_code == 200, encoded.text
        answer = encoded.json()
        value = base64.b64decode(answer["messages"][0]["value"])
        latest = moto.client().get_schema_version(
            SchemaId={"RegistryName": "reg-service", "SchemaName": "tidb_shop_orders-value"},
            SchemaVersionNumber={"LatestVersion": True})
        assert answer["value_schema_id"] == latest["SchemaVersionId"]
        assert value[:GLUE_HEADER_SIZE] == b"\x03\x00" + uuid.UUID(
            latest["SchemaVersionId"]).bytes
        decoded = http.post("/v1/decode", json={"messages": [
            {"key": answer["messages"][0]["key"], "value": answer["messages"][0]["value"]}]})
        assert decoded.status_code == 200, decoded.text
        assert decoded.json()["messages"][0]["value"] == {"id": 7, "note": "hi"}
        # The console's messages page names the Glue version and its schema's version.
        from bs4 import BeautifulSoup

        pasted = http.post("/console/messages", data={"messages": " ".join(
            (answer["messages"][0]["key"], answer["messages"][0]["value"]))})
        assert pasted.status_code == 200, pasted.text
        cells = BeautifulSoup(pasted.text, "html.parser").get_text(" ", strip=True)
        assert f"Glue version {latest['SchemaVersionId']}" in cells
        assert "tidb_shop_orders-value v1" in cells
        unknown = base64.b64encode(value[:2] + uuid.UUID(int=9).bytes + value[18:]).decode()
        refused = http.post("/v1/decode", json={"messages": [{"value": unknown}]})
        assert refused.status_code == 422
        [error] = refused.json()["errors"]
        assert error["offset"] == 2 and str(uuid.UUID(int=9)) in error["message"]


def test_a_schema_made_by_another_process_meanwhile_gets_a_version(moto: MotoGlue) -> None:
    """Two bridges registering one new table: the one whose CreateSchema comes second (Glue:
    AlreadyExistsException) adds its definition as a version instead of failing."""
    raw = moto.client()
    raw.create_registry(RegistryName="reg-race")

    class FirstCreateLoses:
        def __getattr__(self, name: str) -> Any:
            return getattr(raw, name)

        def create_schema(self, **request: Any) -> Any:
            raw.create_schema(**{**request, "SchemaDefinition": V1})  # the other process
            return raw.create_schema(**request)

    glue = GlueSchemaRegistry(GlueLocation("reg-race"), client=FirstCreateLoses())
    registered = asyncio.run(glue.register("t-value", V2))
    assert (registered.version, registered.schema) == (2, V2)
