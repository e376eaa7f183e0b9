"""deploy/prereqs.sh: what a target lacks, in one line, before anything is downloaded."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.deploy import ROOT, BarePath, make_env

SCRIPT = ROOT / "deploy" / "prereqs.sh"
SH = shutil.which("sh") or "/bin/sh"


def check(target: str, path: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SH, str(SCRIPT), target], capture_output=True, text=True,
                          env={"PATH": path, **env})


def test_test_without_maven_names_mvn_and_who_needs_it(bare_path: BarePath) -> None:
    # java present and chromium present (a stand-in): only Maven is missing.
    done = check("test", bare_path("sh", "java", chromium=Path(SH)))
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.count("\n") == 1
    line = done.stderr.strip()
    assert line.startswith("make test: missing mvn (Maven; make setup/test/demo/bench ")
    assert "java 17+" not in line and "chromium" not in line
    assert line.endswith("-- make run needs only python3 >= 3.11")


def test_run_needs_python_alone(bare_path: BarePath) -> None:
    done = check("run", bare_path("sh"))
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


@pytest.mark.parametrize("target", ["demo", "bench", "setup"])
def test_spark_targets_name_java_and_mvn(target: str, bare_path: BarePath) -> None:
    done = check(target, bare_path("sh"))
    assert done.returncode == 1 and done.stderr.count("\n") == 1
    assert done.stderr.startswith(f"make {target}: missing java 17+ (not on PATH; ")
    assert "; mvn (Maven; " in done.stderr


def test_old_java_is_named_with_its_version(tmp_path: Path, bare_path: BarePath) -> None:
    java8 = tmp_path / "java"
    java8.write_text('#!/bin/sh\necho \'openjdk version "1.8.0_292"\' >&2\n')
    java8.chmod(0o755)
    done = check("demo", bare_path("sh", "mvn", java=java8))
    assert done.returncode == 1
    assert done.stderr.startswith("make demo: missing java 17+ (found 1.8.0_292; ")


def test_missing_python_is_named_for_every_target(bare_path: BarePath) -> None:
    done = check("run", bare_path("sh"), PYTHON="python3.99")
    assert done.returncode == 1 and done.stderr.count("\n") == 1
    assert done.stderr.startswith("make run: missing python3 >= 3.11 (python3.99 is not on "
                                  "PATH; set PYTHON=")
    assert "make run needs only" not in done.stderr


def test_unknown_target_is_refused(bare_path: BarePath) -> None:
    done = check("deploy", bare_path("sh"))
    assert done.returncode == 2 and "unknown target 'deploy'" in done.stderr


def test_the_makefile_runs_it_first_with_the_same_python() -> None:
    done = subprocess.run(["make", "-n", "run", "PYTHON=/opt/py/bin/python3"], cwd=ROOT,
                          capture_output=True, text=True, check=True,
                          env=make_env())
    assert done.stdout.splitlines()[0] == \
        "PYTHON='/opt/py/bin/python3' sh deploy/prereqs.sh run"
