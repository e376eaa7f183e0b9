"""Schema resolution on the driver (no Spark session): a registry that requires basic auth (and
one over TLS with a private CA), read with the service's client and the ``FLATAVRO_REGISTRY_*``
settings; ``--registry-url`` over ``FLATAVRO_REGISTRY_URL``; ``--service-url`` as the service's
embedded registry, with an API key; one-line errors; what executors import."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from service.api.app import create_app
from service.api.settings import Settings
from service.registry.embedded.registry import EmbeddedRegistry
from service.registry.embedded.rest import create_registry_app
from spark_jobs.decoding.registry import resolve_schemas
from spark_jobs.errors import JobError
from spark_jobs.settings.config import JobConfig, parse_args, parse_stream_args
from tests.support.harness import ServedApp, free_port

USER, PASSWORD = "job", "s3cret-pw"


def record(*fields: str) -> str:
    return json.dumps({"type": "record", "name": "R", "namespace": "shop",
                       "fields": [{"name": f, "type": ["null", "string"], "default": None}
                                  for f in fields]})


class BasicAuth:
    """Answers 401 (as Confluent does) to any request without the expected Basic header."""

    def __init__(self, app: ASGIApp, user: str, password: str) -> None:
        self.app = app
        self.expected = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
        self.seen: list[str] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = dict(scope["headers"]).get(b"authorization", b"").decode()
            self.seen.append(given)
            if given != self.expected:
                denied = JSONResponse({"error_code": 401, "message": "Unauthorized"},
                                      status_code=401,
                                      headers={"WWW-Authenticate": 'Basic realm="registry"'})
                await denied(scope, receive, send)
                return
        await self.app(scope, receive, send)


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.upper().startswith("FLATAVRO_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("FLATAVRO_REGISTRY_RETRY_BUDGET", "0")  # fail fast when unreachable


@pytest.fixture
def guarded(tmp_path: Path) -> Iterator[tuple[str, BasicAuth]]:
    """The embedded registry's REST app behind basic auth, holding topic ``shop``: two value
    versions and a key."""
    registry = EmbeddedRegistry(tmp_path / "r.sqlite")
    app = BasicAuth(create_registry_app(registry), USER, PASSWORD)
    served = ServedApp(app).start()
    for subject, schema in [("shop-value", record("id")), ("shop-value", record("id", "name")),
                            ("shop-key", record("id"))]:
        done = httpx.post(f"{served.url}/subjects/{subject}/versions", auth=(USER, PASSWORD),
                          json={"schema": schema}, timeout=10)
        assert done.status_code == 200, done.text
    yield served.url, app
    served.stop()
    registry.close()


def login(monkeypatch: pytest.MonkeyPatch, password: str = PASSWORD) -> None:
    monkeypatch.setenv("FLATAVRO_REGISTRY_USERNAME", USER)
    monkeypatch.setenv("FLATAVRO_REGISTRY_PASSWORD", password)


def config(topic: str = "shop", registry_url: str | None = None) -> JobConfig:
    return JobConfig(topic=topic, output="unused", registry_url=registry_url)


def test_a_registry_that_requires_basic_auth(guarded: tuple[str, BasicAuth],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    url, app = guarded
    monkeypatch.setenv("FLATAVRO_REGISTRY_URL", url)
    login(monkeypatch)
    schemas = resolve_schemas(config())
    assert schemas.topic == "shop"
    assert schemas.value.subject == "shop-value"
    assert schemas.value.field_names() == ["id", "name"]
    assert [json.loads(s) for s in schemas.value.by_id.values()] == [  # in version order
        json.loads(record("id")), json.loads(record("id", "name"))]
    assert schemas.value.by_id[schemas.value.latest_id] == schemas.value.latest
    assert schemas.key is not None and json.loads(schemas.key.latest) == json.loads(record("id"))
    assert app.seen[-1] == app.expected  # sent from the environment's credentials


def test_resolution_from_inside_a_running_event_loop(guarded: tuple[str, BasicAuth],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A notebook runs its cells in an event loop; the job's `run` still resolves."""
    url, _ = guarded
    login(monkeypatch)

    async def cell() -> list[str]:
        return resolve_schemas(config(registry_url=url)).value.field_names()

    assert asyncio.run(cell()) == ["id", "name"]


