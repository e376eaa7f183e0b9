"""`make run` serves with Python alone: no java, no mvn, no pyspark, no jars."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import httpx

from tests.support.deploy import ROOT, BarePath, make_env
from tests.support.harness import free_port

# What the Makefile's recipes for `run` call (make runs them with /bin/sh); never java/mvn.
TOOLS = ("make", "sh", "bash", "env", "test", "touch", "mkdir", "rm", "cat", "dirname")
# Enough for `pip install -e .` too, in case the service stamp is older than pyproject.toml.
START_TIMEOUT = 180.0


def plan(goal: str, *options: str) -> list[str]:
    """The commands `make` would run for `goal` from scratch (-B: every stamp stale)."""
    done = subprocess.run(["make", "-n", "-B", goal, *options], cwd=ROOT, capture_output=True,
                          text=True, check=True, env=make_env())
    return done.stdout.splitlines()


def stop(process: subprocess.Popen[bytes]) -> None:
    """End make and the server it started (one process group)."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def test_make_run_serves_healthz_without_java_or_maven(
        tmp_path: Path, bare_path: BarePath) -> None:
    path = bare_path(*TOOLS)
    assert not any((Path(path) / tool).exists() for tool in ("java", "mvn"))
    jvm_cache = tmp_path / "jvm-cache"  # empty: a `run` that wanted jars would fetch here
    jvm_cache.mkdir()
    no_pyspark = tmp_path / "no-pyspark" / "pyspark"  # shadows the venv's: importing it fails
    no_pyspark.mkdir(parents=True)
    (no_pyspark / "__init__.py").write_text('raise ImportError("make run imported pyspark")\n')
    port = free_port()
    env = {"PATH": path, "HOME": os.environ.get("HOME", str(tmp_path)),
           "FLATAVRO_HOST": "127.0.0.1", "FLATAVRO_PORT": str(port),
           "FLATAVRO_REGISTRY_DB_PATH": str(tmp_path / "registry.sqlite"),
           "FLATAVRO_JVM_CACHE": str(jvm_cache), "PYTHONPATH": str(no_pyspark.parent)}
    log = tmp_path / "make-run.log"
    with log.open("wb") as out:
        process = subprocess.Popen(["make", "run"], cwd=ROOT, env=env, stdout=out,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    try:
        status = None
        deadline = time.monotonic() + START_TIMEOUT
        while status is None and process.poll() is None and time.monotonic() < deadline:
            try:
                status = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code
            except httpx.TransportError:
                time.sleep(0.2)
        output = log.read_text(errors="replace")
        assert status == 200, f"make run did not serve /healthz:\n{output}"
        assert (tmp_path / "registry.sqlite").exists()  # FLATAVRO_* reached the service
    finally:
        stop(process)
    assert list(jvm_cache.iterdir()) == []
    assert "fetch.sh" not in output and "mvn" not in output


def test_make_run_plan_has_no_spark_or_jvm_step() -> None:
    run = plan("run")
    assert run[0] == "PYTHON='python3' sh deploy/prereqs.sh run"  # checked before downloads
    assert ".venv/bin/python -m pip install --disable-pip-version-check -e ." in run
    assert run[-1] == ".venv/bin/flatavro serve"
    for word in ("fetch.sh", "mvn", "java", "[spark", "pyspark", "chromium", "apt-get"):
        assert not [line for line in run if word in line], word


def test_make_test_plan_sets_up_everything_after_its_check() -> None:
    test = plan("test")
    assert test[0] == "PYTHON='python3' sh deploy/prereqs.sh test"
    for step in ("-e '.[spark,aws,tidb,dev]'", "deploy/jvm/fetch.sh all", "apt-get install",
                 ".venv/bin/python -m pytest"):
        assert [line for line in test if step in line], step
    for goal in ("demo", "bench"):
        steps = plan(goal)
        assert steps[0] == f"PYTHON='python3' sh deploy/prereqs.sh {goal}"
        assert [line for line in steps if "deploy/jvm/fetch.sh all" in line]


def test_make_test_after_make_run_adds_only_the_extras() -> None:
    # -o: the service stamp counts as made (what `make run` left behind).
    test = plan("test", "-o", ".venv/.service-installed")
    assert not [line for line in test if line.endswith("install --disable-pip-version-check -e .")]
    assert [line for line in test if line.endswith("-e '.[spark,aws,tidb,dev]'")]
