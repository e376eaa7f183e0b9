"""``flatavro serve``: run the service with uvicorn (one worker, the app factory)."""

from __future__ import annotations

import argparse
from typing import Any

from service.core.errors import Fix, InvalidOptionError

__all__ = ["register"]


def register(commands: Any) -> None:
    """Add ``serve`` to the top-level parser."""
    serve = commands.add_parser(
        "serve", help="run the HTTP service",
        description="Run the service (settings from FLATAVRO_* variables; host and port "
                    "default to FLATAVRO_HOST/FLATAVRO_PORT, else 127.0.0.1:8080).")
    serve.add_argument("--host", help="interface to bind")
    serve.add_argument("--port", type=int, help="port to bind")
    serve.set_defaults(handler=_serve, hints={
        Fix.REGISTRY_PATH: "set FLATAVRO_REGISTRY_DB_PATH to a file in an existing, writable "
                           "directory"})


def _serve(args: argparse.Namespace) -> int:
    import uvicorn
    from pydantic import ValidationError

    from service.api.app import create_app
    from service.api.settings import Settings
    from service.registry.embedded.registry import EmbeddedRegistry

    overrides = {k: v for k, v in (("host", args.host), ("port", args.port)) if v is not None}
    try:
        settings = Settings(**overrides)
    except ValidationError as exc:
        problems = "; ".join(f"FLATAVRO_{'_'.join(map(str, e['loc'])).upper()}: {e['msg']}"
                             for e in exc.errors())
        raise InvalidOptionError(f"invalid settings: {problems}") from exc
    if settings.embedded:
        # Open the store before uvicorn: a failure in its lifespan prints a traceback; here
        # it is the one line `main` prints (RegistryStoreError names the path).
        EmbeddedRegistry(settings.registry_db_path).close()
    uvicorn.run(create_app(settings), host=settings.host, port=settings.port,
                log_config=None, access_log=False, server_header=False)
    return 0
