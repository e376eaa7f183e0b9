"""Class-data sharing for the Spark driver JVMs the tests start (Java's dynamic AppCDS archive):
a driver maps the ~15,000 classes a session, ``from_avro`` and a Delta MERGE load from one
archive instead of reading and verifying them from the jars each time. A local session with a
Delta write starts in 12 s instead of 21 s here; the tests start a driver some eighty times.

The archive is made once per cache by a training run (``-XX:ArchiveClassesAtExit``) and used
with ``-XX:SharedArchiveFile``. Java takes it only for the class path it was made with: the
jars of the venv's pyspark (their names, sizes and times are in the file name, so another
pyspark makes another archive) behind ``SPARK_CONF_DIR``, which spark-class puts first on the
class path and which must be the same empty folder (Java refuses a class path with a
non-empty folder in it). The tests' JVM options therefore go in ``SPARK_SUBMIT_OPTS``, not in a
spark-defaults.conf. A JVM whose class path differs (a cluster's jobs, with the cluster's own
conf folder) runs without the archive, silently, as does one when the archive is missing.

``python -m deploy.spark.jvm_archive`` makes the archive when it is missing (``make test``
does, before pytest; it prints the path); ``--train`` is the training run itself.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

C1_JIT = "-XX:TieredStopAtLevel=1"
"""Short-lived JVMs on 2 cores spend less on the C1 JIT alone (docs/development.md)."""

C1_CODE_CACHE = "-XX:ReservedCodeCacheSize=240m"
"""With C1 alone Java reserves the 48 MB code cache of a JVM without tiers, not tiered
compilation's 240 MB, and C1 compiles much more: a driver that writes 20 tables filled it
("Out of space in CodeCache for adapters"); the tiered size again."""

NO_WHOLE_STAGE = {"spark.sql.codegen.wholeStage": "false"}
"""Spark settings of the tests' drivers: no whole-stage code generation. Their micro-batches are
a few rows, and generating and compiling one Java class per stage of each new plan cost more
than it saved (a cold driver's stream of 50 changes: 17 s and 20 CPU-s instead of 22 s and 25;
the commit-order replay test: 229 s instead of 276; the same results: Spark runs each operator
on its own instead). Each operator's projections are still generated, and compiled once per
JVM (Spark's code cache): ``spark.sql.codegen.factoryMode=NO_CODEGEN``, which would interpret
them, takes effect only in Spark's own test mode (``spark.testing``, which turns on costly plan
checks), so it is not set. A driver's SQL settings reach its tasks. Benchmarks and users keep
Spark's defaults."""

TRAIN_SECONDS = 300


def spark_home() -> Path:
    """The venv's pyspark folder (bin/spark-class, jars/), found without importing pyspark."""
    spec = importlib.util.find_spec("pyspark")
    assert spec is not None and spec.origin is not None, "pyspark is not installed"
    return Path(spec.origin).parent


def cache() -> Path:
    """The archive's folder, in the JVM cache (``FLATAVRO_JVM_CACHE`` or .cache/jvm)."""
    return Path(os.environ.get("FLATAVRO_JVM_CACHE", ROOT / ".cache" / "jvm")) / "cds"


def conf_dir() -> Path:
    """The empty ``SPARK_CONF_DIR`` of every driver that uses the archive."""
    return cache() / "spark-conf"


def archive() -> Path:
    """Where the archive for this venv's pyspark jars and this conf folder is (or goes)."""
    digest = hashlib.sha256(str(conf_dir()).encode())
    jars = spark_home() / "jars"
    for jar in sorted(jars.glob("*.jar")):
        stat = jar.stat()
        digest.update(f"{jar.name} {stat.st_size} {stat.st_mtime_ns}\n".encode())
    java = shutil.which("java")
    digest.update(os.path.realpath(java).encode() if java else b"no java")
    return cache() / f"spark-driver-{digest.hexdigest()[:16]}.jsa"


def jvm_options(*, c1_jit: bool = True) -> list[str]:
    """The JVM options of a Spark JVM in the tests: the C1 JIT alone unless `c1_jit` is false
    (a session that lives as long as the test run), the archive when it exists."""
    options = [C1_JIT, C1_CODE_CACHE] if c1_jit else []
    path = archive()
    if path.exists():
        options.append(f"-XX:SharedArchiveFile={path}")
    return options


