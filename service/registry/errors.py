"""Registry failures as `ServiceError`s, each carrying the Confluent ``error_code`` it maps to.

The embedded registry answers with these codes, and the HTTP client turns a remote registry's
codes back into the same classes, so callers handle one set of types whatever the registry.
"""

from __future__ import annotations

from typing import Any, ClassVar

from service.core.errors import InvalidInputError, ServiceError

__all__ = [
    "RegistryError",
    "SubjectNotFoundError",
    "VersionNotFoundError",
    "SchemaNotFoundError",
    "SubjectSoftDeletedError",
    "SubjectNotSoftDeletedError",
    "VersionSoftDeletedError",
    "VersionNotSoftDeletedError",
    "SubjectConfigNotFoundError",
    "SubjectModeNotFoundError",
    "InvalidModeError",
    "OperationNotPermittedError",
    "IncompatibleSchemaError",
    "InvalidSchemaError",
    "InvalidVersionError",
    "InvalidCompatibilityLevelError",
    "ReadOnlyModeError",
    "InvalidSubjectError",
    "RegistryUnavailableError",
    "RegistryServerError",
    "RegistryUnsupportedError",
    "RegistryAuthError",
    "ERROR_CLASSES",
]


class RegistryError(ServiceError):
    """A registry refused or failed a request; `registry_code` is Confluent's ``error_code``."""

    code = "registry_error"
    registry_code: ClassVar[int] = 50001


class SubjectNotFoundError(RegistryError):
    """The subject holds no version (none, or only soft-deleted ones where those do not
    count): 40401."""

    code, registry_code = "subject_not_found", 40401


class VersionNotFoundError(RegistryError):
    """The subject has no such version: 40402."""

    code, registry_code = "version_not_found", 40402


class SchemaNotFoundError(RegistryError):
    """No schema has the id, or the subject holds no version of the schema: 40403."""

    code, registry_code = "schema_not_found", 40403


class SubjectSoftDeletedError(RegistryError):
    """A soft delete of a subject already soft-deleted: 40404."""

    code, registry_code = "subject_soft_deleted", 40404


class SubjectNotSoftDeletedError(RegistryError):
    """A permanent delete of a subject not soft-deleted first: 40405."""

    code, registry_code = "subject_not_soft_deleted", 40405


class VersionSoftDeletedError(RegistryError):
    """A soft delete of a version already soft-deleted: 40406."""

    code, registry_code = "version_soft_deleted", 40406


class VersionNotSoftDeletedError(RegistryError):
    """A permanent delete of a version not soft-deleted first: 40407."""

    code, registry_code = "version_not_soft_deleted", 40407


class SubjectConfigNotFoundError(RegistryError):
    """The subject has no compatibility level of its own: 40408."""

    code, registry_code = "subject_config_not_found", 40408


class IncompatibleSchemaError(RegistryError):
    """Refused by the compatibility level: 40901, as the newest Confluent Platform answers
    (older releases said 409)."""

    code, registry_code = "incompatible_schema", 40901


class InvalidSchemaError(RegistryError, InvalidInputError):
    """A schema text that is not JSON or not a valid Avro schema."""

    code, registry_code = "invalid_schema", 42201


class InvalidVersionError(RegistryError, InvalidInputError):
    """A version that is neither 1..2^31-1 nor ``latest`` / ``-1``: 42202."""

    code, registry_code = "invalid_version", 42202


class InvalidCompatibilityLevelError(RegistryError, InvalidInputError):
    """A compatibility level that is not one of Confluent's seven: 42203."""

    code, registry_code = "invalid_compatibility_level", 42203


class SubjectModeNotFoundError(RegistryError):
    """The subject has no mode of its own: 40409."""

    code, registry_code = "subject_mode_not_found", 40409


class InvalidModeError(RegistryError, InvalidInputError):
    """A mode that is not READWRITE, READONLY or IMPORT: 42204."""

    code, registry_code = "invalid_mode", 42204


class OperationNotPermittedError(RegistryError):
    """Confluent's 42205: the registry's mode forbids the operation."""

    code, registry_code = "operation_not_permitted", 42205


class ReadOnlyModeError(OperationNotPermittedError):
    """A write refused because the subject (or the registry) is in READONLY mode: 42205."""

    code = "registry_read_only"


class InvalidSubjectError(RegistryError, InvalidInputError):
    """An empty subject, or one with control characters: 42208."""

    code, registry_code = "invalid_subject", 42208


class InvalidRegistryUrlError(RegistryError, InvalidInputError):
    """A registry URL flatavro cannot use as written (a glue:// URL without a registry name,
    or with a parameter it does not know)."""

    code = "invalid_registry_url"


class RegistryUnavailableError(RegistryError):
    """The registry could not be reached (connect error, timeout, retries exhausted, or the
    client's circuit breaker open); `retry_after` is when to try again, in seconds, if known."""

    code, registry_code = "registry_unavailable", 50003

    def __init__(self, message: str, *, retry_after: int | None = None, **details: Any) -> None:
        super().__init__(message, **details)
        self.retry_after = retry_after


class RegistryServerError(RegistryError):
    """The registry answered with a 5xx of its own."""

    code, registry_code = "registry_server_error", 50001


class RegistryUnsupportedError(RegistryError):
    """The registry does not implement an operation of Confluent's API (it answered "no such
    route": 404 without a Confluent ``404xx`` code, 405 or 501), or the URL does not lead to a
    Confluent-compatible API at all. Apicurio 2.6, for one, has no ``/mode``."""

    code, registry_code = "registry_unsupported", 50001


class RegistryAuthError(RegistryError):
    """The registry refused flatavro's credentials (401; a 403, a permission the credentials
    lack, stays a `RegistryError`): the service's settings are at fault
    (FLATAVRO_REGISTRY_USERNAME/PASSWORD or BEARER_TOKEN), not the caller's request."""

    code, registry_code = "registry_unauthorized", 40101


ERROR_CLASSES: dict[int, type[RegistryError]] = {
    cls.registry_code: cls
    for cls in (
        SubjectNotFoundError, VersionNotFoundError, SchemaNotFoundError,
        SubjectSoftDeletedError, SubjectNotSoftDeletedError, VersionSoftDeletedError,
        VersionNotSoftDeletedError, SubjectConfigNotFoundError, IncompatibleSchemaError,
        InvalidSchemaError, InvalidVersionError, InvalidCompatibilityLevelError, ReadOnlyModeError,
        InvalidSubjectError, SubjectModeNotFoundError, InvalidModeError,
    )
}
ERROR_CLASSES[409] = IncompatibleSchemaError
"""Confluent ``error_code`` -> our class (40901 and the older 409 both mean incompatible)."""
