"""`JobConfig`: the bulk-read job's configuration, parsed from argv (the one door)."""

from __future__ import annotations

import argparse
import enum
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NoReturn, Protocol

from spark_jobs.errors import JobError
from spark_jobs.settings.iceberg import IcebergCatalog
from spark_jobs.settings.kafka import KafkaSettings
from spark_jobs.settings.tables import PathTemplate, Topics

__all__ = ["DEFAULT_APPLY_LAG_MS", "DEFAULT_APPLY_ROWS", "DEFAULT_CHANGELOG_RETENTION_MS",
           "DEFAULT_ICEBERG_FORMAT_VERSION", "DEFAULT_OPTIMIZE_EVERY",
           "DEFAULT_TOMBSTONE_RETENTION_MS", "Deletes", "JobConfig", "Mode", "OutputFormat",
           "SchemaSource", "StreamConfig", "TableFormat", "add_table_format", "parse_args",
           "parse_stream_args", "table_catalog",
           "registry_url_from_env"]


class SchemaSource(Protocol):
    """Where a job finds its topic's schemas (both jobs' configurations are one): the
    registry at `registry_url` (``--registry-url``), else the embedded registry of the
    service at `service_url` (``--service-url``), else the registry at
    ``FLATAVRO_REGISTRY_URL``."""

    @property
    def topic(self) -> str:
        """The flat-avro topic, whose subjects are ``<topic>-key`` and ``<topic>-value``."""

    @property
    def service_url(self) -> str | None:
        """The flatavro service whose embedded registry (``/registry``) holds the schemas."""

    @property
    def registry_url(self) -> str | None:
        """A Confluent-compatible registry, or AWS Glue's (``glue://``) (None: the service's,
        or the environment's)."""


class Mode(enum.Enum):
    """What to do with a message that is not a frame of a known schema."""

    FAILFAST = "failfast"
    PERMISSIVE = "permissive"


class OutputFormat(enum.Enum):
    """How `--output` is written: Parquet files, or a Delta Lake table (other engines read
    both; a Delta table is what the streaming job keeps up to date)."""

    PARQUET = "parquet"
    DELTA = "delta"
    ICEBERG = "iceberg"  # --output names a table in the Iceberg catalog


class TableFormat(enum.Enum):
    """The stream's table format (``--format``)."""

    DELTA = "delta"  # a Delta Lake table at a path
    ICEBERG = "iceberg"  # an Apache Iceberg table in a catalog, merge-on-read


DEFAULT_ICEBERG_FORMAT_VERSION = 3
"""The format version of the Iceberg tables the jobs create (``--iceberg-format-version``):
v3's deletion vectors made the stream 1.4x faster than v2's position delete files here
(bench_stream_formats), and PyIceberg reads both."""

ICEBERG_NAME = re.compile(r"[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)+")
"""An Iceberg table's name in the catalog: ``namespace.table`` (a namespace may have levels)."""

CATALOG_NAME = re.compile(r"([A-Za-z0-9_]+\.)?[A-Za-z0-9_]+\.[A-Za-z0-9_]+")
"""A Delta table's name in the session's catalog: ``database.table`` or
``catalog.database.table``."""


class Deletes(enum.Enum):
    """What a TiDB DELETE does to the stream's table (``--deletes``)."""

    HARD = "hard"  # the row goes
    SOFT = "soft"  # the row stays, with _deleted true (and the delete's commit ts)


@dataclass(frozen=True, slots=True)
class JobConfig:
    """Where to read, how to resolve schemas, where to write."""

    topic: str
    output: str
    bootstrap_servers: str | None = None
    starting_offsets: str = "earliest"
    ending_offsets: str = "latest"
    input: str | None = None
    service_url: str | None = None
    registry_url: str | None = None  # None: FLATAVRO_REGISTRY_URL (unless service_url)
    mode: Mode = Mode.FAILFAST
    materialize: bool = False
    dead_letter: str | None = None
    overwrite: bool = False
    master: str | None = None
    output_format: OutputFormat = OutputFormat.PARQUET
    kafka: KafkaSettings = KafkaSettings()  # --kafka-config over FLATAVRO_KAFKA_*
    # Whole-database mode (--topics / --topic-pattern): `topic` is empty, and `output` and
    # `dead_letter` are templates (each topic's own output).
    topics: Topics | None = None
    output_template: PathTemplate | None = None
    dead_letter_template: PathTemplate | None = None
    iceberg: IcebergCatalog | None = None  # --format iceberg: the catalog
    in_catalog: bool = False  # --format delta --in-catalog: `output` names a table

    @property
    def many(self) -> bool:
        """Whole-database mode: each topic's output from `output_template`."""
        return self.output_template is not None

    def subscription(self) -> Topics:
        """The topics the job reads."""
        return self.topics if self.topics is not None else Topics(names=(self.topic,))


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


REGISTRY_URL_VARIABLE = "FLATAVRO_REGISTRY_URL"

SERVICE_URL_HELP = (
    "the flatavro service: schemas from its embedded registry, read as --registry-url "
    "<service>/registry (a service that uses an external registry has none: pass that registry "
    "as --registry-url); an API key of a service with FLATAVRO_API_KEYS goes in "
    "FLATAVRO_API_KEY (or FLATAVRO_REGISTRY_BEARER_TOKEN)")
