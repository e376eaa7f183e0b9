"""``flatavro serve``: run the service with uvicorn (the app factory, one or more workers)."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, Any

from service.core.errors import Fix, InvalidOptionError

if TYPE_CHECKING:
    from service.api.settings import Settings

__all__ = ["register"]

APP_FACTORY = "service.api.app:create_app"
"""What each worker process imports and calls (``uvicorn --factory`` takes the same)."""


def register(commands: argparse._SubParsersAction[Any]) -> None:
    """Add ``serve`` to the top-level parser."""
    serve = commands.add_parser(
        "serve", help="run the HTTP service",
        description="Run the service (settings from FLATAVRO_* variables; host, port and "
                    "workers default to FLATAVRO_HOST/FLATAVRO_PORT/FLATAVRO_WORKERS, else "
                    "127.0.0.1:8080 and 1 worker).")
    serve.add_argument("--host", help="interface to bind")
    serve.add_argument("--port", type=int, help="port to bind")
    serve.add_argument("--workers", type=int,
                       help="worker processes, each using one core (they share the port and "
                            "the embedded registry's SQLite file)")
    serve.set_defaults(handler=_serve, hints={
        Fix.REGISTRY_PATH: "set FLATAVRO_REGISTRY_DB_PATH to a file in an existing, writable "
                           "directory"})


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from service.api.app import create_app
    from service.registry.embedded.registry import EmbeddedRegistry

    overrides = {k: v for k, v in (("host", args.host), ("port", args.port),
                                   ("workers", args.workers)) if v is not None}
    settings = _settings(overrides)
    if settings.embedded:
        # Open the store before uvicorn: a failure in its lifespan prints a traceback; here
        # it is the one line `main` prints (RegistryStoreError names the path). It also
        # leaves the file created and in WAL mode before the workers open it.
        EmbeddedRegistry(settings.registry_db_path).close()
    common: dict[str, Any] = dict(host=settings.host, port=settings.port, log_config=None,
                                  access_log=False, server_header=False)
    if settings.workers == 1:
        uvicorn.run(create_app(settings), **common)
        return 0
    # Each worker is a fresh interpreter building its app from the environment: put the
    # command-line values there so every worker runs (and logs) the same settings.
    os.environ.update({f"FLATAVRO_{k.upper()}": str(v) for k, v in overrides.items()})
    uvicorn.run(APP_FACTORY, factory=True, workers=settings.workers, **common)
    return 0


def _settings(overrides: dict[str, Any]) -> Settings:
    """`Settings` from the environment and `overrides`, refused in one line naming each
    variable at fault."""
    from pydantic import ValidationError

    from service.api.settings import Settings

    try:
        return Settings(**overrides)
    except ValidationError as exc:
        problems = "; ".join(f"FLATAVRO_{'_'.join(map(str, e['loc'])).upper()}: {e['msg']}"
                             for e in exc.errors())
        raise InvalidOptionError(f"invalid settings: {problems}") from exc
