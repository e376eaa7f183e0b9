"""`make dist` builds the zip Spark gets through --py-files, and the job imports from it."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from tests.support.deploy import ROOT, make_env

# With only the zip in front of sys.path, import the job and report where every flatavro
# module came from (the editable install must not stand in for a module the zip lacks).
IMPORT_FROM_ZIP = """
import sys
sys.path.insert(0, sys.argv[1])
import spark_jobs.bulk_read, spark_jobs.jobs.bulk_read
for name, module in sorted(sys.modules.items()):
    if name.split(".")[0] in {"service", "spark_jobs"}:
        print(name, getattr(module, "__file__", None))
"""


def make_dist(output: Path) -> str:
    done = subprocess.run(["make", "dist", f"DIST={output}"], cwd=ROOT, capture_output=True,
                          text=True, check=True, env=make_env())
    return done.stdout


def tracked_sources() -> set[str]:
    listed = subprocess.run(["git", "ls-files", "service", "spark_jobs"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout.split()
    return {name for name in listed if (ROOT / name).exists()}


def test_make_dist_zips_the_packages_without_caches(tmp_path: Path) -> None:
    output = tmp_path / "flatavro.zip"
    said = make_dist(output)
    with zipfile.ZipFile(output) as archive:
        names = set(archive.namelist())
        assert archive.testzip() is None
    assert tracked_sources() <= names
    assert {name.split("/")[0] for name in names} == {"service", "spark_jobs"}
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    assert f"wrote {output}: {len(names)} files" in said


def test_bulk_read_imports_from_the_zip(tmp_path: Path) -> None:
    output = tmp_path / "flatavro.zip"
    make_dist(output)
    done = subprocess.run([sys.executable, "-c", IMPORT_FROM_ZIP, str(output)], cwd=tmp_path,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    loaded = dict(line.split(" ", 1) for line in done.stdout.splitlines())
    assert {"spark_jobs.jobs.bulk_read", "spark_jobs.decoding.transforms",
            "service.core.framing"} <= set(loaded)
    assert {name: path for name, path in loaded.items()
            if not path.startswith(f"{output}/")} == {}
