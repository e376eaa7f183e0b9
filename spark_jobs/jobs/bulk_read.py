"""What ``python -m spark_jobs.bulk_read`` runs (`spark_jobs.bulk_read` is the command line):
a flat-avro topic (Kafka or a dump) -> typed Parquet or a Delta table.

Wiring only: resolve the schemas once (driver), read, check frames in Spark SQL, decode each
writer id's rows with its writer schema into the latest (reader) schema, write. See
``--help``; errors are one line on stderr and exit code 2, with no output left behind.
"""

from __future__ import annotations

import sys

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_jobs.decoding.bad_messages import triaged
from spark_jobs.decoding.registry import framing_of, resolve_schemas
from spark_jobs.decoding.schemas import TopicVersions
from spark_jobs.decoding.transforms import latest_state, ordered_by_commit, with_frames
from spark_jobs.errors import JobError
from spark_jobs.jobs.preflight import check_catalog_file
from spark_jobs.settings.config import JobConfig, OutputFormat
from spark_jobs.sinks import delta, iceberg, parquet
from spark_jobs.sources import kafka, kafka_check

__all__ = ["run"]


def run(spark: SparkSession, config: JobConfig) -> None:
    """Run the job in `spark` (tests call this with their session).

    Raises:
        JobError: bad input, unreachable service/registry/broker, a bad message in failfast
            mode.
    """
    if config.iceberg is not None:  # its own session: a session loads a catalog once
        check_catalog_file(config.iceberg)
        spark = iceberg.use_catalog(spark.newSession(), config.iceberg)
        iceberg.check_catalog(spark, config.iceberg)
    if config.many:
        _run_many(spark, config)
        return
    schemas = _schemas(config, config.topic)
    _require_absent(spark, config, output=config.output, dead_letter=config.dead_letter)
    if config.bootstrap_servers:
        kafka_check.check_topic(config.bootstrap_servers, config.topic, kafka=config.kafka)
    _write(spark, with_frames(kafka.read_source(spark, config), schemas.framing),
           schemas=schemas, config=config, output=config.output, dead_letter=config.dead_letter)


def _schemas(config: JobConfig, topic: str) -> TopicVersions:
    schemas = resolve_schemas(config, topic)
    if config.materialize and schemas.key is None:
        raise JobError(f"topic {topic} has no key schema: --materialize needs a key")
    return schemas


def _write(spark: SparkSession, framed: DataFrame, *, schemas: TopicVersions,
           config: JobConfig, output: str, dead_letter: str | None) -> None:
    with triaged(framed, schemas, mode=config.mode) as messages:
        if messages.dead is not None:
            assert dead_letter is not None  # parse_args: permissive needs it
            parquet.write_parquet(spark, messages.dead, path=dead_letter)
        rows = _output(messages.rows, schemas, config=config)
        if config.output_format is OutputFormat.ICEBERG:  # every change: iceberg.PARTITION
            iceberg.write_table(spark, iceberg.HISTORY.log_rows(rows), name=output,
                                topic=schemas.topic, keyed=config.materialize,
                                overwrite=config.overwrite)
        elif config.in_catalog:
            delta.save_as_table(rows, name=output, overwrite=config.overwrite)
        else:
            parquet.write_output(spark, rows, path=output,
                                 data_format=config.output_format.value)


def _require_absent(spark: SparkSession, config: JobConfig, *, output: str,
                    dead_letter: str | None) -> None:
    """Refuse an output (a path, or an Iceberg table) or dead-letter path that exists, unless
    ``--overwrite``.

    Raises:
        JobError: naming it.
    """
    if config.output_format is OutputFormat.ICEBERG:
        if iceberg.exists(spark, output) and not config.overwrite:
            raise JobError(f"the Iceberg table {output} exists; pass --overwrite to replace it")
    elif config.in_catalog:
        if delta.catalog_location(spark, output) is not None and not config.overwrite:
            raise JobError(f"the table {output} exists in the session's catalog; pass "
                           f"--overwrite to replace it")
    else:
        parquet.require_absent(spark, output, overwrite=config.overwrite)
    if dead_letter is not None:
        parquet.require_absent(spark, dead_letter, overwrite=config.overwrite)


def _remove(spark: SparkSession, config: JobConfig, *, output: str) -> None:
    """Remove an output this run wrote (a later topic failed)."""
    if config.output_format is OutputFormat.ICEBERG:
        iceberg.drop(spark, output)
    elif config.in_catalog:
        delta.drop_table(spark, output)
    else:
        parquet.remove(spark, output)


def _run_many(spark: SparkSession, config: JobConfig) -> None:
    """Whole-database mode: one read of every topic, then each topic's output in turn (from
    the templates). Every topic's schemas and outputs are checked before anything is
    written; a failure removes the outputs this run wrote, so a failed job leaves none."""
    subscription = config.subscription()
    if config.bootstrap_servers:
        for topic in subscription.names:
            kafka_check.check_topic(config.bootstrap_servers, topic, kafka=config.kafka)
    raw = kafka.read_source(spark, config)
    if config.input is not None:  # a dump of many topics: its topic column says which
        raw = raw.where(F.col("topic").rlike(f"^(?:{subscription.pattern})$")
                        if subscription.pattern is not None
                        else F.col("topic").isin(*subscription.names))
    framed = with_frames(raw, framing_of(config)).persist()
    try:
        found = sorted(r[0] for r in framed.select("topic").distinct().collect())
        plan = _plan(spark, config, topics=sorted(set(found) | set(subscription.names)))
        written: list[str] = []
        dead_written: list[str] = []
        try:
            for topic, (schemas, output, dead) in plan.items():
                try:
                    _write(spark, framed.where(F.col("topic") == topic), schemas=schemas,
                           config=config, output=output, dead_letter=dead)
                except JobError as exc:
                    raise JobError(f"topic {topic} ({output}): {exc}") from exc
                written.append(output)
                dead_written += [dead] if dead else []
                print(f"bulk_read: topic {topic} -> {output}", file=sys.stderr, flush=True)
        except BaseException:
            for name in written:
                _remove(spark, config, output=name)
            for path in dead_written:
                parquet.remove(spark, path)
            raise
    finally:
        framed.unpersist()


_Plan = dict[str, tuple[TopicVersions, str, str | None]]


def _plan(spark: SparkSession, config: JobConfig, *, topics: list[str]) -> _Plan:
    """Each topic's schemas, output and dead-letter path, all checked.

    Raises:
        JobError: a topic without schemas, an output that exists (without --overwrite), two
            topics with one output.
    """
    assert config.output_template is not None
    plan = {}
    for topic in topics:
        schemas = _schemas(config, topic)
        database, table = schemas.value.table_name()
        names = {"topic": topic, "database": database, "table": table}
        output = config.output_template.render(**names)
        dead = (config.dead_letter_template.render(**names)
                if config.dead_letter_template is not None else None)
        _require_absent(spark, config, output=output, dead_letter=dead)
        plan[topic] = (schemas, output, dead)
    outputs = [p for _, output, dead in plan.values() for p in (output, dead) if p]
    if len(set(outputs)) < len(outputs):
        raise JobError(f"two topics would write the same output (--output "
                       f"{config.output_template}): name {{topic}} in the template")
    return plan


def _output(rows: DataFrame, schemas: TopicVersions, *, config: JobConfig) -> DataFrame:
    """Every change, or with ``--materialize`` the latest state per key (in commit order when
    the value schema carries ``_tidb_commit_ts``)."""
    if config.materialize:
        assert schemas.key is not None
        return latest_state(rows, schemas.key.field_names(),
                            by_commit=ordered_by_commit(schemas))
    return rows
