"""Delta tables read back with delta-rs (no JVM) through `QueryBuilder`, which exits cleanly.

Not `DeltaTable.to_pyarrow_table()`: that scans through a Python filesystem
(`pyarrow.fs.PyFileSystem` over deltalake's `DeltaStorageHandler`), so Arrow's I/O threads hold
Python buffers after the read returns; when one frees the last of them while the interpreter
shuts down, CPython ends that thread inside a C++ destructor and the process aborts ("terminate
called without an active exception", exit 134; apache/arrow#49942, docs/streaming.md). It also
refuses tables with deletion vectors. `QueryBuilder` (DataFusion) reads the files in Rust and
reads deletion vectors.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable, QueryBuilder


def read_delta(path: str | Path, *, order_by: str | None = None,
               storage_options: dict[str, str] | None = None) -> pa.Table:
    """Read the latest version of the Delta table at `path`, sorted by `order_by` if given;
    `storage_options` for an object store (``s3://``: endpoint, keys, ``AWS_ALLOW_HTTP``)."""
    sql = "SELECT * FROM delta_table" + (f' ORDER BY "{order_by}"' if order_by else "")
    table = DeltaTable(str(path), storage_options=storage_options)
    rows = QueryBuilder().register("delta_table", table).execute(sql).read_all()
    return pa.table(rows)
