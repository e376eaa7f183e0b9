"""`GlueSchemaRegistry`: AWS Glue's Schema Registry as a `SchemaRegistry` (boto3).

Chosen by ``FLATAVRO_REGISTRY_URL=glue://<registry name>`` (``?region=...&endpoint=...``;
otherwise boto3's own chain: ``AWS_REGION``, ``AWS_ENDPOINT_URL_GLUE`` / ``AWS_ENDPOINT_URL``,
credentials from the environment, profile or instance role). A subject is a Glue *schema* of
that name (TiCDC's ``<topic>-key`` / ``<topic>-value``), a version a Glue *schema version*.

Registration does what TiCDC's Glue schema manager does (an existing schema gets a new version
with ``RegisterSchemaVersion``, a new one is made by ``CreateSchema`` with AVRO data format),
with two differences (docs/registry.md): the definition is first looked up
(``GetSchemaByDefinition``), so registering a version again adds nothing; and flatavro checks
compatibility itself, at the schema's own Glue level (``BACKWARD_ALL`` and so on compared as
Confluent's ``*_TRANSITIVE``), before it asks Glue: Glue checks too, while moto, the emulator
the tests use, does not check at all. New schemas get `compatibility` (Glue's own default,
BACKWARD; TiCDC creates its schemas with NONE).

Glue has no global integer ids: its frames carry the schema version's UUID
(`RegisteredSchema.glue_id`). So that the rest of flatavro can keep schema ids as numbers, each
version this process meets gets a number of its own (1, 2, ...), valid in this process only.
"""

from __future__ import annotations

import asyncio
import functools
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

from service.registry.compatibility import (
    CompatibilityLevel,
    CompatibilityVerdict,
    check_compatibility,
    parse_avro,
)
from service.registry.errors import (
    IncompatibleSchemaError,
    InvalidRegistryUrlError,
    InvalidSchemaError,
    RegistryAuthError,
    RegistryError,
    RegistryUnavailableError,
    RegistryUnsupportedError,
    SchemaNotFoundError,
    SubjectNotFoundError,
    VersionNotFoundError,
)
from service.registry.interface import VersionSpec
from service.registry.model import RegisteredSchema, RegistryMode

__all__ = ["GLUE_SCHEME", "GlueLocation", "GlueSchemaRegistry", "is_glue_url"]

GLUE_SCHEME = "glue"

_LEVELS = {"NONE": CompatibilityLevel.NONE, "BACKWARD": CompatibilityLevel.BACKWARD,
           "BACKWARD_ALL": CompatibilityLevel.BACKWARD_TRANSITIVE,
           "FORWARD": CompatibilityLevel.FORWARD,
           "FORWARD_ALL": CompatibilityLevel.FORWARD_TRANSITIVE,
           "FULL": CompatibilityLevel.FULL, "FULL_ALL": CompatibilityLevel.FULL_TRANSITIVE}
_GLUE_LEVELS = {level: name for name, level in _LEVELS.items()}

_SETTLE_SECONDS = 30.0
"""How long a new version may stay PENDING (Glue checks compatibility after answering)."""


def is_glue_url(url: str | None) -> bool:
    """Whether a registry URL names AWS Glue's registry (``glue://<registry name>``)."""
    return bool(url) and urlsplit(url or "").scheme == GLUE_SCHEME


@dataclass(frozen=True, slots=True)
class GlueLocation:
    """Where the registry is: its name, and the region and endpoint when the URL gives them
    (else boto3's chain decides)."""

    registry_name: str
    region: str | None = None
    endpoint: str | None = None

    @classmethod
    def parse(cls, url: str) -> GlueLocation:
        """``glue://<registry name>[?region=<region>&endpoint=<URL>]``.

        Raises:
            InvalidRegistryUrlError: not a glue URL, no registry name, or an unknown query
                parameter.
        """
        parts = urlsplit(url)
        name = parts.netloc or parts.path.strip("/")
        if parts.scheme != GLUE_SCHEME or not name or "/" in name:
            raise InvalidRegistryUrlError(
                f"registry URL {url!r}: an AWS Glue registry is named as "
                f"glue://<registry name>[?region=...&endpoint=...]")
        query = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
        unknown = sorted(set(query) - {"region", "endpoint"})
        if unknown:
            raise InvalidRegistryUrlError(
                f"registry URL {url!r}: unknown parameter(s) {', '.join(unknown)} "
                f"(glue:// takes region and endpoint)")
        return cls(name, query.get("region") or None, query.get("endpoint") or None)


