"""Zip the Python code the Spark job runs (service/ and spark_jobs/) for ``--py-files``.

Usage: ``python3 deploy/spark/build_zip.py [OUTPUT]`` (default ``dist/flatavro.zip``; ``make
dist`` and deploy/spark/submit.sh run it). Standard library only, so any python3 >= 3.11 runs
it. The packages' files go in as they are in the working tree, in a fixed order, without
``__pycache__``: zipimport ignores those, and they belong to whichever Python wrote them.
"""

from __future__ import annotations

import sys
import zipfile
from collections.abc import Sequence
from pathlib import Path

__all__ = ["PACKAGES", "sources", "build", "main"]

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("service", "spark_jobs")
DEFAULT_OUTPUT = ROOT / "dist" / "flatavro.zip"


def sources(root: Path = ROOT) -> list[Path]:
    """Every file of `PACKAGES` under `root`, relative to it and sorted, caches left out."""
    found = (path for package in PACKAGES for path in (root / package).rglob("*")
             if path.is_file())
    return sorted(path.relative_to(root) for path in found
                  if "__pycache__" not in path.parts and path.suffix != ".pyc")


def build(output: Path, root: Path = ROOT) -> int:
    """Write the zip to `output` (replaced whole: a failed build leaves no partial zip).

    Returns:
        How many files went in.
    """
    files = sources(root)
    output.parent.mkdir(parents=True, exist_ok=True)
    partial = output.with_name(output.name + ".partial")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in files:
            archive.write(root / path, path.as_posix())
    partial.replace(output)
    return len(files)


def main(argv: Sequence[str]) -> int:
    """Build the zip at ``argv[0]`` (else `DEFAULT_OUTPUT`) and say what went in."""
    output = Path(argv[0]) if argv else DEFAULT_OUTPUT
    count = build(output)
    print(f"wrote {output}: {count} files of {' and '.join(PACKAGES)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
