"""The OpenAPI documents and the docs page, served with no internet access.

``/openapi.json`` is the service's own API; ``/openapi-registry.json`` (with the embedded
registry only) is the Confluent API mounted at ``/registry``; ``/docs`` shows both. Swagger
UI's assets come from the ``fastapi-swagger`` package (a PyPI wheel that ships Swagger UI 5)
and are served under ``/docs/assets``; nothing is fetched from a CDN.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

from fastapi import FastAPI
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles

from service.api.docs import registry_openapi
from service.api.docs.page import Definition, docs_page
from service.api.docs.service_openapi import service_document
from service.api.docs.spec import AuthDoc

__all__ = ["install_docs", "REGISTRY_DOCUMENT_URL"]

REGISTRY_DOCUMENT_URL = "/openapi-registry.json"
_ASSETS = "/docs/assets"
_SWAGGER = {"displayOperationId": True, "tryItOutEnabled": True}
_REGISTRY_NOTE = ("\n\nThe embedded registry's Confluent REST API, mounted at `/registry`, has "
                  f"its own document: `{REGISTRY_DOCUMENT_URL}` (on `/docs`, pick it under "
                  "*Select a definition*).")


def install_docs(app: FastAPI, auth: AuthDoc, *, registry: bool = False) -> None:
    """Serve ``/openapi.json`` (with the raw-body models added, and security as `auth`
    requires it), with `registry` (the embedded one is mounted) the registry's document at
    ``/openapi-registry.json``, and ``/docs`` offline, showing both."""
    assets = resources.files("fastapi_swagger") / "resources"
    app.mount(_ASSETS, StaticFiles(directory=str(assets)), name="docs-assets")
    definitions = [Definition("flatavro", f"{app.title} API (/v1, ops)", "/openapi.json")]
    if registry:
        definitions.append(Definition("registry", "Embedded schema registry: Confluent REST "
                                      "API (/registry)", REGISTRY_DOCUMENT_URL))
        registry_spec = registry_openapi.document(auth)

        async def registry_document() -> JSONResponse:
            return JSONResponse(registry_spec)

        app.add_api_route(REGISTRY_DOCUMENT_URL, registry_document, include_in_schema=False)

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = service_document(app, auth)
            if registry:
                app.openapi_schema["info"]["description"] += _REGISTRY_NOTE
        return app.openapi_schema

    async def page() -> HTMLResponse:
        return HTMLResponse(docs_page(f"{app.title} - docs", assets=_ASSETS,
                                      definitions=definitions, parameters=_SWAGGER))

    async def document() -> JSONResponse:
        return JSONResponse(app.openapi())

    async def home() -> RedirectResponse:
        return RedirectResponse("/docs")

    # FastAPI's documented way to extend the document is to replace `app.openapi`, which
    # mypy sees as assigning to a method.
    app.openapi = openapi  # type: ignore[method-assign]
    # An API route (not FastAPI's plain one, the app is built with openapi_url=None), so that
    # the request metrics label it `/openapi.json` rather than `unmatched`.
    app.add_api_route("/openapi.json", document, include_in_schema=False)
    app.add_api_route("/docs", page, include_in_schema=False)
    app.add_api_route("/", home, include_in_schema=False)
