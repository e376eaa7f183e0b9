"""`examples(...)`: the model config that puts example bodies in a model's JSON Schema."""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict

__all__ = ["examples"]


def examples(*bodies: dict[str, Any], populate_by_name: bool = False) -> ConfigDict:
    """A model config whose JSON Schema lists `bodies` as ``examples`` (the docs page shows
    them); `populate_by_name` lets an aliased field be set by its Python name too."""
    extra: dict[str, Any] = {"examples": list(bodies)}
    if populate_by_name:
        return ConfigDict(populate_by_name=True, json_schema_extra=extra)
    return ConfigDict(json_schema_extra=extra)
