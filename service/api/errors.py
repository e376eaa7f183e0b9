"""The errors only HTTP has: API keys, request bodies (size, Content-Type), routes and
methods that do not exist. `problems.STATUS` gives each its status."""

from __future__ import annotations

from service.core.errors import ServiceError

__all__ = ["ApiKeyError", "CsrfError", "WriteKeyRequiredError", "BodyTooLargeError",
           "UnsupportedMediaTypeError", "RouteNotFoundError", "MethodNotAllowedError",
           "InternalError"]


class ApiKeyError(ServiceError):
    """A request that needs an API key came without a valid one."""

    code = "unauthorized"


class CsrfError(ServiceError):
    """A console form came without the CSRF token of the page it was sent from (or with
    another browser's)."""

    code = "csrf_token_invalid"


class WriteKeyRequiredError(ServiceError):
    """``register=true`` asks for a registry write without a valid API key."""

    code = "unauthorized"


class BodyTooLargeError(ServiceError):
    """A request body is over ``FLATAVRO_MAX_BODY_BYTES``; `limit` says how many bytes are
    accepted."""

    code = "body_too_large"


class UnsupportedMediaTypeError(ServiceError):
    """A request body came without a Content-Type this endpoint reads; `accepted` lists them."""

    code = "unsupported_media_type"


class RouteNotFoundError(ServiceError):
    """No route serves the request's path."""

    code = "not_found"


class MethodNotAllowedError(ServiceError):
    """A route serves the path, but not with the request's method; `allow` names those it
    takes."""

    code = "method_not_allowed"


class InternalError(ServiceError):
    """An unexpected failure; the service log has the details, the answer none."""

    code = "internal_error"
