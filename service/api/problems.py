"""RFC 9457 problem+json: the one place errors become HTTP responses.

`STATUS` maps error classes to statuses (the most specific class listed wins); every error
body has ``type``, ``title``, ``status``, ``detail``, ``instance`` and a stable ``code``, plus
the error's structured details, and a ``hint`` (in request terms, also closing ``detail``)
when the error has a `fix`. Nothing else renders errors, and no stack trace ever leaves.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import orjson
from fastapi import FastAPI, Request, routing
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response
from starlette.routing import Match

from service.api.errors import (
    ApiKeyError,
    BodyTooLargeError,
    InternalError,
    MethodNotAllowedError,
    RouteNotFoundError,
    UnsupportedMediaTypeError,
    WriteKeyRequiredError,
)
from service.api.hints import hint_of
from service.codec.claim_check import ClaimCheckStorageUnavailableError
from service.codec.errors import InvalidRequestError
from service.core.errors import InvalidInputError, ServiceError
from service.registry.errors import (
    IncompatibleSchemaError,
    RegistryAuthError,
    RegistryError,
    RegistryServerError,
    RegistryUnavailableError,
    RegistryUnsupportedError,
    SchemaNotFoundError,
    SubjectConfigNotFoundError,
    SubjectModeNotFoundError,
    SubjectNotFoundError,
    SubjectNotSoftDeletedError,
    SubjectSoftDeletedError,
    VersionNotFoundError,
    VersionNotSoftDeletedError,
    VersionSoftDeletedError,
)
from service.registry.tables import TopicBindingError
from service.usecases.readiness import NotReadyError

__all__ = ["PROBLEM_JSON", "STATUS", "status_of", "problem_response", "install"]

PROBLEM_JSON = "application/problem+json"
log = logging.getLogger("flatavro.api")


STATUS: dict[type[ServiceError], int] = {
    InvalidInputError: 422,
    SubjectNotFoundError: 404, VersionNotFoundError: 404, SchemaNotFoundError: 404,
    SubjectSoftDeletedError: 404, SubjectNotSoftDeletedError: 404,
    VersionSoftDeletedError: 404, VersionNotSoftDeletedError: 404,
    SubjectConfigNotFoundError: 404, SubjectModeNotFoundError: 404, RouteNotFoundError: 404,
    IncompatibleSchemaError: 409, TopicBindingError: 409,
    RegistryError: 422,  # the registry refused the request (READONLY, ...): a client matter
    RegistryServerError: 502,
    RegistryUnsupportedError: 502,  # the registry behind the service lacks the operation
    RegistryAuthError: 502,  # the registry refused the service's own credentials
    RegistryUnavailableError: 503, NotReadyError: 503,
    ClaimCheckStorageUnavailableError: 502,  # the claim-check storage refuses or is down
    ApiKeyError: 401, WriteKeyRequiredError: 401,
    MethodNotAllowedError: 405,
    BodyTooLargeError: 413,
    UnsupportedMediaTypeError: 415,
}
"""Error class -> HTTP status; classes not listed use their nearest listed base (else 500)."""


def _allowed_methods(request: Request) -> str:
    """Every method some route takes at the request's path (Starlette's own 405 names only
    the first route's, and a path like ``/v1/subjects/{subject}/compatibility`` has two)."""
    methods: set[str] = set()
    for route in routing.iter_route_contexts(request.app.routes):  # included routers' too
        if route.matches(request.scope)[0] != Match.NONE:
            methods |= set(getattr(route, "methods", None) or ())
    return ", ".join(sorted(methods))


def status_of(error: ServiceError) -> int:
    """The HTTP status of an error (nearest listed class in its MRO)."""
    for cls in type(error).__mro__:
        if issubclass(cls, ServiceError) and cls in STATUS:
            return STATUS[cls]
    return 500


def problem_response(request: Request, error: ServiceError, *, retry_after: int) -> Response:
    """Render `error` as problem+json."""
    status = status_of(error)
    body: dict[str, Any] = {
        **error.to_dict(),
        "type": f"urn:flatavro:problem:{error.code}",
        "title": error.code.replace("_", " ").capitalize(),
        "status": status,
        "detail": error.message,
        "instance": request.url.path,
    }
    hint = hint_of(error)
    if hint:  # the error's `fix` in request terms (the CLI words it in flags)
        body["hint"] = hint
        body["detail"] = f"{error.message}; {hint}"
    if isinstance(error, RegistryError):  # a remote registry's own code when it gave one
        body["registry_error_code"] = error.details.get("error_code", error.registry_code)
    known = getattr(error, "retry_after", None)  # the seconds to the registry's next probe
    headers = {"Retry-After": str(known or retry_after)} if status == 503 else {}
    if status == 401:
        headers["WWW-Authenticate"] = 'Bearer realm="flatavro"'
    if status == 405 and body.get("allow"):
        headers["Allow"] = body["allow"]  # RFC 9110 §15.5.6
    return Response(orjson.dumps(body), status_code=status, media_type=PROBLEM_JSON,
                    headers=headers)


def install(app: FastAPI, *, retry_after: int,
            on_error: Callable[[Request, ServiceError], None] = lambda r, e: None) -> None:
    """Register the handlers that turn every exception into problem+json; `on_error` sees
    each `ServiceError` first (metrics)."""

    async def service_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, ServiceError)
        on_error(request, exc)
        return problem_response(request, exc, retry_after=retry_after)

    async def validation_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        errors = [{"location": "/".join(str(p) for p in e["loc"]), "message": e["msg"]}
                  for e in exc.errors()]
        first = f"{errors[0]['location']}: {errors[0]['message']}" if errors else "invalid"
        error = InvalidRequestError(f"the request is invalid: {first}", errors=errors)
        return problem_response(request, error, retry_after=retry_after)

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        if exc.status_code == 405:
            allowed = _allowed_methods(request) or (exc.headers or {}).get("Allow", "")
            error: ServiceError = MethodNotAllowedError(
                f"{request.method} is not allowed on {request.url.path}; it takes "
                f"{allowed or 'other methods'}", allow=allowed)
        elif exc.status_code == 404:
            error = RouteNotFoundError(f"no route {request.method} {request.url.path}")
        else:  # a request Starlette could not read: the client's to fix, never "no route"
            error = InvalidRequestError(f"the request is invalid: {exc.detail}")
        return problem_response(request, error, retry_after=retry_after)

    async def unexpected(request: Request, exc: Exception) -> Response:
        log.error("unexpected error", exc_info=exc)
        error = InternalError("an unexpected error occurred; the service log has the details")
        return problem_response(request, error, retry_after=retry_after)

    app.add_exception_handler(ServiceError, service_error)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(Exception, unexpected)
