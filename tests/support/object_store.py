"""SeaweedFS (deploy/s3/seaweedfs.sh) as the tests' S3-compatible object store on loopback,
and the two readers of a Delta table on it: Spark (a job's own session, built from the AWS
environment like the jobs', in a child process) and delta-rs.

Run as ``python -m tests.support.object_store TABLE [CHECKPOINT]``: prints the table's rows
(and the checkpoint's committed batches) as JSON, read through S3A.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.support.harness import free_port
from tests.support.parts import ROOT, not_in_fast_tier

SEAWEEDFS_SH = ROOT / "deploy" / "s3" / "seaweedfs.sh"
# The AWS settings a test's environment must not inherit from the machine's.
_AWS_VARIABLES = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                  "AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_ENDPOINT_URL",
                  "AWS_ENDPOINT_URL_S3", "AWS_REGION", "AWS_DEFAULT_REGION",
                  "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE")


class ObjectStore:
    """A running SeaweedFS: S3 at `endpoint`, one identity (`access_key`, `secret_key`)."""

    access_key = "flatavro-test"
    secret_key = "s3cr3t/+key-93be"  # '/' and '+': characters a signature must not mangle

    def __init__(self, data: Path) -> None:
        """Start SeaweedFS with its data in `data` (built by make setup/test; by the script
        when missing, which takes minutes)."""
        not_in_fast_tier("SeaweedFS", "spark")
        self.data, self.port = data, free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        done = subprocess.run([str(SEAWEEDFS_SH), "start", str(data), str(self.port)],
                              capture_output=True, text=True, timeout=900, check=False,
                              env=self.env())
        assert done.returncode == 0, f"SeaweedFS did not start:\n{done.stderr[-3000:]}"

    def bucket(self, name: str) -> str:
        """Create the bucket `name`; its ``s3a://`` root."""
        done = subprocess.run([str(SEAWEEDFS_SH), "bucket", str(self.data), name],
                              capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stderr
        return f"s3a://{name}"

    def env(self, **changes: str) -> dict[str, str]:
        """This process's environment without the machine's AWS settings, plus the store's
        endpoint and identity in the standard AWS variables, then `changes` (an empty value
        removes a variable)."""
        env = {k: v for k, v in os.environ.items() if k not in _AWS_VARIABLES}
        env |= {"AWS_ENDPOINT_URL": self.endpoint, "AWS_ACCESS_KEY_ID": self.access_key,
                "AWS_SECRET_ACCESS_KEY": self.secret_key}
        env |= changes
        return {k: v for k, v in env.items() if v}

    def storage_options(self) -> dict[str, str]:
        """delta-rs's options for this store (plain HTTP on loopback, path-style)."""
        return {"AWS_ENDPOINT_URL": self.endpoint, "AWS_ACCESS_KEY_ID": self.access_key,
                "AWS_SECRET_ACCESS_KEY": self.secret_key, "AWS_REGION": "us-east-1",
                "AWS_ALLOW_HTTP": "true"}

    def stop(self) -> None:
        """SIGKILL the server (seaweedfs.sh's SIGTERM first waits its 20 s out: weed's graceful
        shutdown hangs once the filer stops); the store's data is the test's to discard."""
        pid_file = self.data / "weed.pid"
        if pid_file.exists():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid_file.read_text()), signal.SIGKILL)
            pid_file.unlink()


def spark_read(table: str, *, env: dict[str, str], checkpoint: str | None = None
               ) -> dict[str, Any]:
    """The rows of the Delta table at `table` (``s3a://``) as Spark reads them in a session of
    its own built like a job's from `env` (sorted tuples, decimals as Decimal), and the
    committed batch ids of `checkpoint` (decimals and timestamps come back as strings)."""
    done = subprocess.run([sys.executable, "-m", "tests.support.object_store", table,
                           *([checkpoint] if checkpoint else [])], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    read: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    read["rows"] = sorted(tuple(row) for row in read["rows"])
    return read


def _main(table: str, checkpoint: str | None) -> None:
    from spark_jobs.session import build_session

    spark = build_session("flatavro-tests-s3a", "local[1]", paths=[table, checkpoint])
    try:
        df = spark.read.format("delta").load(table)
        rows = [[row[c] for c in df.columns] for row in df.collect()]
        commits: list[int] = []
        if checkpoint:
            jvm, jsc = spark.sparkContext._jvm, spark.sparkContext._jsc
            assert jvm is not None and jsc is not None
            conf = jsc.hadoopConfiguration()
            folder = jvm.org.apache.hadoop.fs.Path(f"{checkpoint.rstrip('/')}/commits")
            commits = sorted(int(s.getPath().getName()) for s in
                             folder.getFileSystem(conf).listStatus(folder)
                             if s.getPath().getName().isdigit())
        print(json.dumps({"columns": df.columns, "rows": rows, "commits": commits},
                         default=str))
    finally:
        spark.stop()


if __name__ == "__main__":
    _main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)
