"""The service's own OpenAPI document (``/openapi.json``): FastAPI's, completed with what it
cannot know (security under the running settings, the raw-body models, the real error
bodies), operations in the docs page's order."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, routing
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel
from starlette.routing import BaseRoute

from service.api import models
from service.api.deps import require_write
from service.api.docs.registry_openapi import WRITE
from service.api.docs.spec import (
    AuthDoc,
    dependency_calls,
    document_body_answers,
    document_examples,
    document_security,
)

__all__ = ["TAGS", "OPERATION_ORDER", "service_document"]

TAGS = [
    {"name": "schemas", "description": "Generate flat-avro schemas; check and register "
                                       "tables against the registry"},
    {"name": "topics", "description": "What a topic holds"},
    {"name": "codec", "description": "Encode rows to and decode rows from the Confluent "
                                     "wire format"},
    {"name": "registry-admin", "description": "Subjects, versions, compatibility levels"},
    {"name": "ops", "description": "Health, readiness and metrics"},
]
OPERATION_ORDER = (
    "generateSchemas", "checkTable", "registerTable",
    "getTopicSchemas", "encodeRecords", "decodeMessages", "convertMessages",
    "listSubjects", "getSubject", "listVersions", "getVersion", "diffVersions",
    "deleteVersion", "deleteSubject", "deleteTopic", "getSchemaById",
    "getGlobalCompatibility", "setGlobalCompatibility",
    "getCompatibility", "setCompatibility", "deleteCompatibility",
    "getGlobalMode", "setGlobalMode", "getSubjectMode", "setSubjectMode", "deleteSubjectMode",
    "healthz", "readyz", "metrics",
)
"""The order the document (and so the docs page) lists operations in, whatever router serves
them; an operation not listed comes after these, in the order its router was included."""


def service_document(app: FastAPI, auth: AuthDoc) -> dict[str, Any]:
    """The app's OpenAPI document: security as `auth` requires it, the raw-body models and
    `Problem` in the components, every write marked, the example error bodies."""
    spec = get_openapi(title=app.title, version=app.version, description=app.description,
                       routes=_in_page_order(app.routes), tags=TAGS)
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
    document_security(app, spec, auth=auth)
    _mark_writes(app, spec)
    document_body_answers(spec)
    document_examples(spec)
    return spec


def _in_page_order(routes: list[BaseRoute]) -> list[routing.RouteContext]:
    """Every route (included routers' too) with the operations in `OPERATION_ORDER`'s order."""
    def place(indexed: tuple[int, routing.RouteContext]) -> tuple[int, int]:
        index, route = indexed
        operation = getattr(route, "operation_id", None)
        if operation in OPERATION_ORDER:
            return OPERATION_ORDER.index(operation), index
        return len(OPERATION_ORDER), index

    contexts = enumerate(routing.iter_route_contexts(routes))
    return [route for _, route in sorted(contexts, key=place)]


def _restore_null_examples(components: dict[str, Any]) -> None:
    """FastAPI's document encoder drops every null member, the models' examples' too; put
    those back (`"configured": null` is what an inherited level looks like)."""
    for name, schema in components.items():
        model = getattr(models, name, None)
        if "examples" in schema and isinstance(model, type) and issubclass(model, BaseModel):
            schema["examples"] = model.model_json_schema()["examples"]


def _mark_writes(app: FastAPI, spec: dict[str, Any]) -> None:
    """Prefix the summary of every operation that needs a write key (whatever the settings)
    with `WRITE`, and say so first in its description: the page is an admin's console."""
    for route in routing.iter_route_contexts(app.routes):
        if isinstance(route.original_route, routing.APIRoute) and route.include_in_schema \
                and require_write in dependency_calls(route.dependant):
            for method in route.methods or ():
                operation = spec["paths"][route.path_format].get(method.lower())
                if operation is not None:
                    operation["summary"] = WRITE + operation["summary"]
                    operation["description"] = (
                        "**Changes the registry** (needs a write key when "
                        "`FLATAVRO_API_KEYS` is set). " + operation["description"])
