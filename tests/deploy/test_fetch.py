"""deploy/jvm/fetch.sh puts the jars where FLATAVRO_JVM_CACHE says, relative paths included
(Maven resolves a relative output directory against the pom's folder, which once left the
cache empty and the Spark tests without spark-avro)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_relative_cache_holds_the_jars(tmp_path: Path) -> None:
    relative = os.path.relpath(tmp_path / "cache", ROOT)
    done = subprocess.run(["deploy/jvm/fetch.sh", "kafka"], cwd=ROOT, capture_output=True,
                          text=True, timeout=600,
                          env={**os.environ, "FLATAVRO_JVM_CACHE": relative})
    assert done.returncode == 0, done.stderr
    jars = list((tmp_path / "cache" / "kafka").glob("kafka_2.13-*.jar"))
    assert len(jars) == 1
    assert not (ROOT / "deploy" / "jvm" / relative).exists()
    assert "\x1b" not in done.stderr and "[0m" not in done.stderr
