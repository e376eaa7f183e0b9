"""What a route declares for the OpenAPI document: its problem+json answers (`problem`, for
``responses=``) and the schema of a body it reads raw (`documented_body`)."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

__all__ = ["problem", "documented_body"]


def problem(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses` entries for problem+json statuses (422 always: request validation
    answers problem+json too). `Problem` joins the components in
    `service.api.docs.service_openapi`."""
    return {s: {"description": HTTPStatus(s).phrase, "content": {"application/problem+json": {
        "schema": {"$ref": "#/components/schemas/Problem"}}}}  # one dict each: examples differ
            for s in sorted({422, *statuses})}


def documented_body(model: type[Any], *media: str) -> dict[str, Any]:
    """`openapi_extra` describing a raw body with `model`'s schema (added to components)."""
    ref = {"schema": {"$ref": f"#/components/schemas/{model.__name__}"}}
    content: dict[str, Any] = {"application/json": ref}
    content.update({m: {"schema": {"type": "string", "format": "binary"}} for m in media})
    return {"requestBody": {"required": True, "content": content},
            "x-documented-models": [model.__name__]}
