"""``python -m spark_jobs.fresh``: a typed table of a ``--changelog`` stream as of the newest
landed micro-batch (the read itself: `spark_jobs.jobs.fresh`), printed as JSON lines or written
as a Parquet snapshot. See ``--help`` and docs/streaming.md, "Reading fresh".

The command line imports no pyspark: ``--help`` works where only the service is installed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from spark_jobs.session import run_job
from spark_jobs.settings.config import (
    REGISTRY_URL_HELP,
    SERVICE_URL_HELP,
    add_table_format,
    table_catalog,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["main", "parse_fresh_args"]

DESCRIPTION = """\
Read a table that `python -m spark_jobs.stream --changelog` keeps, as of the newest micro-batch
the changelog has landed: the typed table plus the changes it has not applied yet, decided as its
next MERGE will decide them (commit order, deletes, soft deletes, --history). Nothing is written
to either table. Exit status 0, or 2 with one line on stderr."""


def parse_fresh_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The fresh read's command line (exit 2 with one line on bad usage)."""
    parser = argparse.ArgumentParser(prog="python -m spark_jobs.fresh", description=DESCRIPTION)
    parser.add_argument("--changelog", required=True, metavar="PATH|NAME",
                        help="the stream's --changelog")
    parser.add_argument("--table", required=True, metavar="PATH|NAME",
                        help="one of the stream's typed tables: a Delta table's path, or with "
                             "--format iceberg its name in the catalog (namespace.table)")
    add_table_format(parser)
    parser.add_argument("--service-url", help=SERVICE_URL_HELP)
    parser.add_argument("--registry-url", help=REGISTRY_URL_HELP)
    parser.add_argument("--where", metavar="SQL", help="a filter on the table's columns")
    parser.add_argument("--order-by", metavar="COLUMNS",
                        help="comma-separated columns to sort the printed rows by")
    parser.add_argument("--output", metavar="PATH",
                        help="write the rows as Parquet here instead of printing them")
    parser.add_argument("--master", help="Spark master (default: spark-submit's, else local)")
    args = parser.parse_args(argv)
    args.catalog = table_catalog(parser, args)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Parse argv and read; errors in one line (exit 2)."""
    args = parse_fresh_args(argv)

    def work(spark: SparkSession) -> None:
        from spark_jobs.jobs.fresh import FreshSource, fresh_read

        rows = fresh_read(spark, changelog_path=args.changelog, table=args.table,
                          source=FreshSource(service_url=args.service_url,
                                             registry_url=args.registry_url),
                          catalog=args.catalog)
        if args.where:
            rows = rows.where(args.where)
        if args.order_by:
            rows = rows.orderBy(*[c.strip() for c in args.order_by.split(",")])
        if args.output:
            rows.write.mode("errorifexists").parquet(args.output)
            return
        for line in rows.toJSON().toLocalIterator():
            print(line)

    catalog = args.catalog
    return run_job("fresh", work, master=args.master,
                   paths=(catalog.warehouse,) if catalog else (args.changelog, args.table))


if __name__ == "__main__":
    sys.exit(main())
