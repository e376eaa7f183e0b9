"""`JobConfig`: the bulk-read job's configuration, parsed from argv (the one door)."""

from __future__ import annotations

import argparse
import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NoReturn

__all__ = ["JobConfig", "Mode", "parse_args"]


class Mode(enum.Enum):
    """What to do with a message that is not a frame of a known schema."""

    FAILFAST = "failfast"
    PERMISSIVE = "permissive"


class OutputFormat(enum.Enum):
    """How `--output` is written: Parquet files, or a Delta Lake table (other engines read
    both; a Delta table is what the streaming job keeps up to date)."""

    PARQUET = "parquet"
    DELTA = "delta"


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
    registry_url: str | None = None
    mode: Mode = Mode.FAILFAST
    materialize: bool = False
    dead_letter: str | None = None
    overwrite: bool = False
    master: str | None = None
    output_format: OutputFormat = OutputFormat.PARQUET


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def parse_args(argv: Sequence[str] | None = None) -> JobConfig:
    """Parse the command line (exit 2 with one line on bad usage)."""
    parser = _Parser(prog="python -m spark_jobs.bulk_read",
                     description="Bulk-read a flat-avro topic (Kafka or a Parquet dump) with "
                                 "Spark's from_avro; schemas resolved once at start-up.")
    parser.add_argument("--topic", required=True)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--bootstrap-servers", help="read the topic from Kafka (batch)")
    source.add_argument("--input", help="an archived dump: Parquet with the Kafka source's "
                                        "columns key, value, topic, partition, offset, "
                                        "timestamp")
    parser.add_argument("--starting-offsets", default="earliest")
    parser.add_argument("--ending-offsets", default="latest")
    schemas = parser.add_mutually_exclusive_group(required=True)
    schemas.add_argument("--service-url", help="the flatavro service")
    schemas.add_argument("--registry-url", help="a Confluent-compatible registry")
    parser.add_argument("--output", required=True, help="output path (see --format)")
    parser.add_argument("--format", choices=[f.value for f in OutputFormat],
                        default=OutputFormat.PARQUET.value,
                        help="write --output as Parquet (default) or as a Delta table")
    parser.add_argument("--mode", choices=[m.value for m in Mode], default="failfast")
    parser.add_argument("--materialize", action="store_true",
                        help="write the latest state per key instead of every change")
    parser.add_argument("--dead-letter", help="permissive mode: where bad messages go")
    parser.add_argument("--overwrite", action="store_true", help="replace existing output")
    parser.add_argument("--master", help="Spark master (default: spark-submit's, else "
                                         "local[*])")
    args = parser.parse_args(argv)
    mode = Mode(args.mode)
    if mode is Mode.PERMISSIVE and not args.dead_letter:
        parser.error("--mode permissive needs --dead-letter PATH")
    return JobConfig(
        topic=args.topic, output=args.output, bootstrap_servers=args.bootstrap_servers,
        starting_offsets=args.starting_offsets, ending_offsets=args.ending_offsets,
        input=args.input, service_url=args.service_url, registry_url=args.registry_url,
        mode=mode, materialize=args.materialize, dead_letter=args.dead_letter,
        overwrite=args.overwrite, master=args.master, output_format=OutputFormat(args.format))