@dataclass(frozen=True, slots=True)
class _Version:
    """One Glue schema version as this process knows it."""

    subject: str
    number: int
    glue_id: uuid.UUID
    schema: str


class _VersionNumbers:
    """The numbers this process gives the Glue versions it meets (1, 2, ...): Glue has no
    global integer ids, the rest of flatavro counts with them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._numbers: dict[uuid.UUID, int] = {}
        self._versions: dict[int, _Version] = {}

    def get(self, glue_id: uuid.UUID) -> RegisteredSchema | None:
        """The version of `glue_id` if met already."""
        number = self._numbers.get(glue_id)
        return None if number is None else self._registered(self._versions[number])

    def remember(self, got: dict[str, Any], *, subject: str | None = None
                 ) -> RegisteredSchema:
        """A ``GetSchemaVersion`` answer as a `RegisteredSchema`, numbered on first sight."""
        glue_id = uuid.UUID(got["SchemaVersionId"])
        name = subject or str(got.get("SchemaArn", "")).rsplit("/", 1)[-1]
        with self._lock:
            number = self._numbers.get(glue_id)
            if number is None:
                number = self._numbers[glue_id] = len(self._numbers) + 1
                self._versions[number] = _Version(name, int(got["VersionNumber"]), glue_id,
                                                  str(got["SchemaDefinition"]))
        return self._registered(self._versions[number])

    def known(self, schema_id: int) -> _Version:
        """The version of a number given before.

        Raises:
            SchemaNotFoundError: no version has that number in this process.
        """
        known = self._versions.get(schema_id)
        if known is None:
            raise SchemaNotFoundError(
                f"schema id {schema_id} is not a Glue schema version this process has met "
                f"(Glue frames name versions by UUID)", schema_id=schema_id)
        return known

    def _registered(self, version: _Version) -> RegisteredSchema:
        return RegisteredSchema(version.subject, version.number, self._numbers[version.glue_id],
                                version.schema, glue_id=version.glue_id)


class GlueSchemaRegistry:
    """A `SchemaRegistry` over AWS Glue's API (boto3, called in a worker thread)."""

    def __init__(self, location: GlueLocation, *, timeout: float = 10.0,
                 compatibility: str = "BACKWARD", client: Any = None) -> None:
        """Reach the registry `location` names (`client`: a boto3 Glue client, for tests)."""
        if compatibility not in (*_LEVELS, "DISABLED"):
            raise ValueError(f"Glue compatibility {compatibility!r} is not one of "
                             f"{', '.join([*_LEVELS, 'DISABLED'])}")
        self.location, self._compatibility = location, compatibility
        self._client = client if client is not None else _new_client(location, timeout)
        self._numbers = _VersionNumbers()
        self.calls = 0
        self.cache_hits = 0

    @property
    def url(self) -> str:
        """The registry, for messages (no credentials: none are in the URL)."""
        where = "".join(f", {k} {v}" for k, v in (("region", self.location.region),
                                                  ("endpoint", self.location.endpoint)) if v)
        return f"{GLUE_SCHEME}://{self.location.registry_name} (AWS Glue{where})"

    async def aclose(self) -> None:
        """Nothing to close (boto3 keeps its own pool)."""

    async def probe(self, timeout: float) -> None:
        """``GetRegistry``, as TiCDC asks at start: the registry must exist.

        Raises:
            RegistryError: it does not (named), or AWS refuses or cannot be reached.
        """
        await asyncio.wait_for(self._call("GetRegistry", RegistryId=self._registry_id()),
                               timeout)

    # -- SchemaRegistry -------------------------------------------------------------------
    async def register(self, subject: str, schema: str) -> RegisteredSchema:
        """Register `schema` under the Glue schema `subject`: the existing version if the
        definition is there already, else a new version (or a new schema), after flatavro's
        own compatibility check at the schema's level."""
        parse_avro(schema)
        try:
            return await self.lookup(subject, schema)
        except SchemaNotFoundError:
            pass
        try:
            about = await self._call("GetSchema", SchemaId=self._schema_id(subject))
        except SubjectNotFoundError:
            try:
                made = await self._call(
                    "CreateSchema", RegistryId=self._registry_id(), SchemaName=subject,
                    DataFormat="AVRO", Compatibility=self._compatibility,
                    SchemaDefinition=schema)
            except SchemaExistsError:  # another process made it first: add a version
                return await self.register(subject, schema)
            return await self._settled(subject, uuid.UUID(made["SchemaVersionId"]))
        level = str(about.get("Compatibility", "NONE"))
        if level == "DISABLED":
            raise IncompatibleSchemaError(
                f"Glue schema {subject} has compatibility DISABLED: it takes no new version",
                subject=subject)
        verdict = await self._verdict(subject, schema, level=_LEVELS.get(level,
                                                                          CompatibilityLevel.NONE))
        if not verdict.compatible:
            raise IncompatibleSchemaError(
                f"schema incompatible with Glue schema {subject} at its compatibility {level}: "
                + "; ".join(i.message for i in verdict.incompatibilities), subject=subject,
                incompatibilities=[i.message for i in verdict.incompatibilities])
        added = await self._call("RegisterSchemaVersion", SchemaId=self._schema_id(subject),
                                 SchemaDefinition=schema)
        return await self._settled(subject, uuid.UUID(added["SchemaVersionId"]))

    async def lookup(self, subject: str, schema: str, *, deleted: bool = False
                     ) -> RegisteredSchema:
        """The version of `subject` whose definition is `schema` (``GetSchemaByDefinition``).

        Raises:
            SchemaNotFoundError: no such Glue schema, or it holds no such definition (Glue
                does not say which).
        """
        found = await self._call("GetSchemaByDefinition", SchemaId=self._schema_id(subject),
                                 SchemaDefinition=schema)
        return await self.glue_version(uuid.UUID(found["SchemaVersionId"]))

    async def glue_version(self, glue_id: uuid.UUID) -> RegisteredSchema:
        """The schema version a Glue frame names (``GetSchemaVersion``; remembered).

        Raises:
            SchemaNotFoundError: Glue has no version of that id.
        """
        met = self._numbers.get(glue_id)
        if met is not None:
            self.cache_hits += 1
            return met
        try:
            got = await self._call("GetSchemaVersion", SchemaVersionId=str(glue_id))
        except (SubjectNotFoundError, VersionNotFoundError) as exc:
            raise SchemaNotFoundError(f"AWS Glue has no schema version {glue_id}",
                                      glue_schema_version_id=str(glue_id)) from exc
        return self._numbers.remember(got)

    async def schema_by_id(self, schema_id: int) -> str:
        """The schema text of a number this process gave a Glue version."""
        return self._numbers.known(schema_id).schema

    async def uses_of(self, schema_id: int, *, deleted: bool = False) -> list[tuple[str, int]]:
        """The (schema name, version number) of a number this process gave a Glue version."""
        known = self._numbers.known(schema_id)
        return [(known.subject, known.number)]

    async def get_version(self, subject: str, version: VersionSpec = "latest", *,
                          deleted: bool = False) -> RegisteredSchema:
        """One version of a Glue schema (``latest``/-1: its newest)."""
        number = {"SchemaVersionNumber": {"LatestVersion": True}} if str(version) in (
            "latest", "-1") else {"SchemaVersionNumber": {"VersionNumber": int(version)}}
        got = await self._call("GetSchemaVersion", SchemaId=self._schema_id(subject), **number)
        return self._numbers.remember(got, subject=subject)

    async def subjects(self, *, deleted: bool = False) -> list[str]:
        """The registry's schema names, sorted (``ListSchemas``)."""
        names: list[str] = []
        pages: dict[str, Any] = {}
        while True:
            page = await self._call("ListSchemas", RegistryId=self._registry_id(), **pages)
            names += [str(s["SchemaName"]) for s in page.get("Schemas", [])]
            if not page.get("NextToken"):
                return sorted(names)
            pages = {"NextToken": page["NextToken"]}

    async def versions(self, subject: str, *, deleted: bool = False) -> list[int]:
        """A Glue schema's version numbers, ascending (from ``GetSchema``'s latest: Glue
        numbers versions 1.. without gaps until versions are deleted)."""
        about = await self._call("GetSchema", SchemaId=self._schema_id(subject))
        return list(range(1, int(about["LatestSchemaVersion"]) + 1))

    async def delete_subject(self, subject: str, *, permanent: bool = False) -> list[int]:
        """Delete the Glue schema (Glue deletes for good: there is no soft delete)."""
        numbers = await self.versions(subject)
        await self._call("DeleteSchema", SchemaId=self._schema_id(subject))
        return numbers

    async def delete_version(self, subject: str, version: VersionSpec, *,
                             permanent: bool = False) -> int:
        """Delete one version (``DeleteSchemaVersions``; for good)."""
        number = (await self.get_version(subject, version)).version
        await self._call("DeleteSchemaVersions", SchemaId=self._schema_id(subject),
                         Versions=str(number))
        return number

    async def get_compatibility(self, subject: str | None = None, *,
                                default_to_global: bool = False) -> CompatibilityLevel:
        """A Glue schema's level (Glue has no registry-wide level: without a subject, or
        `default_to_global` for a schema not made yet, the level flatavro gives new schemas).

        Raises:
            SubjectNotFoundError: no such Glue schema (and not `default_to_global`).
        """
        default = _LEVELS.get(self._compatibility, CompatibilityLevel.NONE)
        if subject is None:
            return default
        try:
            about = await self._call("GetSchema", SchemaId=self._schema_id(subject))
        except SubjectNotFoundError:
            if default_to_global:
                return default
            raise
        return _LEVELS.get(str(about.get("Compatibility")), CompatibilityLevel.NONE)

    async def set_compatibility(self, level: CompatibilityLevel,
                                subject: str | None = None) -> CompatibilityLevel:
        """Set a Glue schema's level (``UpdateSchema``)."""
        if subject is None:
            raise RegistryUnsupportedError("AWS Glue has no registry-wide compatibility level: "
                                           "set it per schema")
        await self._call("UpdateSchema", SchemaId=self._schema_id(subject),
                         Compatibility=_GLUE_LEVELS[level])
        return level

    async def check_compatibility(self, subject: str, schema: str, *,
                                  version: VersionSpec | None = None) -> CompatibilityVerdict:
        """What registering `schema` would meet, checked by flatavro at the schema's level."""
        try:
            level = await self.get_compatibility(subject)
        except SubjectNotFoundError:
            parse_avro(schema)
            return CompatibilityVerdict(True)
        if version is not None:
            one = await self.get_version(subject, version)
            return check_compatibility(schema, [(one.version, one.schema)], level=level)
        return await self._verdict(subject, schema, level=level)

    async def configured_compatibility(self, subject: str | None = None
                                       ) -> CompatibilityLevel | None:
        """The Glue schema's level (every Glue schema has one)."""
        return await self.get_compatibility(subject)

    async def delete_compatibility(self, subject: str | None = None) -> CompatibilityLevel:
        """Unsupported: every Glue schema has a level."""
        raise RegistryUnsupportedError("AWS Glue cannot remove a schema's compatibility level")

    async def get_mode(self, subject: str | None = None) -> RegistryMode:
        """Glue has no modes: always READWRITE."""
        return RegistryMode.READWRITE

    async def configured_mode(self, subject: str | None = None) -> RegistryMode | None:
        """Glue has no modes."""
        return None

    async def set_mode(self, mode: RegistryMode, subject: str | None = None, *,
                       force: bool = False) -> RegistryMode:
        """Unsupported: Glue has no modes."""
        raise RegistryUnsupportedError("AWS Glue's registry has no modes")

    async def delete_mode(self, subject: str) -> RegistryMode:
        """Unsupported: Glue has no modes."""
        raise RegistryUnsupportedError("AWS Glue's registry has no modes")

    # -- internals ------------------------------------------------------------------------
    async def _verdict(self, subject: str, schema: str, *, level: CompatibilityLevel
                       ) -> CompatibilityVerdict:
        if level is CompatibilityLevel.NONE:
            return CompatibilityVerdict(True)
        latest = await self.get_version(subject)
        numbers = range(1, latest.version) if level.transitive else range(0)
        older = [await self.get_version(subject, n) for n in numbers]
        registered = [(v.version, v.schema) for v in (*older, latest)]
        return check_compatibility(schema, registered, level=level)

    async def _settled(self, subject: str, glue_id: uuid.UUID) -> RegisteredSchema:
        """The new version once Glue has checked it (PENDING until then)."""
        deadline = time.monotonic() + _SETTLE_SECONDS
        while True:
            got = await self._call("GetSchemaVersion", SchemaVersionId=str(glue_id))
            status = got.get("Status", "AVAILABLE")
            if status == "AVAILABLE":
                return self._numbers.remember(got, subject=subject)
            if status != "PENDING" or time.monotonic() > deadline:
                raise IncompatibleSchemaError(
                    f"AWS Glue did not take the new version of {subject} (status {status})",
                    subject=subject, glue_schema_version_id=str(glue_id))
            await asyncio.sleep(0.5)

    def _registry_id(self) -> dict[str, str]:
        return {"RegistryName": self.location.registry_name}

    def _schema_id(self, subject: str) -> dict[str, str]:
        return {"RegistryName": self.location.registry_name, "SchemaName": subject}

    async def _call(self, operation: str, **request: Any) -> dict[str, Any]:
        """One Glue API call in a worker thread, its failure as a `RegistryError`."""
        self.calls += 1
        method: Callable[..., dict[str, Any]] = getattr(self._client, _snake(operation))
        try:
            return await asyncio.to_thread(functools.partial(method, **request))
        except Exception as exc:  # botocore's errors, translated at the boundary
            raise _translated(exc, operation, request=request, registry=self.url) from exc


