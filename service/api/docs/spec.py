"""What FastAPI's generated OpenAPI document cannot know: which operations need an API key
under the running settings, and the real error bodies of each status."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, routing
from fastapi.dependencies.models import Dependant

from service.api.deps import access_level, may_write
from service.api.docs.problem_examples import examples_by_status
from service.api.docs.route_docs import problem

__all__ = ["AuthDoc", "dependency_calls", "document_security", "document_body_answers",
           "document_examples"]


class AuthDoc:
    """The API-key settings the document describes: `keys` configured, `protect_reads`."""

    def __init__(self, *, keys: bool, protect_reads: bool) -> None:
        self.keys, self.protect_reads = keys, protect_reads and keys

    def needs(self, calls: set[Any]) -> str | None:
        """``required``, ``optional`` (a key only unlocks more) or None, for an operation
        whose dependencies call `calls`."""
        if not self.keys:
            return None
        level = access_level(calls)
        if level == "write" or (level == "read" and self.protect_reads):
            return "required"
        return "optional" if may_write in calls else None


def dependency_calls(dependant: Dependant) -> set[Any]:
    """Every callable an operation's dependencies call, nested ones too."""
    found = {dependant.call}
    for sub in dependant.dependencies:
        found |= dependency_calls(sub)
    return found


def document_security(app: FastAPI, spec: dict[str, Any], *, auth: AuthDoc) -> None:
    """Keep `security` (and the 401 answer) only on operations that need a key now; drop the
    schemes when no keys are configured."""
    for route in routing.iter_route_contexts(app.routes):  # included routers' routes too
        if not isinstance(route.original_route, routing.APIRoute) \
                or not route.include_in_schema:
            continue
        need = auth.needs(dependency_calls(route.dependant))
        for method in route.methods or ():
            operation = spec["paths"][route.path_format].get(method.lower())
            if operation is None:
                continue
            schemes = operation.pop("security", [])
            if need is None:
                operation["responses"].pop("401", None)
            else:
                operation["security"] = schemes + ([{}] if need == "optional" else [])
    if not auth.keys:
        spec.get("components", {}).pop("securitySchemes", None)


def document_body_answers(spec: dict[str, Any]) -> None:
    """Every operation with a body may answer 413 (over FLATAVRO_MAX_BODY_BYTES) and 415 (a
    Content-Type it does not take)."""
    for path in spec["paths"].values():
        for operation in path.values():
            if "requestBody" in operation:
                answers = {str(k): v for k, v in problem(413, 415).items()}
                operation["responses"] = {**answers, **operation["responses"]}


def document_examples(spec: dict[str, Any]) -> None:
    """Put every example body of a status on each problem+json answer with that status (as
    shared `components/examples`)."""
    by_status = examples_by_status()
    components = spec.setdefault("components", {}).setdefault("examples", {})
    for status, examples in by_status.items():
        for name, example in examples.items():
            components[f"{status}-{name}"] = example
    spec["components"]["examples"] = dict(sorted(components.items()))
    for path in spec["paths"].values():
        for operation in path.values():
            for status, response in operation["responses"].items():
                media = response.get("content", {}).get("application/problem+json")
                if media is not None and status.isdigit() and int(status) in by_status:
                    media["examples"] = {
                        name: {"$ref": f"#/components/examples/{status}-{name}"}
                        for name in by_status[int(status)]}
