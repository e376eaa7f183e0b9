"""The tests' class-data archive (deploy/spark/jvm_archive.py) is really used: a driver
started with the tests' settings maps it without a class-path mismatch (Java would otherwise
start without it, silently), the drivers run without whole-stage code generation (and with
the session's larger cache of compiled classes), and a
cluster's settings reach its jobs as properties."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from deploy.spark import jvm_archive
from spark_jobs.session import CODEGEN_CACHE_ENTRIES
from tests.support.parts import ROOT

SESSION = ("from spark_jobs.session import build_session\n"
           "spark = build_session('archive-check', 'local[1]')\n"
           "assert spark.range(3).count() == 3\n"
           "print(spark.conf.get('spark.sql.codegen.cache.maxEntries'))\n"
           "print(spark.conf.get('spark.sql.codegen.wholeStage'))\n"
           "spark.stop()\n")


def cds_log(tmp_path: Path, **env: str) -> str:
    """What Java logs of class-data sharing while a local session (the tests' driver
    settings, then `env` over them) starts and runs a job."""
    log = tmp_path / "cds.log"
    environ = {**os.environ, **jvm_archive.driver_env(), **env}
    environ["SPARK_SUBMIT_OPTS"] += f" -Xlog:cds=info:file={log}"
    done = subprocess.run([sys.executable, "-c", SESSION], cwd=ROOT, env=environ,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines()[-1] == "false", done.stdout  # jvm_archive.NO_WHOLE_STAGE
    # Spark's cache of compiled classes holds a stream's plans
    assert done.stdout.splitlines()[-2] == str(CODEGEN_CACHE_ENTRIES), done.stdout
    return log.read_text()


def test_a_local_driver_maps_the_archive(tmp_path: Path) -> None:
    archive = jvm_archive.build()
    text = cds_log(tmp_path)
    assert f"Opened archive {archive}." in text, text[-3000:]
    assert "mismatch" not in text, text[-3000:]


def test_a_conf_folder_with_a_file_in_it_loses_the_archive(tmp_path: Path) -> None:
    """Why the tests' settings are not in a spark-defaults.conf: the same driver with one in
    its SPARK_CONF_DIR starts without the archive."""
    archive = jvm_archive.build()
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "spark-defaults.conf").write_text("spark.locality.wait 0\n")
    text = cds_log(tmp_path, SPARK_CONF_DIR=str(tmp_path / "conf"))
    assert f"Opened archive {archive}." in text and "shared class paths mismatch" in text, \
        text[-3000:]


def test_cluster_settings_become_properties_and_executors_get_the_archive() -> None:
    env = jvm_archive.cluster_env("# comment\nspark.locality.wait 0\n"
                                  "spark.executor.extraJavaOptions -Xss4m\n"
                                  "spark.driver.extraJavaOptions -Xss8m\n")
    archive = f"-XX:SharedArchiveFile={jvm_archive.build()}"
    c1 = f"{jvm_archive.C1_JIT} {jvm_archive.C1_CODE_CACHE}"
    no_whole_stage = " ".join(f'"-D{k}={v}"' for k, v in jvm_archive.NO_WHOLE_STAGE.items())
    assert env["SPARK_CONF_DIR"] == str(jvm_archive.conf_dir())
    assert not any(jvm_archive.conf_dir().iterdir())
    # Spark refuses an executor's JVM options with spark.* properties in them.
    assert env["SPARK_SUBMIT_OPTS"] == (
        f'{c1} {archive} -Xss8m {no_whole_stage} "-Dspark.locality.wait=0" '
        f'"-Dspark.executor.extraJavaOptions=-Xss4m {c1} {archive}"')
