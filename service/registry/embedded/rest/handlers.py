"""The embedded registry's REST handlers: each parses the request, calls one `EmbeddedRegistry`
method and returns what is rendered (`app` turns failures into Confluent's errors)."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, TypeVar

from starlette.requests import Request

from service.registry.compatibility import CompatibilityVerdict
from service.registry.embedded.inputs import parse_level
from service.registry.embedded.registry import EmbeddedRegistry
from service.registry.embedded.rest.answers import registered, text_answer, verdict
from service.registry.embedded.rest.parsing import (
    BadRequest,
    body_of,
    flag,
    int_id,
    optional_int,
    page,
    references,
    schema_of,
    subject_of,
)
from service.registry.errors import (
    InvalidSchemaError,
    SubjectConfigNotFoundError,
    SubjectModeNotFoundError,
    SubjectNotFoundError,
)
from service.registry.model import RegistryMode

__all__ = ["Handlers"]

T = TypeVar("T")


class Handlers:
    """The REST handlers of one registry, one per route (`app.create_registry_app`)."""

    def __init__(self, registry: EmbeddedRegistry, max_body_bytes: int) -> None:
        """Serve `registry`, refusing bodies longer than `max_body_bytes` (413)."""
        self.registry, self.max_body_bytes = registry, max_body_bytes

    async def body(self, request: Request) -> dict[str, Any]:
        """The request's JSON object, within the size limit."""
        return await body_of(request, self.max_body_bytes)

    async def root(self, request: Request) -> Any:
        """``GET /``: an empty object (Confluent's liveness answer)."""
        return {}

    async def schema_types(self, request: Request) -> Any:
        """``GET /schemas/types``: AVRO only."""
        return ["AVRO"]

    async def schema_by_id(self, request: Request) -> Any:
        """``GET /schemas/ids/{id}``: the schema text (and ``maxId`` with ``fetchMaxId``)."""
        found: dict[str, Any] = {"schema": await self.registry.schema_by_id(int_id(request))}
        if flag(request, "fetchMaxId"):  # the highest id handed out, deleted ones included
            found["maxId"] = await self.registry.max_id()
        return found

    async def schema_text_by_id(self, request: Request) -> Any:
        """``GET /schemas/ids/{id}/schema``: the schema text itself."""
        return text_answer(await self.registry.schema_by_id(int_id(request)))

    async def list_schemas(self, request: Request) -> Any:
        """``GET /schemas``: every registered version, paged."""
        found = await self.registry.schemas(prefix=request.query_params.get("subjectPrefix", ""),
                                            deleted=flag(request, "deleted"),
                                            latest_only=flag(request, "latestOnly"))
        return page(request, [registered(f) for f in found])

    async def id_subjects(self, request: Request) -> Any:
        """``GET /schemas/ids/{id}/subjects``: the subjects holding an id."""
        uses = await self.registry.uses_of(int_id(request), deleted=flag(request, "deleted"))
        return page(request, sorted({s for s, _ in uses}))

    async def id_versions(self, request: Request) -> Any:
        """``GET /schemas/ids/{id}/versions``: the (subject, version) pairs holding an id."""
        uses = await self.registry.uses_of(int_id(request), deleted=flag(request, "deleted"))
        return page(request, [{"subject": s, "version": v} for s, v in uses])

    async def list_subjects(self, request: Request) -> Any:
        """``GET /subjects``."""
        # confluent-kafka's Python client sends `deleted_only`; Confluent reads `deletedOnly`
        return page(request, await self.registry.subjects(
            deleted=flag(request, "deleted"),
            deleted_only=flag(request, "deletedOnly", "deleted_only"),
            prefix=request.query_params.get("subjectPrefix", "")))

    async def list_versions(self, request: Request) -> Any:
        """``GET /subjects/{subject}/versions``."""
        return page(request, await self.registry.versions(
            subject_of(request), deleted=flag(request, "deleted"),
            deleted_only=flag(request, "deletedOnly", "deleted_only"),
            deleted_as_negative=flag(request, "deletedAsNegative")))

    async def referenced_by(self, request: Request) -> Any:
        """``GET /subjects/{subject}/versions/{version}/referencedby``: none."""
        return page(request, await self.registry.referenced_by(
            subject_of(request), request.path_params["version"],
            deleted=flag(request, "deleted")))

    async def register(self, request: Request) -> Any:
        """``POST /subjects/{subject}/versions``."""
        payload = await self.body(request)
        found = await self.registry.register(
            subject_of(request), schema_of(payload), normalize=flag(request, "normalize"),
            references=references(payload), schema_id=optional_int(payload, "id", unset=(-1,)),
            version=optional_int(payload, "version", unset=(0, -1)),
            force=flag(request, "force"))
        return {"id": found.id, "version": found.version, "schema": found.schema}

    async def lookup(self, request: Request) -> Any:
        """``POST /subjects/{subject}``: the version holding a schema."""
        payload = await self.body(request)
        found = await self.registry.lookup(subject_of(request), schema_of(payload),
                                           deleted=flag(request, "deleted"),
                                           normalize=flag(request, "normalize"),
                                           references=references(payload))
        return registered(found)

    async def get_version(self, request: Request) -> Any:
        """``GET /subjects/{subject}/versions/{version}``."""
        found = await self.registry.get_version(subject_of(request),
                                                request.path_params["version"],
                                                deleted=flag(request, "deleted"))
        return registered(found)

    async def get_version_schema(self, request: Request) -> Any:
        """``GET /subjects/{subject}/versions/{version}/schema``: the schema text itself."""
        found = await self.registry.get_version(subject_of(request),
                                                request.path_params["version"],
                                                deleted=flag(request, "deleted"))
        return text_answer(found.schema)

    async def delete_subject(self, request: Request) -> Any:
        """``DELETE /subjects/{subject}``."""
        return await self.registry.delete_subject(subject_of(request),
                                                  permanent=flag(request, "permanent"))

    async def delete_version(self, request: Request) -> Any:
        """``DELETE /subjects/{subject}/versions/{version}``."""
        return await self.registry.delete_version(subject_of(request),
                                                  request.path_params["version"],
                                                  permanent=flag(request, "permanent"))

    async def compatibility(self, request: Request) -> Any:
        """``POST /compatibility/subjects/{subject}/versions[/{version}]``."""
        payload, verbose = await self.body(request), flag(request, "verbose")
        try:
            report = await self.registry.compatibility_report(
                subject_of(request), schema_of(payload),
                version=request.path_params.get("version"),
                normalize=flag(request, "normalize"), references=references(payload))
        except InvalidSchemaError as exc:
            if not verbose:
                raise
            # Confluent: a verbose check of an invalid schema answers 200 with the reason
            report = (CompatibilityVerdict(False), [exc.message])
        return verdict(report, verbose=verbose)

    async def config(self, request: Request) -> Any:
        """``GET`` / ``PUT`` / ``DELETE`` ``/config[/{subject}]``."""
        name = request.path_params.get("subject")
        if request.method == "PUT":
            payload = await self.body(request)
            level = parse_level(str(payload.get("compatibility")
                                    or payload.get("compatibilityLevel") or ""))
            return {"compatibility": (await self.registry.set_compatibility(level, name)).value}
        if request.method == "DELETE":
            removed = await _removed_setting(self.registry.delete_compatibility(name), name)
            return {"compatibilityLevel": removed.value}
        level = await self.registry.get_compatibility(
            name, default_to_global=flag(request, "defaultToGlobal"))
        return {"compatibilityLevel": level.value}

    async def mode(self, request: Request) -> Any:
        """``GET`` / ``PUT`` / ``DELETE`` ``/mode[/{subject}]``."""
        name = request.path_params.get("subject")
        if request.method == "PUT":
            wanted = str((await self.body(request)).get("mode", "")).upper()
            if wanted not in RegistryMode.__members__:
                raise BadRequest(f"Invalid mode {wanted!r}; valid: READWRITE, READONLY, IMPORT",
                                 status=422, code=42204)
            return {"mode": (await self.registry.set_mode(
                RegistryMode(wanted), name, force=flag(request, "force"))).value}
        if request.method == "DELETE":
            removed = await _removed_setting(self.registry.delete_mode(str(name)), name)
            return {"mode": removed.value}
        if name is not None and not flag(request, "defaultToGlobal"):
            configured = await self.registry.configured_mode(name)
            if configured is None:
                raise SubjectModeNotFoundError(
                    f"Subject '{name}' does not have subject-level mode configured")
            return {"mode": configured.value}
        return {"mode": (await self.registry.get_mode(name)).value}


async def _removed_setting(removal: Awaitable[T], subject: str | None) -> T:
    """Confluent answers DELETE /config/{s} and /mode/{s} for a subject without a setting of
    its own with 40401 "Subject not found" (not the 40408 / 40409 of a GET)."""
    try:
        return await removal
    except (SubjectConfigNotFoundError, SubjectModeNotFoundError) as exc:
        raise SubjectNotFoundError(f"Subject '{subject}' not found.", subject=subject) from exc
