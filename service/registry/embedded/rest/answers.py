"""What the embedded registry's REST API answers: Confluent's media type, bodies and errors."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.responses import Response

from service.registry.compatibility import CompatibilityVerdict
from service.registry.model import RegisteredSchema

__all__ = ["CONTENT_TYPE", "error_answer", "json_answer", "registered", "text_answer",
           "verdict"]

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
"""Confluent's media type, on every answer."""


def json_answer(payload: Any, status: int = 200) -> Response:
    """`payload` as JSON, with Confluent's media type."""
    return Response(orjson.dumps(payload), status_code=status, media_type=CONTENT_TYPE)


def text_answer(text: str) -> Response:
    """A schema text as is (``.../schema`` endpoints), with Confluent's media type."""
    return Response(text.encode(), media_type=CONTENT_TYPE)


def error_answer(message: str, *, status: int, code: int) -> Response:
    """Confluent's error body ``{"error_code": code, "message": message}``."""
    return json_answer({"error_code": code, "message": message}, status)


def registered(found: RegisteredSchema) -> dict[str, Any]:
    """A registered version as Confluent lists it."""
    return {"subject": found.subject, "version": found.version, "id": found.id,
            "schema": found.schema}


def verdict(report: tuple[CompatibilityVerdict, list[str]], *, verbose: bool
            ) -> dict[str, Any]:
    """A compatibility check's answer, with its messages when `verbose`."""
    found, messages = report
    out: dict[str, Any] = {"is_compatible": found.compatible}
    if verbose:
        out["messages"] = messages
    return out
