"""Spark bulk read: the job's framing + id dispatch + from_avro against plain from_avro on the
same bodies (with the header already stripped; with the header cut in the same query; and
with the header cut and the job's output columns: the record's fields, partition, offset and
timestamp -- no frame check, no id dispatch, no reader schema), and
against a Python fastavro UDF; and a topic with 3 writer schema versions against one version.
All ratios from one run (local[2]): --rounds rounds (default 5), the sides interleaved in each,
each ratio taken within a round; the median and range are printed.

Data: the 20-column benchmark table (bench_row_codec), 10,000 distinct rows encoded by the
service's RecordCodec and repeated to N records (default 1,000,000) in a Parquet dump with
the Kafka source's columns. Each timing writes to Spark's ``noop`` sink (the read and decode
run in full).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

import fastavro
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.avro.functions import from_avro

from bench.bench_row_codec import DDL, rows
from bench.figures import spread, timed
from service.core.ddl import table_from_ddl
from service.core.framing import frame
from service.core.record_codec import RecordCodec
from service.core.schema import generate_schemas
from spark_jobs.decoding.bad_messages import triaged
from spark_jobs.decoding.schemas import SubjectVersions, TopicVersions
from spark_jobs.decoding.transforms import with_frames
from spark_jobs.session import build_session
from spark_jobs.settings.config import Mode

DISTINCT = 10_000
UDF_RECORDS = 100_000


def schemas_for(ddls: list[str]) -> tuple[list[dict], TopicVersions]:
    values = [generate_schemas(table_from_ddl(d)).value_schema for d in ddls]
    key = generate_schemas(table_from_ddl(ddls[-1])).key_schema
    by_id = {i + 1: json.dumps(v) for i, v in enumerate(values)}
    value = SubjectVersions("bench-value", by_id[len(values)], len(values), by_id)
    key_subject = SubjectVersions("bench-key", json.dumps(key), 100, {100: json.dumps(key)})
    return values, TopicVersions("bench", key_subject, value)


def dump(spark: SparkSession, path: Path, values: list[dict], key_schema: str, total: int
         ) -> None:
    key_codec = RecordCodec(json.loads(key_schema), allow_extra=True)
    codecs = [RecordCodec(v) for v in values]
    data = []
    for i, row in enumerate(rows_of(DISTINCT)):
        version = i % len(codecs)
        data.append((frame(100, key_codec.encode(row)), frame(version + 1,
                                                             codecs[version].encode(row))))
    schema = T.StructType([T.StructField("key", T.BinaryType()),
                           T.StructField("value", T.BinaryType())])
    base = spark.createDataFrame(data, schema)
    copies = spark.range(total // DISTINCT).withColumnRenamed("id", "copy")
    (base.crossJoin(copies).withColumn("topic", F.lit("bench"))
     .withColumn("partition", F.lit(0)).withColumn("offset", F.monotonically_increasing_id())
     .withColumn("timestamp", F.current_timestamp()).drop("copy")
     .withColumn("body", F.expr("substring(value, 6, length(value) - 5)"))
     .write.mode("overwrite").parquet(str(path)))


def rows_of(count: int) -> list[dict[str, object]]:
    out = []
    while len(out) < count:
        out.extend(rows())
    return [dict(r, id=i) for i, r in enumerate(out[:count])]


def noop(df: DataFrame) -> None:
    df.write.format("noop").mode("overwrite").save()


def job_pipeline(df: DataFrame, schemas: TopicVersions) -> None:
    """What bulk_read does between reading and writing (failfast): frame checks, then decode
    per writer id (keys of tombstones only), stopping at a bad message in the same pass."""
    with triaged(with_frames(df), schemas, mode=Mode.FAILFAST) as messages:
        noop(messages.rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    total, rounds = args.records, args.rounds
    spark = build_session("flatavro-bench", "local[2]")
    spark.sparkContext.setLogLevel("ERROR")
    work = Path(tempfile.mkdtemp(prefix="flatavro-bench-"))
    one_values, one = schemas_for([DDL])
    # Warm the JVM (JIT, class loading) before anything is timed.
    ddls = [DDL[:-1] + extra for extra in (", v2 INT)", ", v2 INT, v3 VARCHAR(8))")]
    three_values, three = schemas_for([DDL, *ddls])
    dump(spark, work / "one", one_values, one.key.latest, total)  # type: ignore[union-attr]
    dump(spark, work / "three", three_values, three.key.latest, total)  # type: ignore[union-attr]
    single = spark.read.parquet(str(work / "one"))
    mixed = spark.read.parquet(str(work / "three"))
    writer = one.value.latest
    for _ in range(2):
        noop(single.select(from_avro("body", writer).alias("v")))
        job_pipeline(single, one)

    runs = {
        "plain from_avro (header stripped)":
            lambda: noop(single.select(from_avro("body", writer).alias("v"))),
        "plain from_avro (header cut in the query)": lambda: noop(single.select(from_avro(
            F.expr("substring(value, 6, length(value) - 5)"), writer).alias("v"))),
        "plain from_avro (same output columns)": lambda: noop(single.select(from_avro(
            F.expr("substring(value, 6, length(value) - 5)"), writer).alias("v"), "partition",
            "offset", "timestamp").select("v.*", "partition", "offset", "timestamp")),
        "bulk_read pipeline, 1 writer id": lambda: job_pipeline(single, one),
        "bulk_read pipeline, 3 writer ids": lambda: job_pipeline(mixed, three),
    }
    timings: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(rounds):  # interleaved: a slow moment of the machine hits every side
        for name, work_ in runs.items():
            timings[name].append(timed(work_))
    parsed = fastavro.parse_schema(json.loads(writer))

    @F.udf(returnType=T.StringType())
    def python_decode(body: bytes) -> str:
        import io

        return str(fastavro.schemaless_reader(io.BytesIO(body), parsed, None)["id"])

    udf_rows = single.limit(UDF_RECORDS).cache()
    udf_rows.count()
    udf = timed(lambda: noop(udf_rows.select(python_decode("body"))))
    for name, times in timings.items():
        rates = [total / t for t in times]
        print(f"{name:<42} {statistics.median(rates):>12,.0f} rec/s "
              f"({min(rates):,.0f}-{max(rates):,.0f})")
    print(f"{'Python fastavro UDF':<42} {UDF_RECORDS / udf:>12,.0f} rec/s")
    stripped, cut, same, ours, several = timings.values()

    def ratios(baseline: list[float], measured: list[float]) -> list[float]:
        """Per round, the measured side's rate over the baseline's (times inverted)."""
        return [b / m for b, m in zip(baseline, measured, strict=True)]

    print(f"median (range) of {rounds} rounds, each ratio within one round:")
    print(f"ratio pipeline / plain from_avro, header stripped   {spread(ratios(stripped, ours))}"
          f"  (target >= 0.8)")
    print(f"ratio pipeline / plain from_avro, header cut        {spread(ratios(cut, ours))}")
    print(f"ratio pipeline / plain from_avro, same output       {spread(ratios(same, ours))}")
    print(f"ratio pipeline / Python UDF            "
          f"{(total / statistics.median(ours)) / (UDF_RECORDS / udf):.1f}  (target >= 10)")
    print(f"ratio 3 versions / 1 version           {spread(ratios(ours, several))}"
          f"  (target >= 0.7)")
    spark.stop()


if __name__ == "__main__":
    main()
