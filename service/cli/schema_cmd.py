"""``flatavro schema generate``: print the flat-avro key/value schemas of one table."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import orjson

from service.core.errors import InvalidInputError
from service.core.schema import (
    BigintUnsignedHandlingMode,
    DecimalHandlingMode,
    SchemaOptions,
    TicdcRelease,
    generate_schemas,
)

__all__ = ["register", "add_schema_options", "schema_options"]


def register(commands: argparse._SubParsersAction[Any]) -> None:
    """Add the ``schema`` command group to the top-level parser."""
    schema = commands.add_parser("schema", help="flat-avro schema generation")
    sub = schema.add_subparsers(dest="schema_command", required=True, metavar="COMMAND",
                                parser_class=type(schema))
    gen = sub.add_parser(
        "generate",
        help="print {key_schema, value_schema} for a table",
        description="Print the flat-avro key and value schemas TiCDC registers for a table.",
    )
    source = gen.add_mutually_exclusive_group(required=True)
    source.add_argument("--table", metavar="FILE.json",
                        help="a TiCDC Simple-protocol TableSchema JSON file ('-' for stdin)")
    source.add_argument("--ddl", metavar="FILE.sql",
                        help="a CREATE TABLE statement ('-' for stdin)")
    gen.add_argument("--schema", dest="default_schema", metavar="DB",
                     help="the database of a CREATE TABLE that names none (required then: "
                          "TiCDC always knows it)")
    add_schema_options(gen)
    gen.set_defaults(handler=_generate)


def add_schema_options(parser: argparse.ArgumentParser) -> None:
    """The schema option flags (TiCDC's avro sink options), shared by the commands."""
    parser.add_argument("--enable-tidb-extension", action="store_true",
                        help="append _tidb_op, _tidb_commit_ts, _tidb_commit_physical_time")
    parser.add_argument("--decimal-handling-mode",
                        choices=[m.value for m in DecimalHandlingMode],
                        default=DecimalHandlingMode.PRECISE.value)
    parser.add_argument("--bigint-unsigned-handling-mode",
                        choices=[m.value for m in BigintUnsignedHandlingMode],
                        default=BigintUnsignedHandlingMode.LONG.value)
    parser.add_argument("--namespace", default="default",
                        help="namespace prefix (default: default)")
    parser.add_argument("--ticdc-release", choices=[r.value for r in TicdcRelease],
                        default=TicdcRelease.NEWEST.value,
                        help="the TiCDC release line whose schemas to write where releases "
                             "differ (default newest; tiflow-v8.5.2: tiflow v8.5.2-v8.5.7; "
                             "tiflow-v8.3: tiflow v8.3-v8.5.1)")


def schema_options(args: argparse.Namespace) -> SchemaOptions:
    """The `SchemaOptions` the schema option flags give."""
    return SchemaOptions(
        enable_tidb_extension=args.enable_tidb_extension,
        decimal_handling_mode=DecimalHandlingMode(args.decimal_handling_mode),
        bigint_unsigned_handling_mode=BigintUnsignedHandlingMode(args.bigint_unsigned_handling_mode),
        namespace=args.namespace,
        ticdc_release=TicdcRelease(args.ticdc_release),
    )


def _read(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidInputError(f"cannot read {path}: {exc.strerror}", path=path) from exc
    except UnicodeDecodeError as exc:
        raise InvalidInputError(
            f"{path} is not UTF-8 (byte offset {exc.start})", path=path, offset=exc.start
        ) from exc


def _generate(args: argparse.Namespace) -> int:
    # Imported by the command that reads tables (sqlglot is most of `flatavro`'s start-up).
    from service.core.ddl import table_from_ddl
    from service.core.table_json import table_from_json_text

    if args.table is not None:
        table = table_from_json_text(_read(args.table))
    else:
        table = table_from_ddl(_read(args.ddl), schema=args.default_schema)
    options = schema_options(args)
    pair = generate_schemas(table, options)
    out = {"key_schema": pair.key_schema, "value_schema": pair.value_schema}
    sys.stdout.buffer.write(orjson.dumps(out, option=orjson.OPT_INDENT_2) + b"\n")
    return 0
