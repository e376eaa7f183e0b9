"""The ``flatavro`` console script: argument parsing and dispatch to the subcommands."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

from service.cli import bridge_cmd, convert_cmd, schema_cmd, serve_cmd
from service.cli.hints import error_line
from service.core.errors import ServiceError

__all__ = ["main", "build_parser"]


class _OneLineParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line on stderr and exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser of the ``flatavro`` command."""
    parser = _OneLineParser(
        prog="flatavro",
        description="TiCDC-identical flat-avro schemas for TiDB tables, and the flatavro service.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                     parser_class=_OneLineParser)
    schema_cmd.register(commands)
    serve_cmd.register(commands)
    convert_cmd.register(commands)
    bridge_cmd.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit code (2 on bad input)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except ServiceError as exc:
        print(error_line(exc, getattr(args, "hints", None)), file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
