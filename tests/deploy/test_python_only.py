"""The service's install and imports are Python-only: pyspark is the `spark` extra's alone."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

from tests.support.deploy import ROOT

JVM_PACKAGES = {"pyspark", "py4j", "delta-spark", "deltalake", "pyiceberg"}

# Imports every module of the packages named in argv with pyspark and py4j refused, as on a
# machine where `make run` installed the service alone; prints how many modules it imported.
IMPORT_ALL = """
import importlib, importlib.abc, pkgutil, sys

class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {"pyspark", "py4j"}:
            raise ModuleNotFoundError(f"No module named {name!r} (blocked)", name=name)
        return None

sys.meta_path.insert(0, Refuse())
count = 0
for top in sys.argv[1:]:
    package = importlib.import_module(top)
    count += 1
    for info in pkgutil.walk_packages(package.__path__, top + "."):
        importlib.import_module(info.name)
        count += 1
print(count)
"""


def import_all(*packages: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", IMPORT_ALL, *packages], cwd=ROOT,
                          capture_output=True, text=True)


def test_every_service_module_imports_without_pyspark() -> None:
    done = import_all("service")
    assert done.returncode == 0, done.stderr
    modules = [p for p in (ROOT / "service").rglob("*.py") if "__pycache__" not in p.parts]
    compiled = list((ROOT / "service").rglob("*.c"))  # extension modules, built at install
    assert compiled
    assert int(done.stdout) == len(modules) + len(compiled)


def test_the_blocker_does_refuse_pyspark() -> None:
    done = import_all("spark_jobs")
    assert done.returncode != 0
    assert re.search(r"No module named '(pyspark|py4j)", done.stderr), done.stderr
    assert "(blocked)" in done.stderr


def requirement_names(requirements: list[str]) -> set[str]:
    return {re.split(r"[\s\[<>=!~;]", r, maxsplit=1)[0].lower() for r in requirements}


def test_runtime_dependencies_leave_spark_to_its_extra() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    project = pyproject["project"]
    assert not requirement_names(project["dependencies"]) & JVM_PACKAGES
    assert requirement_names(project["optional-dependencies"]["spark"]) == JVM_PACKAGES - {"py4j"}
    # An SPDX string (setuptools >= 77 reads it) instead of the deprecated table: no banner.
    assert project["license"] == "Apache-2.0"
    assert "setuptools>=77,<81" in pyproject["build-system"]["requires"]


def test_spark_versions_agree() -> None:
    """The pyspark pin, compose's --packages and submit.sh's default are one Spark version."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    pinned = project["optional-dependencies"]["spark"][0].split("==")[1]
    compose = (ROOT / "deploy" / "compose.yaml").read_text(encoding="utf-8")
    submit = (ROOT / "deploy" / "spark" / "submit.sh").read_text(encoding="utf-8")
    assert set(re.findall(r"spark-(?:avro|sql-kafka-0-10)_2\.13:([\d.]+)", compose)) == {pinned}
    assert re.search(r"SPARK_VERSION:-([\d.]+)", submit).group(1) == pinned  # type: ignore[union-attr]


def test_delta_versions_agree() -> None:
    """The delta-spark pip pin, the jar deploy/jvm fetches, compose's and submit.sh's are one
    Delta release (the one built for the pinned Spark line)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    pinned = next(r.split("==")[1] for r in project["optional-dependencies"]["spark"]
                  if r.startswith("delta-spark=="))
    pom = (ROOT / "deploy" / "jvm" / "spark-pom.xml").read_text(encoding="utf-8")
    compose = (ROOT / "deploy" / "compose.yaml").read_text(encoding="utf-8")
    submit = (ROOT / "deploy" / "spark" / "submit.sh").read_text(encoding="utf-8")
    assert re.search(r"<delta.version>([\d.]+)<", pom).group(1) == pinned  # type: ignore[union-attr]
    assert set(re.findall(r"delta-spark_2\.13:([\d.]+)", compose)) == {pinned}
    assert re.search(r"DELTA_VERSION:-([\d.]+)", submit).group(1) == pinned  # type: ignore[union-attr]


# Runs `python -m MODULE ARGS` with pyspark, py4j and delta refused (as IMPORT_ALL does).
RUN_BLOCKED = """
import importlib.abc, runpy, sys

class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {"pyspark", "py4j", "delta"}:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Refuse())
module, sys.argv = sys.argv[1], [sys.argv[1], *sys.argv[2:]]
runpy.run_module(module, run_name="__main__", alter_sys=True)
"""


def run_blocked(module: str, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", RUN_BLOCKED, module, *argv], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)


def test_the_spark_jobs_help_needs_no_pyspark() -> None:
    for module in ("spark_jobs.stream", "spark_jobs.bulk_read"):
        done = run_blocked(module, "--help")
        assert (done.returncode, done.stderr) == (0, ""), done.stderr
        assert done.stdout.startswith(f"usage: python -m {module} ")


def test_the_stream_checks_its_local_paths_before_the_jvm(tmp_path: Path) -> None:
    """A checkpoint that is not the stream's is one line with pyspark not even importable:
    the check ran before any session."""
    (tmp_path / "ckpt" / "offsets").mkdir(parents=True)
    (tmp_path / "ckpt" / "offsets" / "0").write_text("v1\n")
    done = run_blocked("spark_jobs.stream", "--topic", "t", "--bootstrap-servers",
                       "127.0.0.1:9", "--registry-url", "http://127.0.0.1:9", "--table-path",
                       str(tmp_path / "table"), "--checkpoint", str(tmp_path / "ckpt"))
    assert (done.returncode, done.stderr.splitlines()) == (2, [
        f"stream: error: the checkpoint {tmp_path / 'ckpt'} was not written by this job (no "
        f"flatavro-stream.json): give the stream a new --checkpoint"])


def test_a_job_without_the_spark_extra_is_one_line(tmp_path: Path) -> None:
    dump = tmp_path / "dump.parquet"
    dump.write_bytes(b"")
    done = run_blocked("spark_jobs.bulk_read", "--topic", "t", "--input", str(dump),
                       "--registry-url", "http://127.0.0.1:9", "--output",
                       str(tmp_path / "out"))
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"bulk_read: error: the Spark jobs need the `spark` extra (pyspark, delta-spark) and "
        f"this Python ({sys.executable}) lacks py4j: run `make setup` (or pip install -e "
        f"'.[spark]' in the clone)"]