def driver_env(*, c1_jit: bool = True) -> dict[str, str]:
    """``SPARK_CONF_DIR`` and ``SPARK_SUBMIT_OPTS`` for a local driver JVM (a session, or a
    job run as ``python -m spark_jobs...``)."""
    conf_dir().mkdir(parents=True, exist_ok=True)
    return {"SPARK_CONF_DIR": str(conf_dir()),
            "SPARK_SUBMIT_OPTS": " ".join([*jvm_options(c1_jit=c1_jit),
                                           *(f"-D{k}={v}" for k, v in NO_WHOLE_STAGE.items())])}


def cluster_env(defaults: str, *, c1_jit: bool = True, whole_stage: bool = False
                ) -> dict[str, str]:
    """``SPARK_CONF_DIR`` and ``SPARK_SUBMIT_OPTS`` for a standalone cluster's daemons and
    the jobs sent to it: `defaults` (spark-defaults.conf lines) become the ``-Dspark.*``
    system properties a driver reads as its conf (after `NO_WHOLE_STAGE` unless `whole_stage`:
    a benchmark), the executors' JVM options get the driver's (their class path is the
    driver's: the same conf folder, the same jars)."""
    conf_dir().mkdir(parents=True, exist_ok=True)
    settings = {} if whole_stage else dict(NO_WHOLE_STAGE)
    for line in defaults.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            name, _, value = line.strip().partition(" ")
            settings[name] = value.strip()
    options = jvm_options(c1_jit=c1_jit)
    driver = settings.pop("spark.driver.extraJavaOptions", "").split()
    executor = [*settings.pop("spark.executor.extraJavaOptions", "").split(), *options]
    if executor:
        settings["spark.executor.extraJavaOptions"] = " ".join(executor)
    submit = [*options, *driver, *(f'"-D{name}={value}"' for name, value in settings.items())]
    return {"SPARK_CONF_DIR": str(conf_dir()), "SPARK_SUBMIT_OPTS": " ".join(submit)}


def build() -> Path:
    """The archive, made by a training run when it is missing.

    Raises:
        RuntimeError: the training run failed or made no archive (its output attached).
    """
    path = archive()
    if path.exists():
        return path
    conf_dir().mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    partial.unlink(missing_ok=True)
    env = {**os.environ, "SPARK_CONF_DIR": str(conf_dir()),
           "SPARK_SUBMIT_OPTS": f"-XX:ArchiveClassesAtExit={partial}"}
    done = subprocess.run([sys.executable, "-m", "deploy.spark.jvm_archive", "--train"],
                          cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=TRAIN_SECONDS, check=False)
    if done.returncode != 0 or not partial.exists():
        raise RuntimeError(f"the CDS training run (exit {done.returncode}) made no archive "
                           f"{partial}:\n{done.stderr[-3000:]}")
    partial.rename(path)
    for old in cache().glob("spark-driver-*.jsa"):
        if old != path:
            old.unlink()
    return path


def train() -> None:
    """What the archive holds: the classes a local session loads for ``from_avro``, a Delta
    table with deletion vectors, a MERGE that inserts, updates and deletes, its history and
    OPTIMIZE (the stream's micro-batch, without the broker)."""
    from delta.tables import DeltaTable
    from pyspark.sql.avro.functions import from_avro, to_avro
    from pyspark.sql.functions import col, struct

    from spark_jobs.session import build_session

    spark = build_session("flatavro-cds-training", "local[2]")
    schema = ('{"type": "record", "name": "items", "fields": [{"name": "id", "type": "long"}, '
              '{"name": "name", "type": "string"}]}')
    with tempfile.TemporaryDirectory() as folder:
        table = str(Path(folder) / "table")
        rows = spark.range(200).selectExpr("id", "concat('n', id) AS name")
        frames = rows.select(to_avro(struct("id", "name")).alias("value"))
        decoded = frames.select(from_avro(col("value"), schema).alias("row")).select("row.*")
        spark.sql(f"CREATE TABLE delta.`{table}` (id BIGINT, name STRING) USING delta "
                  f"TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")
        decoded.write.format("delta").mode("append").save(table)
        changes = decoded.selectExpr("id", "concat(name, 'u') AS name", "id % 5 = 0 AS gone")
        (DeltaTable.forPath(spark, table).alias("t")
         .merge(changes.alias("s"), "t.id = s.id")
         .whenMatchedDelete("s.gone").whenMatchedUpdate(set={"name": "s.name"})
         .whenNotMatchedInsert(values={"id": "s.id", "name": "s.name"}).execute())
        DeltaTable.forPath(spark, table).history(1).collect()
        spark.sql(f"OPTIMIZE delta.`{table}`").collect()
        assert spark.read.format("delta").load(table).count() == 160
    spark.stop()


if __name__ == "__main__":
    if sys.argv[1:] == ["--train"]:
        train()
    else:
        print(build())