class SchemaExistsError(RegistryError):
    """``CreateSchema`` of a schema another process created in the meantime."""

    code = "registry_error"


def _snake(operation: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in operation).lstrip("_")


def _new_client(location: GlueLocation, timeout: float) -> Any:
    try:
        import boto3
        from botocore.config import Config
    except ImportError as exc:
        raise RegistryUnsupportedError(
            "AWS Glue's registry needs boto3: pip install 'flatavro[aws]'") from exc
    config = Config(connect_timeout=timeout, read_timeout=timeout,
                    retries={"mode": "standard", "max_attempts": 3})
    try:
        return boto3.session.Session().client("glue", region_name=location.region,
                                              endpoint_url=location.endpoint, config=config)
    except Exception as exc:  # no region, a malformed endpoint: the settings are at fault
        raise _translated(exc, "client setup", request={},
                          registry=f"{GLUE_SCHEME}://{location.registry_name}") from exc


def _translated(exc: Exception, operation: str, *, request: dict[str, Any], registry: str
                ) -> RegistryError:
    """botocore's exception as flatavro's registry error (what, where and why)."""
    from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError, NoRegionError

    subject = request.get("SchemaName") or request.get("SchemaId", {}).get("SchemaName")
    facts: dict[str, Any] = {"url": registry, **({"subject": subject} if subject else {})}
    if isinstance(exc, ClientError):
        return _client_error(exc.response, operation, request=request, facts=facts)
    if isinstance(exc, NoCredentialsError | NoRegionError):
        return RegistryAuthError(f"AWS Glue {operation}: {exc} (set the AWS credentials and "
                                 f"region, or ?region= in the registry URL)", **facts)
    if isinstance(exc, BotoCoreError | OSError | TimeoutError):  # connection, timeout
        return RegistryUnavailableError(f"AWS Glue {operation}: {exc}", **facts)
    return RegistryError(f"AWS Glue {operation}: {type(exc).__name__}: {exc}", **facts)


