"""A script that reads a Delta table with delta-rs exits 0, every time: the read the project
uses (`QueryBuilder`, tests/support/delta.py), not `to_pyarrow_table()`, which with deltalake
1.6 and pyarrow 26 on CPython 3.11 aborted at interpreter exit in about 1 run in 6 (exit 134,
"terminate called without an active exception"; docs/streaming.md)."""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow as pa
from deltalake import write_deltalake

from tests.support.deploy import ROOT

RUNS = 20
FILES, ROWS_PER_FILE = 3, 1000

READ = """
import sys
from tests.support.delta import read_delta
ids = read_delta(sys.argv[1], order_by="id").column("id").to_pylist()
print(len(ids), ids[0], ids[-1])
"""


def write_table(path: Path) -> None:
    for part in range(FILES):
        ids = range(part * ROWS_PER_FILE, (part + 1) * ROWS_PER_FILE)
        write_deltalake(path, pa.table({"id": list(ids), "name": [f"n{i}" for i in ids]}),
                        mode="append")


def read_in_a_subprocess(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", READ, str(path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=False)


def test_a_delta_rs_read_exits_0_every_time(tmp_path: Path) -> None:
    table = tmp_path / "table"
    write_table(table)
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = list(pool.map(read_in_a_subprocess, [table] * RUNS))
    rows = FILES * ROWS_PER_FILE
    failed = [(run.returncode, run.stdout, run.stderr[-500:]) for run in runs
              if (run.returncode, run.stdout) != (0, f"{rows} 0 {rows - 1}\n")]
    assert not failed, f"{len(failed)} of {RUNS} runs failed: {failed}"
