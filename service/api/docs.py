"""The OpenAPI document and the docs page, served with no internet access.

Swagger UI's assets come from the ``fastapi-swagger`` package (a PyPI wheel that ships
Swagger UI 5) and are served under ``/docs/assets``; nothing is fetched from a CDN.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.openapi.utils import get_openapi
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel

from service.api import admin_models, models
from service.api.spec import (
    AuthDoc,
    document_body_answers,
    document_examples,
    document_security,
)

__all__ = ["install_docs", "TAGS"]

TAGS = [
    {"name": "schemas", "description": "Generate flat-avro schemas; check and register "
                                       "tables against the registry"},
    {"name": "topics", "description": "What a topic holds"},
    {"name": "codec", "description": "Encode rows to and decode rows from the Confluent "
                                     "wire format"},
    {"name": "registry-admin", "description": "Subjects, versions, compatibility levels"},
    {"name": "ops", "description": "Health, readiness and metrics"},
]
_ASSETS = "/docs/assets"


def install_docs(app: FastAPI, auth: AuthDoc) -> None:
    """Serve ``/openapi.json`` (with the raw-body models added, and security as `auth`
    requires it) and ``/docs`` offline."""
    assets = resources.files("fastapi_swagger") / "resources"
    app.mount(_ASSETS, StaticFiles(directory=str(assets)), name="docs-assets")

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = _document(app, auth)
        return app.openapi_schema

    async def docs_page() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url="/openapi.json", title=f"{app.title} - docs",
            swagger_js_url=f"{_ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{_ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{_ASSETS}/favicon-32x32.png",
            swagger_ui_parameters={"displayOperationId": True, "tryItOutEnabled": True})

    app.openapi = openapi  # type: ignore[method-assign]
    app.add_api_route("/docs", docs_page, include_in_schema=False)


def _restore_null_examples(components: dict[str, Any]) -> None:
    """FastAPI's document encoder drops every null member, the models' examples' too; put
    those back (`"configured": null` is what an inherited level looks like)."""
    for name, schema in components.items():
        model = getattr(admin_models, name, None) or getattr(models, name, None)
        if "examples" in schema and isinstance(model, type) and issubclass(model, BaseModel):
            schema["examples"] = model.model_json_schema()["examples"]


def _document(app: FastAPI, auth: AuthDoc) -> dict[str, Any]:
    spec = get_openapi(title=app.title, version=app.version, description=app.description,
                       routes=app.routes, tags=TAGS)
    components = spec.setdefault("components", {}).setdefault("schemas", {})
    components["Problem"] = models.Problem.model_json_schema()
    _restore_null_examples(components)
    for path in spec["paths"].values():
        for operation in path.values():
            for name in operation.pop("x-documented-models", []):
                model: type[BaseModel] = getattr(models, name)
                schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
                components.update(schema.pop("$defs", {}))
                components[name] = schema
    spec["components"]["schemas"] = dict(sorted(components.items()))
    document_security(app, spec, auth)
    document_body_answers(spec)
    document_examples(spec)
    return spec