REGISTRY_URL_HELP = (
    "a Confluent-compatible schema registry (a path prefix is fine); default: "
    "$FLATAVRO_REGISTRY_URL. As for the service, credentials and TLS come from the environment "
    "only: FLATAVRO_REGISTRY_USERNAME and FLATAVRO_REGISTRY_PASSWORD (basic auth) or "
    "FLATAVRO_REGISTRY_BEARER_TOKEN; FLATAVRO_REGISTRY_CA_BUNDLE, FLATAVRO_REGISTRY_VERIFY_TLS; "
    "also FLATAVRO_REGISTRY_TIMEOUT, FLATAVRO_REGISTRY_RETRY_BUDGET. Or AWS Glue's Schema "
    "Registry, glue://<registry name>[?region=...&endpoint=...] (AWS credentials and region from "
    "the AWS_* variables, a profile or the instance's role): the topics' messages are then read "
    "by AWS Glue's frames (0x03, compression, the schema version's UUID)")


def registry_url_from_env() -> str | None:
    """``FLATAVRO_REGISTRY_URL`` when set and not empty (the name case-insensitive, as the
    service's settings read it)."""
    found = [value for name, value in os.environ.items()
             if name.upper() == REGISTRY_URL_VARIABLE and value]
    return found[-1] if found else None


def _add_schema_source(parser: argparse.ArgumentParser) -> None:
    schemas = parser.add_mutually_exclusive_group()
    schemas.add_argument("--service-url", help=SERVICE_URL_HELP)
    schemas.add_argument("--registry-url", help=REGISTRY_URL_HELP)


