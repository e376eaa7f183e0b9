"""The command line's words for an error's `fix`: its own flags, never the HTTP fields."""

from __future__ import annotations

from collections.abc import Mapping

from service.core.errors import Fix, ServiceError

__all__ = ["HINTS", "error_line"]

HINTS: Mapping[Fix, str] = {
    Fix.DATABASE: "pass --schema DB or write CREATE TABLE db.t",
    Fix.REGISTER_TABLE: "register the table from its CREATE TABLE first (POST "
                        "/v1/tables/register of a `flatavro serve` on the same registry)",
    Fix.REGISTER_ON_CONVERT: "convert with --register",
    Fix.DECIMAL_STRING: "pass --decimal-handling-mode string",
    Fix.REGISTRY_PATH: "pass --registry-file (or set FLATAVRO_REGISTRY_DB_PATH) naming a file "
                       "in an existing, writable directory",
}
"""Hint per fix; a command may word one its own way (``set_defaults(hints=...)``)."""


def error_line(error: ServiceError, hints: Mapping[Fix, str] | None = None) -> str:
    """The one line ``flatavro`` prints for `error`: code, message and the hint in CLI terms.

    Args:
        error: the failure.
        hints: the running command's own wording, over `HINTS`.
    """
    words = {**HINTS, **(hints or {})}
    message = " ".join(str(error).split())
    hint = " or ".join(words[f] for f in error.fix)
    return f"flatavro: error [{error.code}]: {message}" + (f"; {hint}" if hint else "")
