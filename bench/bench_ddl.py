"""Reading a CREATE TABLE: `service.core.ddl.table_from_ddl` vs sqlglot's own parse of the same
text, with sqlglot's compiled build (sqlglotc, what the service installs) and without it.

- ours: ``table_from_ddl`` (TiDB's extra words blanked, the statement parsed by sqlglot's MySQL
  dialect, every column mapped and checked);
- raw: ``sqlglot.parse_one(ddl, read="mysql")``, the parse alone;
- each again in a child process that imports sqlglot from a copy of the installed package
  without its compiled modules (pure Python sqlglot, the same version).

At 64 columns (a usual table) and at 4,096 (the most TiDB allows). Prints tables/s, the ratio
ours/raw in each build, and compiled/pure. Run: ``python -m bench.bench_ddl``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import sqlglot

from bench.bench_compatibility import wide_ddl
from bench.figures import timed
from service.core.ddl import table_from_ddl

ROOT = Path(__file__).resolve().parent.parent
SIZES = ((64, 60), (4096, 5))  # (columns, rounds)


def measure() -> dict[str, dict[str, float]]:
    """Best seconds of ours and raw at each size, interleaved rounds, in this process."""
    best: dict[str, dict[str, float]] = {}
    for columns, rounds in SIZES:
        text = wide_ddl(columns)
        ours = raw = float("inf")
        for _ in range(rounds):
            ours = min(ours, timed(lambda: table_from_ddl(text)))  # noqa: B023
            raw = min(raw, timed(lambda: sqlglot.parse_one(text, read="mysql")))  # noqa: B023
        best[str(columns)] = {"ours": ours, "raw": raw}
    return best


def compiled() -> bool:
    """Whether this process's sqlglot parser is sqlglotc's compiled module."""
    return not sqlglot.parser.__file__.endswith(".py")


def pure_figures() -> dict[str, dict[str, float]]:
    """`measure` in a child process whose sqlglot is a copy without compiled modules."""
    package = Path(sqlglot.__file__).parent
    with tempfile.TemporaryDirectory() as folder:
        shutil.copytree(package, Path(folder) / "sqlglot",
                        ignore=shutil.ignore_patterns("*.so", "__pycache__"))
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([folder, str(ROOT)])}
        done = subprocess.run([sys.executable, "-m", "bench.bench_ddl", "--child"], env=env,
                              cwd=ROOT, capture_output=True, text=True, check=True)
    figures: dict[str, dict[str, float]] = json.loads(done.stdout)
    return figures


def main() -> None:
    if sys.argv[1:] == ["--child"]:
        assert not compiled(), "the child imported sqlglot's compiled modules"
        print(json.dumps(measure()))
        return
    assert compiled(), "sqlglotc is not installed: make setup installs sqlglot[c]"
    fast, pure = measure(), pure_figures()
    for columns, _ in SIZES:
        here, there = fast[str(columns)], pure[str(columns)]
        for build, figures in (("compiled", here), ("pure", there)):
            for who, label in (("ours", "table_from_ddl  "), ("raw", "sqlglot.parse_one")):
                print(f"{columns:>5,} columns, {build:<8} {label}: "
                      f"{1 / figures[who]:9,.1f} tables/s ({figures[who] * 1000:8,.1f} ms)")
        print(f"ratio ours/raw ({columns:,} columns): compiled {here['raw'] / here['ours']:.2f}, "
              f"pure {there['raw'] / there['ours']:.2f}")
        print(f"ratio compiled/pure, table_from_ddl ({columns:,} columns): "
              f"{there['ours'] / here['ours']:.2f}")


if __name__ == "__main__":
    main()
