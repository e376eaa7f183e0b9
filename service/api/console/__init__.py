"""The registry console at ``/console``: server-rendered pages (Jinja2, autoescaped) over the
same use-cases as the ``/v1`` endpoints, usable without JavaScript (docs/console.md)."""

from __future__ import annotations

import os

from fastapi import FastAPI, Request
from starlette.staticfiles import StaticFiles

from service.api.auth import ApiKeys
from service.api.console.pages import HERE, Pages
from service.api.console.routes import router
from service.kafka_client.settings import client_settings

__all__ = ["install_console"]


def _keys_of(request: Request) -> ApiKeys:
    keys: ApiKeys = request.app.state.keys
    return keys


def install_console(app: FastAPI) -> None:
    """Serve the console's pages and its stylesheet."""
    kafka = client_settings(os.environ, None)
    app.state.console = Pages(_keys_of, kafka=kafka if "bootstrap.servers" in kafka else {})
    app.include_router(router)
    app.mount("/console/static", StaticFiles(directory=HERE / "static"), name="console-static")
