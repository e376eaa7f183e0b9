"""The embedded registry's REST app served over a real socket (`ServedRegistry`)."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.types import ASGIApp

from service.registry.embedded.registry import EmbeddedRegistry
from service.registry.embedded.rest import create_registry_app
from tests.support.harness import ServedApp


class ServedRegistry(ServedApp):
    """The embedded registry's REST app served over a real socket, optionally under a prefix."""

    def __init__(self, registry: EmbeddedRegistry, *, prefix: str = "",
                 max_body_bytes: int = 1 << 20) -> None:
        app: ASGIApp = create_registry_app(registry, max_body_bytes=max_body_bytes)
        if prefix:
            app = Starlette(routes=[Mount(prefix, app=app)])
        super().__init__(app, health_path=prefix + "/")
        self.registry = registry
        self.prefix = prefix

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.prefix}"
