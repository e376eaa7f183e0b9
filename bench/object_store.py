"""A throw-away SeaweedFS (deploy/s3/seaweedfs.sh: S3 on loopback) for the benchmarks that
read claim-check objects from S3, and an upload of a folder's files into one of its buckets."""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.kafka_broker import ROOT, free_port

__all__ = ["S3", "seaweedfs", "upload"]

SEAWEEDFS_SH = ROOT / "deploy" / "s3" / "seaweedfs.sh"


@dataclass(frozen=True, slots=True)
class S3:
    """A running store: its endpoint and its one identity."""

    endpoint: str
    access_key: str
    secret_key: str
    data: Path

    def client(self) -> Any:
        import boto3

        return boto3.session.Session().client(
            "s3", endpoint_url=self.endpoint, region_name="us-east-1",
            aws_access_key_id=self.access_key, aws_secret_access_key=self.secret_key)

    def bucket(self, name: str) -> None:
        subprocess.run([str(SEAWEEDFS_SH), "bucket", str(self.data), name], check=True,
                       capture_output=True, timeout=120)

    def uri(self, bucket: str, prefix: str) -> str:
        """The claim-check-storage-uri of `bucket`/`prefix`, endpoint and credentials in
        TiDB's query options."""
        return (f"s3://{bucket}/{prefix}?endpoint={self.endpoint}&access-key={self.access_key}"
                f"&secret-access-key={self.secret_key}&force-path-style=true")


@contextmanager
def seaweedfs(data: Path) -> Iterator[S3]:
    """Start SeaweedFS with its data in `data` (built into .cache/s3 by make setup/test, else
    by the script, which takes minutes); stops it (SIGKILL: the data is thrown away)."""
    store = S3(f"http://127.0.0.1:{free_port()}", "bench", secrets.token_urlsafe(12), data)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env |= {"AWS_ACCESS_KEY_ID": store.access_key, "AWS_SECRET_ACCESS_KEY": store.secret_key}
    subprocess.run([str(SEAWEEDFS_SH), "start", str(data), store.endpoint.rsplit(":", 1)[1]],
                   check=True, capture_output=True, timeout=900, env=env)
    try:
        yield store
    finally:
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            os.kill(int((data / "weed.pid").read_text()), signal.SIGKILL)


def upload(store: S3, folder: Path, bucket: str, prefix: str) -> None:
    """Every file of `folder` as `prefix`/<name> in `bucket` (created here)."""
    store.bucket(bucket)
    client = store.client()
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda f: client.put_object(Bucket=bucket, Key=f"{prefix}/{f.name}",
                                                  Body=f.read_bytes()), folder.iterdir()))
