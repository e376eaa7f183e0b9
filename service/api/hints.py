"""The HTTP API's words for an error's `fix`: its own body fields, never the CLI flags."""

from __future__ import annotations

from collections.abc import Mapping

from service.core.errors import Fix, ServiceError

__all__ = ["HINTS", "hint_of"]

HINTS: Mapping[Fix, str] = {
    Fix.DATABASE: 'send "database": "db" with the "ddl", or write CREATE TABLE db.t',
    Fix.REGISTER_TABLE: "register the table from its CREATE TABLE first "
                        "(POST /v1/tables/register)",
    Fix.REGISTER_ON_CONVERT: 'convert with "register": true',
    Fix.DECIMAL_STRING: 'send "options": {"decimal_handling_mode": "string"}',
    Fix.REGISTRY_PATH: "set FLATAVRO_REGISTRY_DB_PATH to a file in an existing, writable "
                       "directory",
}


def hint_of(error: ServiceError) -> str | None:
    """What to change to get past `error`, in request terms (None when nothing helps)."""
    return " or ".join(HINTS[f] for f in error.fix) or None
