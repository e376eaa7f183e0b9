"""Delta Lake from the registries: the session built by `spark_jobs.session` (delta-spark jar
from the Maven cache, Delta's SQL extension and catalog) writes a standard Delta table that
Spark and delta-rs (the `deltalake` package, no JVM) both read back, MERGE included."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

from deltalake import DeltaTable
from pyspark.sql import SparkSession
from pyspark.testing import assertDataFrameEqual

from tests.support.delta import read_delta

ROWS = [(1, "A-1", Decimal("9.90")), (2, "B-2", Decimal("0.01")), (3, "C-3", None)]
SCHEMA = "id BIGINT, sku STRING, price DECIMAL(12,2)"


def test_a_delta_table_is_readable_by_spark_and_delta_rs(spark: SparkSession,
                                                         tmp_path: Path) -> None:
    path = str(tmp_path / "orders")
    spark.createDataFrame(ROWS, SCHEMA).write.format("delta").save(path)
    changes = spark.createDataFrame([(2, "B-2", Decimal("5.00")), (4, "D-4", Decimal("1.00"))],
                                    SCHEMA)
    changes.createOrReplaceTempView("changes")
    spark.sql(f"MERGE INTO delta.`{path}` t USING changes c ON t.id = c.id "
              "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 3")

    expected = [(1, "A-1", Decimal("9.90")), (2, "B-2", Decimal("5.00")),
                (4, "D-4", Decimal("1.00"))]
    assertDataFrameEqual(spark.read.format("delta").load(path),
                         spark.createDataFrame(expected, SCHEMA))
    table = DeltaTable(path)
    assert table.version() == 2  # write, MERGE, DELETE: three commits
    read_by_rs = sorted(tuple(r.values()) for r in read_delta(path).to_pylist())
    assert read_by_rs == expected
