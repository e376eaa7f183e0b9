"""``flatavro convert``: TiCDC protocol messages (NDJSON) -> flat-avro messages (NDJSON).

Input: one JSON object per line, ``{"key": text|null, "value": text|null}`` (a Kafka message
as consumed; ``--encoding base64`` for bytes, needed by the Open Protocol). Output on stdout:
one converted message per line (the fields of ``POST /v1/convert/{protocol}``'s messages).
Skipped events, pending rows and notes (a version evolved from rows) are reported on stderr,
one JSON line each; the exit code is 3 when rows are pending, 2 on bad input (nothing is
written then).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from service.cdc.protocols import Protocol
from service.cli.schema_cmd import add_schema_options, schema_options
from service.core.errors import InvalidInputError

if TYPE_CHECKING:
    from service.codec.convert import ConvertInput
    from service.usecases.settings import RuntimeSettings

__all__ = ["register", "add_registry_options", "add_time_zone_option", "registry_settings",
           "add_key_columns_option", "key_columns"]

EXIT_PENDING = 3


def register(commands: argparse._SubParsersAction[Any]) -> None:
    """Add the ``convert`` command to the top-level parser."""
    cmd = commands.add_parser(
        "convert", help="convert TiCDC Canal-JSON / Open Protocol / Simple / Debezium messages",
        description="Convert TiCDC messages (NDJSON lines {\"key\", \"value\"}) into "
                    "flat-avro Kafka messages (NDJSON on stdout), against a schema registry.")
    cmd.add_argument("file", metavar="FILE", help="NDJSON input ('-' for stdin)")
    cmd.add_argument("--protocol", required=True, choices=[p.value for p in Protocol])
    cmd.add_argument("--encoding", choices=["utf-8", "base64"], default="utf-8",
                     help="how keys and values are written in FILE (default utf-8)")
    cmd.add_argument("--topic", default="tidb_{schema}_{table}",
                     help="topic rule or literal topic (default tidb_{schema}_{table})")
    cmd.add_argument("--register", action="store_true",
                     help="register schemas of tables the registry does not have yet")
    add_key_columns_option(cmd)
    add_large_message_options(cmd)
    add_registry_options(cmd)
    add_time_zone_option(cmd)
    add_schema_options(cmd)
    cmd.set_defaults(handler=_convert)


def add_large_message_options(cmd: argparse.ArgumentParser) -> None:
    """The changefeed's large-message handling, by TiCDC's option names."""
    cmd.add_argument("--large-message-handle-compression", choices=["none", "snappy", "lz4"],
                     default="none",
                     help="the changefeed's large-message-handle-compression: every value is "
                          "decompressed first (default none)")
    cmd.add_argument("--claim-check-storage-uri", metavar="URI",
                     help="the changefeed's claim-check-storage-uri as this consumer reads it: "
                          "file:///DIR (a mount of the storage) or s3://BUCKET/PREFIX (TiDB's "
                          "query options such as ?endpoint=...&region=...; else the AWS "
                          "variables): a claim-check message is replaced by the whole message "
                          "stored there (found by the location's base name)")
    cmd.add_argument("--claim-check-raw-value", action="store_true",
                     help="the changefeed's claim-check-raw-value=true (objects hold the raw "
                          "value, not TiCDC's {key, value} JSON)")
    cmd.add_argument("--upstream-tidb-dsn", metavar="DSN",
                     help="the upstream TiDB, as TiCDC's consumer takes it: "
                          "user:password@tcp(host:port)/ (or mysql://user:password@host:port): "
                          "a handle-key-only message's row is read there at the message's "
                          "commit ts (commit ts - 1 for the row before a delete or update) "
                          "and the message converted as if sent whole; without it such a "
                          "message is refused naming its table, key and commit ts")


def large_messages(args: argparse.Namespace) -> Any:
    """The `LargeMessages` the options give (checked: a storage URI or a DSN flatavro cannot
    use is refused before anything is read)."""
    from service.cdc.large_message import Compression, LargeMessages
    from service.codec.claim_check import checked_storage

    if args.claim_check_storage_uri:
        checked_storage(args.claim_check_storage_uri)
    if args.upstream_tidb_dsn:
        from service.codec.upstream import checked_dsn, pymysql_module

        checked_dsn(args.upstream_tidb_dsn)
        pymysql_module()
    return LargeMessages(Compression(args.large_message_handle_compression),
                         args.claim_check_storage_uri, args.claim_check_raw_value,
                         args.upstream_tidb_dsn or None)


def add_key_columns_option(cmd: argparse.ArgumentParser) -> None:
    """--key-columns SCHEMA.TABLE=A,B (repeatable)."""
    cmd.add_argument("--key-columns", action="append", default=[], type=_key_columns,
                     metavar="SCHEMA.TABLE=A,B",
                     help="the key of a table whose messages name none (Canal-JSON's pkNames "
                          "lists a primary key only, so a table keyed by a NOT NULL unique "
                          "index arrives keyless); used when registering from rows; "
                          "repeatable")


def key_columns(args: argparse.Namespace) -> dict[str, tuple[str, ...]]:
    """The --key-columns given, by ``schema.table``."""
    return dict(args.key_columns)


def _key_columns(text: str) -> tuple[str, tuple[str, ...]]:
    table, equals, columns = text.partition("=")
    names = tuple(c.strip() for c in columns.split(",") if c.strip())
    if not equals or table.count(".") != 1 or not all(table.split(".")) or not names:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not SCHEMA.TABLE=COLUMN[,COLUMN...] (e.g. shop.orders=a,b)")
    return table, names


def add_registry_options(cmd: argparse.ArgumentParser) -> None:
    """--registry-url | --registry-file (else the FLATAVRO_REGISTRY_* settings)."""
    where = cmd.add_mutually_exclusive_group()
    where.add_argument("--registry-url", help="a Confluent-compatible registry (auth and TLS "
                                              "from FLATAVRO_REGISTRY_* variables), or AWS "
                                              "Glue's: glue://<registry name> (credentials "
                                              "and region from the AWS variables)")
    where.add_argument("--registry-file", help="the embedded registry's SQLite file, in an "
                                               "existing directory (default: "
                                               "FLATAVRO_REGISTRY_DB_PATH or "
                                               "flatavro-registry.sqlite)")


def add_time_zone_option(cmd: argparse.ArgumentParser) -> None:
    """--tz: the changefeed's time zone, as TiCDC's own consumers take it."""
    cmd.add_argument("--tz", metavar="ZONE", help="the changefeed's time zone (TiCDC's "
                     "consumers' --tz; IANA name, default FLATAVRO_TZ or UTC): a Debezium "
                     "message's TIMESTAMP, written in UTC, is converted back to it, as an avro "
                     "changefeed writes it")


def _messages(path: str) -> list[tuple[str | None, str | None]]:
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidInputError(f"cannot read {path}: {exc.strerror}", path=path) from exc
    except UnicodeDecodeError as exc:
        raise InvalidInputError(f"{path} is not UTF-8 (byte offset {exc.start})", path=path,
                                offset=exc.start) from exc
    messages = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise InvalidInputError(f"{path} line {number}: not JSON ({exc.msg} at column "
                                    f"{exc.pos + 1})", path=path, line=number) from exc
        if not isinstance(item, dict) or not set(item) <= {"key", "value"} or not all(
                v is None or isinstance(v, str) for v in item.values()):
            raise InvalidInputError(f"{path} line {number}: expected {{\"key\": text|null, "
                                    f"\"value\": text|null}}", path=path, line=number)
        messages.append((item.get("key"), item.get("value")))
    return messages


def registry_settings(args: argparse.Namespace) -> RuntimeSettings:
    """The settings with the registry the command line names (the rest from the
    ``FLATAVRO_*`` environment)."""
    from service.usecases.settings import RuntimeSettings

    overrides: dict[str, Any] = {}
    if args.registry_url:
        overrides["registry_url"] = args.registry_url
    if args.registry_file:
        overrides["registry_db_path"] = args.registry_file
    if getattr(args, "tz", None):
        overrides["tz"] = args.tz
    return RuntimeSettings(**overrides)


async def _run(settings: RuntimeSettings, *, protocol: Protocol, request: ConvertInput
               ) -> dict[str, Any]:
    from service.usecases.runtime import Runtime

    runtime = Runtime.start(settings)
    try:
        return await runtime.converter.convert(protocol, request)
    finally:
        await runtime.stop()


def _convert(args: argparse.Namespace) -> int:
    # The converter's modules are imported by the command that runs it, not by every start of
    # `flatavro` (its other commands start in a fraction of the time).
    from service.codec.convert import ConvertInput

    request = ConvertInput(_messages(args.file), args.encoding, args.topic, args.register,
                           schema_options(args), key_columns(args),
                           large_messages=large_messages(args))
    result = asyncio.run(_run(registry_settings(args), protocol=Protocol(args.protocol),
                              request=request))
    sys.stdout.buffer.write(b"".join(orjson.dumps(m) + b"\n" for m in result["messages"]))
    for kind in ("skipped", "pending"):
        for entry in result[kind]:
            sys.stderr.write(orjson.dumps({kind: entry}).decode() + "\n")
    for note in result["notes"]:
        sys.stderr.write(orjson.dumps({"note": note}).decode() + "\n")
    return EXIT_PENDING if result["pending"] else 0
