"""moto's server as the tests' AWS Glue Schema Registry, on a loopback port.

moto (PyPI) emulates the Glue API TiCDC uses (CreateRegistry, GetRegistry, CreateSchema,
RegisterSchemaVersion, GetSchemaVersion, GetSchemaByDefinition, GetSchema, UpdateSchema); it
does not check compatibility at all, and has no ListSchemas/ListSchemaVersions.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from tests.support.harness import free_port

_MOTO = Path(sys.executable).with_name("moto_server")


class MotoGlue:
    """A running moto server; `client()` is a boto3 Glue client of it."""

    region = "us-east-1"
    access_key, secret_key = "flatavro-test", "moto-secret"

    def __init__(self) -> None:
        assert _MOTO.exists(), f"{_MOTO} is missing: make test installs moto (the dev extra)"
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._process = subprocess.Popen(
            [str(_MOTO), "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=self.env())
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"{self.endpoint}/moto-api/", timeout=1)
                return
            except httpx.TransportError:
                if self._process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise AssertionError("moto_server did not start") from None
                time.sleep(0.1)

    def env(self, **changes: str) -> dict[str, str]:
        """This process's environment with the AWS variables pointing at moto."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        env |= {"AWS_ACCESS_KEY_ID": self.access_key, "AWS_SECRET_ACCESS_KEY": self.secret_key,
                "AWS_REGION": self.region,
                "AWS_DEFAULT_REGION": self.region, "AWS_ENDPOINT_URL_GLUE": self.endpoint}
        return env | changes

    def client(self) -> Any:
        """A boto3 Glue client of this server."""
        import boto3

        return boto3.client("glue", endpoint_url=self.endpoint, region_name=self.region,
                            aws_access_key_id=self.access_key,
                            aws_secret_access_key=self.secret_key)

    def registry(self, name: str) -> str:
        """Create the Glue registry `name`; its flatavro URL."""
        self.client().create_registry(RegistryName=name)
        return f"glue://{name}?region={self.region}&endpoint={self.endpoint}"

    def stop(self) -> None:
        self._process.terminate()
        self._process.wait(10)
