"""The OpenAPI documents and the docs page, served with no internet access.

``/openapi.json`` is the service's own API; ``/openapi-registry.json`` (with the embedded
registry only) is the Confluent API mounted at ``/registry``; ``/docs`` shows both. Swagger
UI's assets come from the ``fastapi-swagger`` package (a PyPI wheel that ships Swagger UI 5)
and are served under ``/docs/assets``; nothing is fetched from a CDN.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

from fastapi import FastAPI, routing
from fastapi.openapi.utils import get_openapi
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel

from service.api import admin_models, models, registry_openapi
from service.api.deps import require_write
from service.api.docs_page import Definition, docs_page
from service.api.registry_openapi import WRITE
from service.api.spec import (
    AuthDoc,
    dependency_calls,
    document_body_answers,
    document_examples,
    document_security,
)

__all__ = ["install_docs", "TAGS", "REGISTRY_DOCUMENT_URL"]

TAGS = [
    {"name": "schemas", "description": "Generate flat-avro schemas; check and register "
                                       "tables against the registry"},
    {"name": "topics", "description": "What a topic holds"},
    {"name": "codec", "description": "Encode rows to and decode rows from the Confluent "
                                     "wire format"},
    {"name": "registry-admin", "description": "Subjects, versions, compatibility levels"},
    {"name": "ops", "description": "Health, readiness and metrics"},
]
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
            app.openapi_schema = _document(app, auth)
            if registry:
                app.openapi_schema["info"]["description"] += _REGISTRY_NOTE
        return app.openapi_schema

    async def page() -> HTMLResponse:
        return HTMLResponse(docs_page(f"{app.title} - docs", _ASSETS, definitions, _SWAGGER))

    app.openapi = openapi  # type: ignore[method-assign]
    app.add_api_route("/docs", page, include_in_schema=False)


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
    _mark_writes(app, spec)
    document_body_answers(spec)
    document_examples(spec)
    return spec


def _mark_writes(app: FastAPI, spec: dict[str, Any]) -> None:
    """Prefix the summary of every operation that needs a write key (whatever the settings)
    with `WRITE`, and say so first in its description: the page is an admin's console."""
    for route in routing.iter_route_contexts(app.routes):
        if isinstance(route.original_route, routing.APIRoute) and route.include_in_schema \
                and require_write in dependency_calls(route.dependant):
            for method in route.methods:
                operation = spec["paths"][route.path_format].get(method.lower())
                if operation is not None:
                    operation["summary"] = WRITE + operation["summary"]
                    operation["description"] = (
                        "**Changes the registry** (needs a write key when "
                        "`FLATAVRO_API_KEYS` is set). " + operation["description"])
