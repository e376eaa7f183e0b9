"""The README's quickstart (register, encode, decode) pasted against `flatavro serve` with
FLATAVRO_REGISTRY_URL at a fresh Apicurio prints what the README shows for the embedded
registry (a fresh Apicurio hands out the same ids, 1 and 2)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator

import httpx
import pytest

from tests.readme_blocks import SERVICE_ADDRESS, read_blocks, same_output, shell_examples
from tests.support.harness import free_port
from tests.support.parts import FLATAVRO, ROOT, Apicurio
from tests.test_readme import _wait_healthy

QUICKSTART = shell_examples(read_blocks((ROOT / "README.md").read_text(encoding="utf-8")))[:3]


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    apicurio = Apicurio(tmp_path_factory.mktemp("apicurio-fresh"))
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLATAVRO_")}
    env.update(FLATAVRO_PORT=str(port), FLATAVRO_REGISTRY_URL=apicurio.url,
               FLATAVRO_LOG_LEVEL="WARNING")
    server = subprocess.Popen([str(FLATAVRO), "serve"], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        _wait_healthy(f"http://localhost:{port}/healthz", server)
        yield f"localhost:{port}"
    finally:
        server.terminate()
        server.wait(10)
        apicurio.stop()


def test_the_quickstart_is_the_quickstart(service: str) -> None:
    assert ["/v1/tables/register" in QUICKSTART[0].script, "/encode" in QUICKSTART[1].script,
            "/v1/decode" in QUICKSTART[2].script] == [True, True, True]
    for example in QUICKSTART:
        done = subprocess.run(["bash", "-c", SERVICE_ADDRESS.sub(service, example.script)],
                              cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, timeout=120, check=False)
        assert same_output(done.stdout, example.expected), (
            f"README.md:{example.line} printed with Apicurio:\n{done.stdout}\n"
            f"the README shows:\n{example.expected}")


def test_apicurio_holds_what_was_registered(service: str) -> None:
    subjects = httpx.get(f"http://{service}/v1/subjects", timeout=10).json()
    assert {"tidb_shop_orders-key", "tidb_shop_orders-value"} <= set(
        s if isinstance(s, str) else s["subject"] for s in subjects)
