"""The stream's schema-evolution rules (`plan_evolution`, pure: no Spark session): which type
changes widen a Delta column or an Iceberg one, and what every other change says to do; a
keyless table's change-log columns in each format."""

from __future__ import annotations

import re

import pytest
from pyspark.sql import types as T

from spark_jobs.errors import JobError
from spark_jobs.sinks import history, iceberg
from spark_jobs.sinks.columns import plan_evolution


def schema(**columns: T.DataType) -> T.StructType:
    return T.StructType([T.StructField(n, t, True) for n, t in columns.items()])


@pytest.mark.parametrize(("old", "new"), [
    (T.ByteType(), T.ShortType()), (T.IntegerType(), T.LongType()),
    (T.FloatType(), T.DoubleType()), (T.DecimalType(8, 2), T.DecimalType(10, 3)),
    (T.IntegerType(), T.DecimalType(12, 2)), (T.DateType(), T.TimestampType())])
def test_widenings_are_planned(old: T.DataType, new: T.DataType) -> None:
    plan = plan_evolution(schema(id=T.IntegerType(), c=old),
                          schema(id=T.IntegerType(), c=new, d=T.StringType()), subject="s-value")
    assert (plan.added, plan.removed, plan.widened) == (("d",), (), ("c",))


@pytest.mark.parametrize(("old", "new"), [
    (T.LongType(), T.IntegerType()), (T.DoubleType(), T.FloatType()),
    (T.IntegerType(), T.StringType()), (T.StringType(), T.LongType()),
    (T.DecimalType(10, 2), T.DecimalType(10, 3)), (T.DecimalType(10, 2), T.DecimalType(9, 2)),
    (T.LongType(), T.DecimalType(12, 2)), (T.TimestampType(), T.DateType())])
def test_other_type_changes_stop_with_what_to_do(old: T.DataType, new: T.DataType) -> None:
    change = re.escape(f"column c changed from {old.simpleString()} to {new.simpleString()} "
                       f"in the latest version of s-value;")
    with pytest.raises(JobError, match=f"{change} .* rebuild it"):
        plan_evolution(schema(c=old), schema(c=new), subject="s-value")


def test_no_change_plans_nothing() -> None:
    same = schema(id=T.IntegerType(), name=T.StringType())
    assert not plan_evolution(same, same, subject="s-value")


@pytest.mark.parametrize(("old", "new", "widens"), [
    (T.IntegerType(), T.LongType(), True), (T.FloatType(), T.DoubleType(), True),
    (T.DecimalType(8, 2), T.DecimalType(10, 2), True),
    (T.DecimalType(8, 2), T.DecimalType(10, 3), False),  # Iceberg keeps a decimal's scale
    (T.IntegerType(), T.DecimalType(12, 2), False), (T.DateType(), T.TimestampType(), False),
    (T.LongType(), T.IntegerType(), False)])
def test_an_iceberg_column_widens_as_iceberg_allows(old: T.DataType, new: T.DataType,
                                                    widens: bool) -> None:
    def plan() -> object:
        return plan_evolution(schema(c=old), schema(c=new), subject="s-value",
                              widens=iceberg.widens, table="an Iceberg table",
                              rebuild="iceberg", widenings=iceberg.WIDENINGS)
    if widens:
        assert plan().widened == ("c",)  # type: ignore[attr-defined]
        return
    with pytest.raises(JobError) as caught:
        plan()
    assert str(caught.value) == (
        f"column c changed from {old.simpleString()} to {new.simpleString()} in the latest "
        f"version of s-value; an Iceberg table cannot change a column that way in place (only "
        f"widenings: int to bigint, float to double, a decimal's precision up at the same "
        f"scale). Stop the stream, move the table aside and rebuild it (bulk_read --format "
        f"iceberg --materialize, then a new --checkpoint with --starting-offsets earliest: the "
        f"last change per key wins, so nothing is lost or doubled)")


def test_a_change_log_names_the_partition_as_its_format_does() -> None:
    """Iceberg reserves ``_partition`` (a MERGE into a table with it is refused): a keyless
    Iceberg table has ``__partition`` in its place; Delta keeps ``_partition``. A version
    with a new column then plans that column alone."""
    decoded = schema(id=T.IntegerType(), _op=T.StringType(), _partition=T.IntegerType(),
                     _offset=T.LongType(), _timestamp=T.TimestampType())
    assert iceberg.HISTORY.log_columns(decoded).fieldNames() == [
        "id", "_op", "__partition", "_offset", "_timestamp"]
    assert history.DELTA.log_columns(decoded) == decoded
    added = T.StructType([*decoded.fields, T.StructField("tag", T.StringType(), True)])
    evolution = plan_evolution(iceberg.HISTORY.log_columns(decoded),
                               iceberg.HISTORY.log_columns(added), subject="s-value",
                               widens=iceberg.widens)
    assert (evolution.added, evolution.removed, evolution.widened) == (("tag",), (), ())