_AUTH_CODES = frozenset({"AccessDeniedException", "UnrecognizedClientException",
                         "InvalidSignatureException", "ExpiredTokenException"})
_PASSING_CODES = frozenset({"ThrottlingException", "InternalServiceException",
                            "ConcurrentModificationException"})


def _client_error(response: dict[str, Any], operation: str, *, request: dict[str, Any],
                  facts: dict[str, Any]) -> RegistryError:
    """An error answer of Glue's API as a `RegistryError`."""
    error = response.get("Error", {})
    code, text = str(error.get("Code", "")), str(error.get("Message", ""))
    where = f"AWS Glue {operation}: {code}: {text}"
    if code == "EntityNotFoundException":
        return _not_found(where, operation, request=request, facts=facts)
    if code == "InvalidInputException" and "SchemaDefinition" in request:
        return InvalidSchemaError(where, **facts)
    if code in _AUTH_CODES:
        return RegistryAuthError(where, **facts)
    if code == "AlreadyExistsException" and operation == "CreateSchema":
        return SchemaExistsError(where, **facts)
    status = int(response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0))
    if code in _PASSING_CODES or status >= 500:
        return RegistryUnavailableError(where, **facts)
    return RegistryError(where, **facts)


def _not_found(where: str, operation: str, *, request: dict[str, Any], facts: dict[str, Any]
               ) -> RegistryError:
    """What Glue did not find: the registry, a definition, a version, or the schema."""
    if "Registry is not found" in where or operation in ("GetRegistry", "ListSchemas"):
        name = request.get("RegistryId", request.get("SchemaId", {})).get("RegistryName")
        return RegistryUnsupportedError(
            f"{where} (the registry {name} must exist: create it in Glue first)", **facts)
    if operation == "GetSchemaByDefinition":
        return SchemaNotFoundError(where, **facts)
    if "SchemaVersionId" in request or "version is not found" in where.lower():
        return VersionNotFoundError(where, **facts)
    return SubjectNotFoundError(where, **facts)