def _check_schema_source(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """One of the flags, or ``FLATAVRO_REGISTRY_URL`` (the flags exclude each other)."""
    if not args.service_url and not args.registry_url and not registry_url_from_env():
        parser.error(f"one of the arguments --service-url --registry-url is required (or set "
                     f"{REGISTRY_URL_VARIABLE})")


def _add_mode_and_master(parser: argparse.ArgumentParser, dead_letter: str) -> None:
    parser.add_argument("--mode", choices=[m.value for m in Mode], default="failfast",
                        help="failfast (default): stop at the first message that is not a "
                             "frame of a registered schema, naming its partition and offset; "
                             "permissive: set such messages aside in --dead-letter")
    parser.add_argument("--dead-letter", metavar="PATH", help=dead_letter)
    parser.add_argument("--master", help="Spark master (default: spark-submit's, else "
                                         "local[*])")


KAFKA_CONFIG_HELP = (
    "a file of Kafka client settings, key=value lines as for `flatavro bridge --kafka-config` "
    "(librdkafka names: security.protocol, sasl.mechanism, sasl.username, sasl.password, "
    "ssl.ca.location ...), over FLATAVRO_KAFKA_<NAME> variables; mapped to Spark's kafka.* "
    "options (docs/streaming.md#secured-kafka), a setting without a mapping is refused")


def _kafka(parser: argparse.ArgumentParser, args: argparse.Namespace) -> KafkaSettings:
    """The Kafka client settings of ``FLATAVRO_KAFKA_*`` and ``--kafka-config`` (one line on
    a bad one)."""
    try:
        return KafkaSettings.read(os.environ, args.kafka_config)
    except JobError as exc:
        parser.error(str(exc))


def _mode(parser: argparse.ArgumentParser, args: argparse.Namespace) -> Mode:
    mode = Mode(args.mode)
    if mode is Mode.PERMISSIVE and not args.dead_letter:
        parser.error("--mode permissive needs --dead-letter PATH")
    if mode is Mode.FAILFAST and args.dead_letter:
        parser.error("--dead-letter is for --mode permissive")
    return mode


def parse_args(argv: Sequence[str] | None = None) -> JobConfig:
    """Parse the command line (exit 2 with one line on bad usage)."""
    parser = _Parser(prog="python -m spark_jobs.bulk_read",
                     description="Bulk-read a flat-avro topic (Kafka or a Parquet dump) with "
                                 "Spark's from_avro; schemas resolved once at start-up.")
    _add_topics(parser, one="the flat-avro topic",
                many="one output each: --output is then a template, e.g. "
                     "'/lake/{database}/{table}' (as the stream's --table-path-template)")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--bootstrap-servers", help="read the topic from Kafka (batch)")
    source.add_argument("--input", help="an archived dump: Parquet with the Kafka source's "
                                        "columns key, value, topic, partition, offset, "
                                        "timestamp")
    parser.add_argument("--kafka-config", metavar="FILE", help=KAFKA_CONFIG_HELP)
    parser.add_argument("--starting-offsets", default="earliest")
    parser.add_argument("--ending-offsets", default="latest")
    _add_schema_source(parser)
    parser.add_argument("--output", required=True,
                        help="output path (see --format); with --topics or --topic-pattern a "
                             "template: {database}, {table} (from the value schema), {topic}")
    parser.add_argument("--format", choices=[f.value for f in OutputFormat],
                        default=OutputFormat.PARQUET.value,
                        help="write --output as Parquet (default), as a Delta table, or as an "
                             "Iceberg table: then --output names it in the catalog "
                             "(namespace.table, or a template such as '{database}.{table}')")
    _add_iceberg_catalog(parser)
    parser.add_argument("--in-catalog", action="store_true",
                        help="--format delta: --output names the table in the session's "
                             "catalog (a Hive metastore...), database.table or "
                             "catalog.database.table, or a template such as "
                             "'{database}.{table}'; made there, at the catalog's location")
    parser.add_argument("--materialize", action="store_true",
                        help="write the latest state per key instead of every change")
    parser.add_argument("--overwrite", action="store_true", help="replace existing output")
    _add_mode_and_master(parser, "permissive mode: where bad messages go (Parquet: key, "
                                 "value, partition, offset, reason)")
    args = parser.parse_args(argv)
    _check_schema_source(parser, args)
    if args.input and args.kafka_config:
        parser.error("--kafka-config is for --bootstrap-servers (--input reads a dump)")
    mode = _mode(parser, args)
    topics, templates = _bulk_many(parser, args)
    return JobConfig(
        topic=args.topic or "", output=args.output, bootstrap_servers=args.bootstrap_servers,
        starting_offsets=args.starting_offsets, ending_offsets=args.ending_offsets,
        input=args.input, service_url=args.service_url, registry_url=args.registry_url,
        mode=mode, materialize=args.materialize, dead_letter=args.dead_letter,
        overwrite=args.overwrite, master=args.master, output_format=OutputFormat(args.format),
        kafka=_kafka(parser, args), topics=topics, output_template=templates[0],
        dead_letter_template=templates[1], iceberg=_bulk_iceberg(parser, args),
        in_catalog=_bulk_in_catalog(parser, args))


def _bulk_in_catalog(parser: argparse.ArgumentParser, args: argparse.Namespace) -> bool:
    """``bulk_read --format delta --in-catalog``: --output is a name (or a template of names)
    in the session's catalog (exit 2 with one line otherwise)."""
    if not args.in_catalog:
        return False
    if args.format != OutputFormat.DELTA.value:
        parser.error("--in-catalog is for --format delta (an Iceberg --output names a table in "
                     "the Iceberg catalog already)")
    if args.topic is not None and not CATALOG_NAME.fullmatch(args.output):
        parser.error(f"--output {args.output!r} is not a table name database.table or "
                     f"catalog.database.table (letters, digits, '_')")
    _check_name_template(parser, None if args.topic is not None else args.output,
                         option="--output", pattern=CATALOG_NAME)
    return True


def _bulk_iceberg(parser: argparse.ArgumentParser, args: argparse.Namespace
                  ) -> IcebergCatalog | None:
    """The catalog of ``bulk_read --format iceberg`` (dead letters stay Parquet files)."""
    if args.format != OutputFormat.ICEBERG.value:
        given = [flag for dest, flag in _ICEBERG_ONLY[:3] if getattr(args, dest)]
        if given:
            parser.error(f"{given[0]} is for --format iceberg")
        return None
    if args.topic is not None and not ICEBERG_NAME.fullmatch(args.output):
        parser.error(f"--output {args.output!r} is not an Iceberg table name namespace.table "
                     f"(letters, digits, '_')")
    _check_name_template(parser, None if args.topic is not None else args.output,
                         option="--output")
    return _catalog(parser, args)


def _bulk_many(parser: argparse.ArgumentParser, args: argparse.Namespace
               ) -> tuple[Topics | None, tuple[PathTemplate | None, PathTemplate | None]]:
    """The topics and the output and dead-letter templates of whole-database mode."""
    if args.topic is not None:
        return None, (None, None)
    try:
        topics = _topics(args)
        output = PathTemplate.parse(args.output, option="--output (a template with --topics "
                                                        "or --topic-pattern)")
        dead = None if args.dead_letter is None else PathTemplate.parse(
            args.dead_letter, option="--dead-letter (a template, as --output)")
    except ValueError as exc:
        parser.error(str(exc))
    return topics, (output, dead)


def _topics(args: argparse.Namespace) -> Topics:
    """--topics or --topic-pattern (or one --topic as a list of one).

    Raises:
        ValueError: a bad list or pattern.
    """
    if args.topic_pattern is not None:
        return Topics.parse_pattern(args.topic_pattern)
    return Topics.parse_list(args.topics or args.topic)


@dataclass(frozen=True, slots=True)
class Trigger:
    """When micro-batches run: everything available now, then stop; or every `seconds`."""

    available_now: bool = False
    seconds: float = 1.0

    def __str__(self) -> str:
        if self.available_now:
            return "available-now"
        return f"processing-time={self.seconds:g} seconds"


_PROCESSING_TIME = re.compile(r"processing-time=(\d+(?:\.\d+)?)\s*(?:s|sec|secs|second|seconds)?")


def _trigger(text: str) -> Trigger:
    if text.strip() == "available-now":
        return Trigger(available_now=True)
    match = _PROCESSING_TIME.fullmatch(text.strip())
    if not match or float(match.group(1)) <= 0:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not available-now or processing-time=<n> seconds (n > 0)")
    return Trigger(seconds=float(match.group(1)))


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number")
    return int(text)


def _whole(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number (0 or more)")
    return int(text)


_SWITCH = {"on": True, "off": False}

DEFAULT_OPTIMIZE_EVERY = 100
"""Micro-batches between two ``OPTIMIZE`` runs of the stream's table (``--optimize-every``)."""

DEFAULT_PARALLEL_TABLES = 4
"""Tables of one micro-batch written at the same time (``--parallel-tables``)."""

DEFAULT_TOMBSTONE_RETENTION_MS = 7 * 24 * 3600 * 1000
"""How long a deleted key's tombstone guards it (``--tombstone-retention``): 7 days, Kafka's
default ``retention.ms``, the furthest back a replay or a re-read of the topic can reach; well
beyond TiCDC's default ``gc-ttl`` of 24 h, the longest a changefeed can stop and still resume
from its checkpoint (docs/streaming.md, "Commit order")."""

DEFAULT_APPLY_LAG_MS = 60_000
"""How long a change may wait in the changelog before its typed table applies it
(``--apply-lag``): 60 s. Fresh reads see a change as soon as its micro-batch lands; readers of the
typed tables alone (delta-rs, PyIceberg, BI tools) within about this lag. A MERGE costs about as
much for one change as for thousands (docs/speed.md), so a longer lag costs the cores less."""

DEFAULT_APPLY_ROWS = 100_000
"""Pending changes of one table that make it due for an apply whatever their age
(``--apply-rows``): a table that gets many changes is applied in pieces of about this size."""

DEFAULT_CHANGELOG_RETENTION_MS = 24 * 3600 * 1000
"""How long the changelog keeps a change its table has applied (``--changelog-retention``):
24 h, for fresh reads of recent history and for debugging; an unapplied change stays whatever
its age."""

DEFAULT_CHANGELOG_UPKEEP_MS = 10 * 60 * 1000
"""How often the apply thread expires, compacts and vacuums the changelog."""

_DURATION = re.compile(r"(\d+)\s*(ms|s|m|h|d)")
_DURATION_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def _duration(text: str) -> int:
    """A duration such as ``7d``, ``36h``, ``90m``, ``30s``, in milliseconds (> 0)."""
    match = _DURATION.fullmatch(text.strip())
    if not match or int(match.group(1)) == 0:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a duration such as 7d, 36h, 90m or 30s (more than 0)")
    return int(match.group(1)) * _DURATION_MS[match.group(2)]


@dataclass(frozen=True, slots=True)
class StreamConfig:
    """The streaming job: a Kafka topic kept applied to a Delta table."""

    topic: str
    bootstrap_servers: str
    table_path: str
    checkpoint: str
    service_url: str | None = None
    registry_url: str | None = None  # None: FLATAVRO_REGISTRY_URL (unless service_url)
    trigger: Trigger = Trigger()
    starting_offsets: str = "earliest"
    max_offsets_per_trigger: int | None = None
    mode: Mode = Mode.FAILFAST
    dead_letter: str | None = None
    master: str | None = None
    # True/False: --deletion-vectors on/off; None (the default): on for a table the stream
    # creates, an existing table keeps its own setting.
    deletion_vectors: bool | None = None
    optimize_every: int = DEFAULT_OPTIMIZE_EVERY  # 0: never
    kafka: KafkaSettings = KafkaSettings()  # --kafka-config over FLATAVRO_KAFKA_*
    metrics_port: int | None = None  # None: no Prometheus endpoint
    metrics_host: str = "127.0.0.1"
    # Whole-database mode (--topics / --topic-pattern with --table-path-template): `topic` and
    # `table_path` are empty, each topic's table (and dead-letter table) from the templates.
    topics: Topics | None = None
    table_template: PathTemplate | None = None
    dead_letter_template: PathTemplate | None = None
    parallel_tables: int = DEFAULT_PARALLEL_TABLES
    deletes: Deletes = Deletes.HARD
    commit_order: bool = True  # --order commit (default) | offset
    change_data_feed: bool = False  # --change-data-feed: Delta's CDF on the tables
    history: bool = False  # --history: keyed tables keep every version (SCD type 2)
    tombstone_retention_ms: int = DEFAULT_TOMBSTONE_RETENTION_MS
    table_format: TableFormat = TableFormat.DELTA
    iceberg: IcebergCatalog | None = None  # --format iceberg: the catalog
    iceberg_format_version: int = DEFAULT_ICEBERG_FORMAT_VERSION
    # --table-name / --table-name-template: `table_path` / `table_template` name Delta tables
    # in the session's catalog (a Hive metastore...), not locations
    catalog_names: bool = False
    # --changelog: every micro-batch lands in this Delta table, the typed tables are merged
    # behind it (spark_jobs/jobs/apply.py)
    changelog: str | None = None
    apply_lag_ms: int = DEFAULT_APPLY_LAG_MS
    apply_rows: int = DEFAULT_APPLY_ROWS
    changelog_retention_ms: int = DEFAULT_CHANGELOG_RETENTION_MS
    changelog_upkeep_ms: int = DEFAULT_CHANGELOG_UPKEEP_MS

    @property
    def named(self) -> bool:
        """The tables are names in a catalog (Iceberg's, or the session's for
        ``--table-name``), not paths."""
        return self.catalog_names or self.table_format is TableFormat.ICEBERG

    @property
    def template_option(self) -> str:
        """The option that gave `table_template`, for messages."""
        return "--table-name-template" if self.catalog_names else "--table-path-template"

    @property
    def many(self) -> bool:
        """Whole-database mode: each topic's table from `table_template`."""
        return self.table_template is not None

    def subscription(self) -> Topics:
        """The topics the stream reads."""
        return self.topics if self.topics is not None else Topics(names=(self.topic,))

    def table_for(self, *, topic: str, database: str, table: str) -> str:
        """Where `topic`'s table is (`database` and `table` from its value schema)."""
        if self.table_template is None:
            return self.table_path
        return self.table_template.render(topic=topic, database=database, table=table)

    def dead_letter_for(self, *, topic: str, database: str, table: str) -> str | None:
        """Where `topic`'s bad messages go in permissive mode (None: failfast)."""
        if self.dead_letter_template is None:
            return self.dead_letter
        return self.dead_letter_template.render(topic=topic, database=database, table=table)

    def tables_described(self) -> str:
        """The table path, or the template, for log lines."""
        return str(self.table_template) if self.table_template is not None else self.table_path


STREAM_DESCRIPTION = """\
Keep a Delta Lake table equal to the TiDB table behind a flat-avro topic, continuously and
exactly once (Spark Structured Streaming; offsets live in --checkpoint).

Each micro-batch: a schema id the job has not seen is looked up in the service/registry then
(a version registered while the stream runs is picked up without a restart); the table gains
the new version's columns (existing rows get the column's default, as TiDB shows them); the
last change per key is MERGEd by the key columns (tombstones delete). A topic without a key
schema is appended with _op, _partition (__partition in Iceberg, which reserves _partition),
_offset, _timestamp. A micro-batch re-run after a crash changes nothing (Delta's idempotent
writes, keyed by the batch id). A table the stream creates for a keyed topic has deletion
vectors (--deletion-vectors); every N-th micro-batch is followed by Delta's OPTIMIZE
(--optimize-every).

Exit status: 0 when an available-now run has caught up (or a processing-time run is stopped by
SIGTERM/SIGINT); 2 with one line on stderr for bad input or a micro-batch that cannot be
applied (restart resumes from the checkpoint: nothing lost, nothing doubled)."""


def parse_stream_args(argv: Sequence[str] | None = None) -> StreamConfig:
    """Parse the streaming job's command line (exit 2 with one line on bad usage)."""
    parser = _Parser(prog="python -m spark_jobs.stream", description=STREAM_DESCRIPTION,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_topics(parser, one="the flat-avro topic (with --table-path, or a template)",
                many="one table each (--table-path-template); with a pattern, topics created "
                     "later are picked up while the stream runs")
    parser.add_argument("--bootstrap-servers", required=True, help="the Kafka brokers")
    parser.add_argument("--kafka-config", metavar="FILE", help=KAFKA_CONFIG_HELP)
    _add_schema_source(parser)
    tables = parser.add_mutually_exclusive_group(required=True)
    tables.add_argument("--table-path", "--table", metavar="PATH",
                        help="--topic's Delta table (created when absent); with --format "
                             "iceberg the table's name in the catalog, namespace.table")
    tables.add_argument("--table-path-template", "--table-template", metavar="TEMPLATE",
                        help="each topic's Delta table (created when absent), e.g. "
                             "'s3a://lake/{database}/{table}': {database} and {table} are the "
                             "value schema's database (its namespace after the first '.') and "
                             "record name, as TiCDC writes them; {topic} the topic; with "
                             "--format iceberg a name, e.g. '{database}.{table}'")
    tables.add_argument("--table-name", metavar="NAME",
                        help="--topic's Delta table by its name in the session's catalog "
                             "(a Hive metastore...), database.table or catalog.database.table; "
                             "created there, at the catalog's location, when absent")
    tables.add_argument("--table-name-template", metavar="TEMPLATE",
                        help="each topic's Delta table by its name in the session's catalog, "
                             "e.g. '{database}.{table}' (the placeholders as in "
                             "--table-path-template)")
    _add_format(parser)
    parser.add_argument("--checkpoint", required=True, metavar="PATH",
                        help="Spark's checkpoint: Kafka offsets and committed batches; one "
                             "per stream (its topics and tables)")
    parser.add_argument("--parallel-tables", type=_positive, default=DEFAULT_PARALLEL_TABLES,
                        metavar="N",
                        help=f"write at most N tables of a micro-batch at the same time "
                             f"(default {DEFAULT_PARALLEL_TABLES}; Spark's FAIR scheduler "
                             f"shares the executors among them)")
    parser.add_argument("--trigger", type=_trigger, default=Trigger(),
                        metavar="available-now|processing-time=<n> seconds",
                        help="available-now: apply what the topic holds, then exit 0; "
                             "processing-time (default 1 second): a micro-batch every n "
                             "seconds until SIGTERM/SIGINT")
    parser.add_argument("--starting-offsets", choices=["earliest", "latest"],
                        default="earliest",
                        help="where a new checkpoint starts (default earliest); a restart "
                             "resumes from its checkpoint")
    parser.add_argument("--max-offsets-per-trigger", type=_positive, metavar="N",
                        help="at most N messages per micro-batch (default: all available)")
    _add_mode_and_master(parser, "permissive mode: a Delta table for bad messages (key, "
                                 "value, partition, offset, reason)")
    _add_table_upkeep(parser)
    _add_ordering(parser)
    _add_changelog(parser)
    _add_metrics(parser)
    args = parser.parse_args(argv)
    _check_schema_source(parser, args)
    mode = _mode(parser, args)
    catalog_names = _catalog_names(parser, args)
    topics, templates = _many(parser, args)
    _check_history(parser, args)
    _check_changelog(parser, args)
    return StreamConfig(
        topic=args.topic or "", bootstrap_servers=args.bootstrap_servers,
        table_path=args.table_path or "", checkpoint=args.checkpoint,
        service_url=args.service_url,
        registry_url=args.registry_url, trigger=args.trigger,
        starting_offsets=args.starting_offsets,
        max_offsets_per_trigger=args.max_offsets_per_trigger, mode=mode,
        dead_letter=args.dead_letter, master=args.master,
        deletion_vectors=_SWITCH.get(args.deletion_vectors),
        optimize_every=args.optimize_every, kafka=_kafka(parser, args),
        metrics_port=args.metrics_port, metrics_host=args.metrics_host, topics=topics,
        table_template=templates[0], dead_letter_template=templates[1],
        parallel_tables=args.parallel_tables, deletes=Deletes(args.deletes),
        change_data_feed=args.change_data_feed, commit_order=args.order == "commit",
        history=args.history, tombstone_retention_ms=args.tombstone_retention,
        table_format=TableFormat(args.format), iceberg=_iceberg(parser, args, mode=mode),
        iceberg_format_version=args.iceberg_format_version or DEFAULT_ICEBERG_FORMAT_VERSION,
        catalog_names=catalog_names, changelog=args.changelog, apply_lag_ms=args.apply_lag,
        apply_rows=args.apply_rows, changelog_retention_ms=args.changelog_retention)


def _add_changelog(parser: argparse.ArgumentParser) -> None:
    """The options of landing first and merging behind (docs/streaming.md, "Land first, merge
    behind")."""
    parser.add_argument(
        "--changelog", metavar="PATH",
        help="land every micro-batch of every topic in this Delta table first, in one commit, "
             "and merge the typed tables behind it in the same application (--apply-lag, "
             "--apply-rows): freshness no longer falls with the table count; read a table as of "
             "the newest landed batch with python -m spark_jobs.fresh. With --topics or "
             "--topic-pattern; with --format iceberg, a table of the catalog "
             "(namespace.table)")
    parser.add_argument(
        "--apply-lag", type=_duration, default=DEFAULT_APPLY_LAG_MS, metavar="DURATION",
        help="merge a table once its oldest pending change has waited this long (30s, 5m...; "
             "default 60s)")
    parser.add_argument(
        "--apply-rows", type=_positive, default=DEFAULT_APPLY_ROWS, metavar="N",
        help=f"merge a table once N of its changes are pending, whatever their age (default "
             f"{DEFAULT_APPLY_ROWS:,})")
    parser.add_argument(
        "--changelog-retention", type=_duration, default=DEFAULT_CHANGELOG_RETENTION_MS,
        metavar="DURATION",
        help="remove a change from the changelog once its table has applied it and it is older "
             "than this (default 24h); a change no table has applied is never removed")


def _check_changelog(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """``--changelog`` goes with a whole database in Delta (one line for a wrong mix)."""
    if args.changelog is None:
        given = [o for o, v in (("--apply-lag", args.apply_lag != DEFAULT_APPLY_LAG_MS),
                                ("--apply-rows", args.apply_rows != DEFAULT_APPLY_ROWS),
                                ("--changelog-retention",
                                 args.changelog_retention != DEFAULT_CHANGELOG_RETENTION_MS))
                 if v]
        if given:
            parser.error(f"{', '.join(given)} go(es) with --changelog")
        return
    if args.topic is not None:
        parser.error("--changelog lands a whole database: give --topics or --topic-pattern "
                     "with --table-path-template (one --topic has no tables to merge behind)")
    if args.format == TableFormat.ICEBERG.value and not ICEBERG_NAME.fullmatch(args.changelog):
        parser.error(f"--changelog {args.changelog}: with --format iceberg the changelog is a "
                     f"table of the catalog, named namespace.table")


def _catalog_names(parser: argparse.ArgumentParser, args: argparse.Namespace) -> bool:
    """``--table-name`` and ``--table-name-template``: their names go where the paths would
    (`StreamConfig.named`); whether one was given (exit 2 with one line for a name that is
    none, or for ``--format iceberg``, whose --table names already)."""
    given = "--table-name" if args.table_name is not None else (
        "--table-name-template" if args.table_name_template is not None else None)
    if given is None:
        return False
    if args.format != TableFormat.DELTA.value:
        parser.error(f"{given} is for --format delta; with --format iceberg, --table and "
                     f"--table-template name the tables in the Iceberg catalog")
    if args.table_name is not None:
        if not CATALOG_NAME.fullmatch(args.table_name):
            parser.error(f"--table-name {args.table_name!r} is not a table name "
                         f"database.table or catalog.database.table (letters, digits, '_')")
        args.table_path = args.table_name
    else:
        _check_name_template(parser, args.table_name_template, option="--table-name-template",
                             pattern=CATALOG_NAME)
        args.table_path_template = args.table_name_template
    return True


def _add_format(parser: argparse.ArgumentParser) -> None:
    """The table format and, for Iceberg, its catalog (docs/streaming.md, "Iceberg")."""
    parser.add_argument(
        "--format", choices=[f.value for f in TableFormat], default=TableFormat.DELTA.value,
        help="delta (the default): Delta Lake tables at paths; iceberg: Apache Iceberg tables "
             "(merge-on-read) in the catalog of --iceberg-warehouse or --catalog-config, "
             "named by --table / --table-template")
    _add_iceberg_catalog(parser)
    parser.add_argument(
        "--iceberg-format-version", type=int, choices=[2, 3], metavar="2|3",
        help="--format iceberg: the format version of tables the stream creates (default 3: "
             "deletion vectors, the faster MERGE (docs/speed.md); 2: position delete files, for "
             "readers without format v3)")


def _add_iceberg_catalog(parser: argparse.ArgumentParser) -> None:
    """The options of the Iceberg catalog (both jobs)."""
    parser.add_argument(
        "--iceberg-warehouse", metavar="PATH",
        help="--format iceberg: where the default catalog (JDBC on a SQLite file) keeps its "
             "tables, a local path or s3a://bucket/prefix")
    parser.add_argument(
        "--iceberg-catalog-uri", metavar="JDBC_URL",
        help="--format iceberg: the default catalog's database (default "
             "jdbc:sqlite:<warehouse>/catalog.sqlite; PyIceberg's SqlCatalog reads it too)")
    parser.add_argument(
        "--catalog-config", metavar="FILE",
        help="--format iceberg: another Spark Iceberg catalog (REST, Hive, Glue...), key=value "
             "lines of its Spark catalog properties (type=rest, uri=..., warehouse=..., "
             "credential=...); secrets are never logged")


_DELTA_ONLY = (("deletion_vectors", "--deletion-vectors"),
               ("change_data_feed", "--change-data-feed"))
_ICEBERG_ONLY = (("iceberg_warehouse", "--iceberg-warehouse"),
                 ("iceberg_catalog_uri", "--iceberg-catalog-uri"),
                 ("catalog_config", "--catalog-config"),
                 ("iceberg_format_version", "--iceberg-format-version"))


def _iceberg(parser: argparse.ArgumentParser, args: argparse.Namespace, *, mode: Mode
             ) -> IcebergCatalog | None:
    """The Iceberg catalog of ``--format iceberg``, and the options that go with one format
    only (one line for a wrong mix)."""
    given = [flag for dest, flag in _ICEBERG_ONLY if getattr(args, dest)]
    if args.format != TableFormat.ICEBERG.value:
        if given:
            parser.error(f"{given[0]} is for --format iceberg")
        return None
    delta_only = [flag for dest, flag in _DELTA_ONLY if getattr(args, dest)]
    if delta_only:
        parser.error(f"{delta_only[0]} is for --format delta (a Delta table feature)")
    if mode is Mode.PERMISSIVE:
        parser.error("--mode permissive is for --format delta (dead letters go to a Delta "
                     "table); with --format iceberg the stream stops at a bad message")
    if args.table_path is not None and not ICEBERG_NAME.fullmatch(args.table_path):
        parser.error(f"--table {args.table_path!r} is not an Iceberg table name "
                     f"namespace.table (letters, digits, '_')")
    _check_name_template(parser, args.table_path_template, option="--table-template")
    return _catalog(parser, args)


def _check_name_template(parser: argparse.ArgumentParser, template: str | None, *,
                         option: str, pattern: re.Pattern[str] = ICEBERG_NAME) -> None:
    """A template of table names renders names `pattern` matches (Iceberg's
    ``namespace.table``; exit 2 otherwise)."""
    if template is None:
        return
    try:
        rendered = template.format(topic="t", database="d", table="t")
    except (KeyError, ValueError, IndexError):
        return  # PathTemplate.parse names what is wrong
    if not pattern.fullmatch(rendered):
        what = ("Iceberg tables namespace.table" if pattern is ICEBERG_NAME else
                "tables database.table or catalog.database.table")
        parser.error(f"{option} {template!r} does not name {what} (letters, digits, '_' and "
                     f"the placeholders), e.g. '{{database}}.{{table}}'")


def add_table_format(parser: argparse.ArgumentParser) -> None:
    """``--format`` and the Iceberg catalog's options, for a job that reads the stream's tables
    (`python -m spark_jobs.fresh`)."""
    parser.add_argument(
        "--format", choices=[f.value for f in TableFormat], default=TableFormat.DELTA.value,
        help="delta (the default): the tables are paths; iceberg: names in the catalog of "
             "--iceberg-warehouse or --catalog-config")
    _add_iceberg_catalog(parser)


def table_catalog(parser: argparse.ArgumentParser, args: argparse.Namespace
                  ) -> IcebergCatalog | None:
    """The Iceberg catalog of `add_table_format`'s options (None: Delta); one line for a
    catalog option without ``--format iceberg``."""
    given = [flag for dest, flag in _ICEBERG_ONLY if getattr(args, dest, None)]
    if args.format != TableFormat.ICEBERG.value:
        if given:
            parser.error(f"{given[0]} is for --format iceberg")
        return None
    return _catalog(parser, args)


def _catalog(parser: argparse.ArgumentParser, args: argparse.Namespace) -> IcebergCatalog:
    """The catalog of ``--catalog-config``, or the default one of ``--iceberg-warehouse``."""
    try:
        if args.catalog_config:
            if args.iceberg_warehouse or args.iceberg_catalog_uri:
                parser.error("--catalog-config names the whole catalog: drop "
                             "--iceberg-warehouse and --iceberg-catalog-uri")
            return IcebergCatalog.read(args.catalog_config)
        if not args.iceberg_warehouse:
            parser.error("--format iceberg needs --iceberg-warehouse PATH (the default "
                         "catalog) or --catalog-config FILE")
        return IcebergCatalog.sqlite(warehouse=args.iceberg_warehouse,
                                     uri=args.iceberg_catalog_uri)
    except JobError as exc:
        parser.error(str(exc))


def _add_topics(parser: argparse.ArgumentParser, *, one: str, many: str) -> None:
    """One topic, a list, or a pattern (`one`, `many`: what the job does with them)."""
    topics = parser.add_mutually_exclusive_group(required=True)
    topics.add_argument("--topic", help=one)
    topics.add_argument("--topics", metavar="A,B,...", help=f"several flat-avro topics, {many}")
    topics.add_argument("--topic-pattern", metavar="REGEX",
                        help=f"every topic whose whole name matches REGEX (Kafka's "
                             f"subscribePattern, e.g. 'tidb_shop_.*'), {many}")


def _check_history(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """``--history`` goes with commit order and a DELETE ending a version (one line for a
    wrong mix)."""
    if not args.history:
        return
    if args.order != "commit":
        parser.error("--history orders versions by TiDB's commit ts: drop --order offset")
    if args.deletes != Deletes.HARD.value:
        parser.error("--history keeps deleted rows already (a DELETE ends the key's version, "
                     "_deleted true): drop --deletes soft")


def _many(parser: argparse.ArgumentParser, args: argparse.Namespace
          ) -> tuple[Topics | None, tuple[PathTemplate | None, PathTemplate | None]]:
    """The topics and the table and dead-letter templates of whole-database mode."""
    if args.table_path is not None:
        if args.topic is None:
            parser.error("--table-path and --table-name are for one --topic; several "
                         "topics need --table-path-template or --table-name-template")
        return None, (None, None)
    try:
        topics = _topics(args)
        table = PathTemplate.parse(args.table_path_template, option="--table-path-template")
        dead = None if args.dead_letter is None else PathTemplate.parse(
            args.dead_letter, option="--dead-letter (a template, as --table-path-template)")
    except ValueError as exc:
        parser.error(str(exc))
    return topics, (table, dead)


def _port(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number from 1 to 65535")
    return int(text)


def _add_metrics(parser: argparse.ArgumentParser) -> None:
    """The options of the Prometheus endpoint (spark_jobs/jobs/stream_metrics.py)."""
    parser.add_argument(
        "--metrics-port", type=_port, metavar="PORT",
        help="serve Prometheus metrics on this port while the query runs: micro-batches, "
             "messages, rows inserted/updated/deleted, lag per partition, last batch duration "
             "(docs/kubernetes.md#stream-metrics); default: none")
    parser.add_argument(
        "--metrics-host", default="127.0.0.1", metavar="HOST",
        help="the interface of --metrics-port (default 127.0.0.1; 0.0.0.0 in a container, for "
             "a scraper on another host)")


def _add_table_upkeep(parser: argparse.ArgumentParser) -> None:
    """The options of the table's layout: deletion vectors and compaction."""
    parser.add_argument(
        "--deletion-vectors", choices=list(_SWITCH), metavar="on|off",
        help="on (the default for a table the stream creates, unless the topic is keyless: "
             "an append-only table gets none): MERGE marks changed rows in deletion vectors "
             "instead of rewriting their files; readers need the Delta table feature "
             "deletionVectors (docs/streaming.md lists which can). off: a table "
             "without them, for readers that cannot read them (a table that has them is "
             "refused). An existing table keeps its setting unless this says on: then the "
             "stream enables them (a protocol upgrade, logged)")
    parser.add_argument(
        "--optimize-every", type=_whole, default=DEFAULT_OPTIMIZE_EVERY, metavar="N",
        help=f"run Delta's OPTIMIZE (bin-packing small files, purging deletion vectors) after "
             f"every N-th micro-batch (default {DEFAULT_OPTIMIZE_EVERY}; 0: never)")


def _add_ordering(parser: argparse.ArgumentParser) -> None:
    """The options of what the table keeps of TiDB's changes: deletes, Delta's change feed,
    tombstones (docs/streaming.md, "Commit order")."""
    parser.add_argument(
        "--deletes", choices=[d.value for d in Deletes], default=Deletes.HARD.value,
        help="hard (the default): a TiDB DELETE removes the row; soft: the row stays with "
             "_deleted true (__deleted in an Iceberg table, which reserves _deleted; and, with "
             "_tidb_commit_ts, the delete's commit ts); an upsert of the key brings it back "
             "with the flag false")
    parser.add_argument(
        "--order", choices=["commit", "offset"], default="commit",
        help="commit (the default): apply a keyed topic in TiDB's commit order when its values "
             "carry _tidb_commit_ts (TiCDC's enable-tidb-extension), so that changes TiCDC sends "
             "again after a restart never take the table back in time; else in Kafka order. "
             "offset: Kafka order always, the last change per key winning (no guard)")
    parser.add_argument(
        "--change-data-feed", action="store_true",
        help="turn on Delta's Change Data Feed (delta.enableChangeDataFeed) on the tables, so "
             "jobs downstream read each applied change once (readChangeFeed)")
    parser.add_argument(
        "--history", action="store_true",
        help="keep every version of each key (SCD type 2), ordered by TiDB's commit ts, with "
             "_valid_from_ts, _valid_to_ts, _is_current and _deleted (the version ended with a "
             "DELETE); a keyed topic needs _tidb_commit_ts (TiCDC's enable-tidb-extension). "
             "Delta only, with --order commit and --deletes hard")
    parser.add_argument(
        "--tombstone-retention", type=_duration, default=DEFAULT_TOMBSTONE_RETENTION_MS,
        metavar="DURATION",
        help="how long a deleted key stays guarded against replayed older changes (7d, 36h, "
             "90m...; default 7d: Kafka's default retention, longer than TiCDC's gc-ttl of "
             "24 h); expired tombstones are removed with each OPTIMIZE")