def test_the_flag_wins_over_the_environment(guarded: tuple[str, BasicAuth],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    url, _ = guarded
    monkeypatch.setenv("FLATAVRO_REGISTRY_URL", f"http://127.0.0.1:{free_port()}")
    login(monkeypatch)
    assert resolve_schemas(config(registry_url=url)).value.field_names() == ["id", "name"]


@pytest.mark.parametrize("password", [None, "wrong"])
def test_refused_credentials_are_one_line(guarded: tuple[str, BasicAuth],
                                          monkeypatch: pytest.MonkeyPatch,
                                          password: str | None) -> None:
    url, _ = guarded
    if password:
        login(monkeypatch, password)
    with pytest.raises(JobError) as caught:
        resolve_schemas(config(registry_url=url))
    assert str(caught.value) == (
        f"the schema registry at {url} refused access to subject shop-value (401); "
        f"credentials come from FLATAVRO_REGISTRY_USERNAME and FLATAVRO_REGISTRY_PASSWORD, or "
        f"FLATAVRO_REGISTRY_BEARER_TOKEN")


def test_unknown_topic_and_unreachable_registry(guarded: tuple[str, BasicAuth],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    url, _ = guarded
    login(monkeypatch)
    with pytest.raises(JobError) as caught:
        resolve_schemas(config("nope", url))
    assert str(caught.value) == f"subject nope-value is not registered at {url} (unknown topic?)"
    down = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(JobError) as caught:
        resolve_schemas(config(registry_url=down))
    assert str(caught.value) == (f"cannot reach {down} (reading subject shop-value): "
                                 f"connection refused")


def test_credentials_in_the_url_stay_out_of_messages() -> None:
    down = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(JobError) as caught:
        resolve_schemas(config(registry_url=down.replace("//", f"//{USER}:{PASSWORD}@")))
    assert PASSWORD not in str(caught.value) and down in str(caught.value)


def test_no_registry_or_bad_settings_are_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(JobError, match="^no schema source: pass --service-url or "
                                       "--registry-url, or set FLATAVRO_REGISTRY_URL$"):
        resolve_schemas(config())
    monkeypatch.setenv("FLATAVRO_REGISTRY_TIMEOUT", "soon")
    with pytest.raises(JobError, match="^invalid settings: FLATAVRO_REGISTRY_TIMEOUT: "):
        resolve_schemas(config(registry_url="http://r:8081"))


def test_the_command_lines_take_the_registry_from_the_environment(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    bulk = ["--topic", "t", "--bootstrap-servers", "b:9092", "--output", "o"]
    stream = ["--topic", "t", "--bootstrap-servers", "b:9092", "--table-path", "p",
              "--checkpoint", "c"]
    for parse, argv in ((parse_args, bulk), (parse_stream_args, stream)):
        with pytest.raises(SystemExit) as exited:
            parse(argv)
        assert exited.value.code == 2
        assert capsys.readouterr().err.splitlines()[-1].endswith(
            "error: one of the arguments --service-url --registry-url is required (or set "
            "FLATAVRO_REGISTRY_URL) (see --help)")
        with pytest.raises(SystemExit):
            parse([*argv, "--service-url", "http://s", "--registry-url", "http://r"])
        assert "not allowed with argument" in capsys.readouterr().err
        assert parse([*argv, "--registry-url", "http://r"]).registry_url == "http://r"
        monkeypatch.setenv("FLATAVRO_REGISTRY_URL", "http://from-env")
        parsed = parse(argv)
        assert parsed.registry_url is None and parsed.service_url is None  # resolved later
        assert parse([*argv, "--service-url", "http://s"]).service_url == "http://s"
        monkeypatch.delenv("FLATAVRO_REGISTRY_URL")


def test_executors_import_no_registry_client_or_settings() -> None:
    """What an executor may import of the jobs (transforms, and through it schemas and
    config) pulls in neither pydantic-settings nor an HTTP client."""
    code = ("import sys, spark_jobs.decoding.transforms, spark_jobs.decoding.schemas, "
            "spark_jobs.settings.config; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "{'pydantic_settings', 'pydantic', 'httpx'} or m.startswith('service.registry') "
            "or m == 'spark_jobs.decoding.registry'))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True, cwd=Path(__file__).resolve().parents[2])
    assert done.stdout.strip() == "[]"


class ServedTLS(ServedApp):
    """`app` over HTTPS with a self-signed certificate for 127.0.0.1 (made by openssl)."""

    def __init__(self, app: ASGIApp, directory: Path) -> None:
        super().__init__(app)
        self.cert, key = directory / "cert.pem", directory / "key.pem"
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                        "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                        "-keyout", str(key), "-out", str(self.cert)],
                       capture_output=True, check=True, timeout=60)
        self.server = uvicorn.Server(uvicorn.Config(
            app, host="127.0.0.1", port=self.port, log_level="error", lifespan="off",
            log_config=None, ssl_certfile=str(self.cert), ssl_keyfile=str(key)))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def start(self) -> ServedTLS:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            assert time.monotonic() < deadline, "the TLS server did not start within 10 s"
            time.sleep(0.05)
        return self


def test_tls_settings_are_the_services(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    registry = EmbeddedRegistry(tmp_path / "r.sqlite")
    asyncio.run(registry.register("shop-value", record("id")))
    served = ServedTLS(BasicAuth(create_registry_app(registry), USER, PASSWORD), tmp_path).start()
    try:
        monkeypatch.setenv("FLATAVRO_REGISTRY_URL", served.url)
        login(monkeypatch)
        with pytest.raises(JobError) as caught:  # a private CA the job was not told about
            resolve_schemas(config())
        assert str(caught.value).startswith(
            f"cannot reach {served.url} (reading subject shop-value): TLS: certificate verify "
            f"failed")
        assert str(caught.value).endswith(
            "(TLS is checked with FLATAVRO_REGISTRY_CA_BUNDLE and FLATAVRO_REGISTRY_VERIFY_TLS)")
        monkeypatch.setenv("FLATAVRO_REGISTRY_CA_BUNDLE", str(served.cert))
        assert resolve_schemas(config()).value.field_names() == ["id"]
        monkeypatch.delenv("FLATAVRO_REGISTRY_CA_BUNDLE")
        monkeypatch.setenv("FLATAVRO_REGISTRY_VERIFY_TLS", "false")
        assert resolve_schemas(config()).value.field_names() == ["id"]
    finally:
        served.stop()
        registry.close()


def test_a_registry_error_is_one_line_naming_the_subject(monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    async def broken(scope: Scope, receive: Receive, send: Send) -> None:
        await JSONResponse({"error_code": 50001, "message": "store\nunavailable"},
                           status_code=500)(scope, receive, send)

    served = ServedApp(broken).start()
    try:
        with pytest.raises(JobError) as caught:
            resolve_schemas(config(registry_url=served.url))
    finally:
        served.stop()
    assert str(caught.value).startswith(f"reading subject shop-value from {served.url} failed: ")
    assert "500" in str(caught.value) and "store unavailable" in str(caught.value)


def test_a_service_protecting_reads_is_read_with_its_key(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--service-url reads the service's embedded registry (its Confluent API under
    /registry), as --registry-url <service>/registry does; a service with FLATAVRO_API_KEYS and
    FLATAVRO_PROTECT_READS takes one of its keys as the bearer token or the basic-auth
    password, from the same FLATAVRO_REGISTRY_* settings."""
    settings = Settings(registry_db_path=str(tmp_path / "r.sqlite"), log_level="WARNING",
                        api_keys=["the-key"], protect_reads=True)
    served = ServedApp(create_app(settings), health_path="/healthz", lifespan="on").start()
    try:
        done = httpx.post(f"{served.url}/v1/tables/register", timeout=30,
                          headers={"Authorization": "Bearer the-key"},
                          json={"ddl": "CREATE TABLE shop.k (id INT PRIMARY KEY)",
                                "topic": "keyed"})
        assert done.status_code == 200, done.text
        registry = f"{served.url}/registry"
        sources = [JobConfig(topic="keyed", output="unused", service_url=served.url),
                   config("keyed", registry)]
        for source in sources:
            with pytest.raises(JobError) as caught:
                resolve_schemas(source)
            assert str(caught.value) == (
                f"the schema registry at {registry} refused access to subject keyed-value "
                f"(401); credentials come from FLATAVRO_REGISTRY_USERNAME and "
                f"FLATAVRO_REGISTRY_PASSWORD, or FLATAVRO_REGISTRY_BEARER_TOKEN")
        monkeypatch.setenv("FLATAVRO_REGISTRY_BEARER_TOKEN", "the-key")
        for source in sources:
            schemas = resolve_schemas(source)
            assert schemas.key is not None and schemas.value.field_names() == ["id"]
        monkeypatch.delenv("FLATAVRO_REGISTRY_BEARER_TOKEN")
        login(monkeypatch, "the-key")
        assert resolve_schemas(sources[0]).value.field_names() == ["id"]
    finally:
        served.stop()


def test_a_service_with_an_external_registry_is_no_schema_source(
        guarded: tuple[str, BasicAuth]) -> None:
    """A service in front of an external registry serves no /registry: the job names the
    fix (read that registry itself)."""
    url, _ = guarded
    settings = Settings(registry_url=url, registry_username=USER, registry_password=PASSWORD,
                        log_level="WARNING")
    served = ServedApp(create_app(settings), health_path="/healthz", lifespan="on").start()
    try:
        with pytest.raises(JobError) as caught:
            resolve_schemas(JobConfig(topic="shop", output="unused", service_url=served.url))
    finally:
        served.stop()
    assert str(caught.value) == (
        f"the service at {served.url} serves no embedded registry at /registry (it uses an "
        f"external one): pass that registry as --registry-url")
