"""The installed ``flatavro serve`` refuses a registry path it cannot use: one line, no start."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.cli.test_schema_cmd import FLATAVRO
from tests.support.harness import free_port


def serve(registry_path: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLATAVRO_")}
    env.update(FLATAVRO_REGISTRY_DB_PATH=registry_path, FLATAVRO_PORT=str(free_port()))
    return subprocess.run([str(FLATAVRO), "serve"], env=env, capture_output=True, text=True,
                          timeout=60, check=False)


@pytest.mark.parametrize("where", ["missing directory", "under a file", "unwritable"])
def test_an_unusable_registry_path_is_one_line_and_no_start(tmp_path: Path, where: str) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x", encoding="utf-8")
    # /proc refuses new files even to root, for whom chmod would not.
    path = {"missing directory": str(tmp_path / "typo" / "r.sqlite"),
            "under a file": str(afile / "r.sqlite"), "unwritable": "/proc/flatavro.sqlite"}[where]
    done = serve(path)
    assert done.returncode == 2 and done.stdout == ""
    [line] = done.stderr.splitlines()
    assert line.startswith("flatavro: error [registry_store_unavailable]: ")
    assert path in line and "FLATAVRO_REGISTRY_DB_PATH" in line and "--registry-file" not in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]
