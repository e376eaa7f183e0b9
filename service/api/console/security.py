"""The console's guards: who may write (the service's API keys, presented once through the
sign-in form and kept as a signed cookie), a CSRF token on every form (double submit: a cookie
and a hidden field that must match), and the headers every console page carries.

The sign-in cookie holds no key: it holds an HMAC of the fixed text ``flatavro console`` under
the key, which the service checks against each configured key in constant time. Both cookies
are HttpOnly and SameSite=Strict, scoped to ``/console``.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from urllib.parse import urlsplit

from fastapi import Request, Response

from service.api.auth import ApiKeys
from service.api.errors import CsrfError

__all__ = ["CSRF_COOKIE", "SESSION_COOKIE", "HEADERS", "Access", "access_of",
           "session_token", "check_csrf", "csrf_token", "set_cookie", "local_path"]

CSRF_COOKIE, SESSION_COOKIE = "flatavro_csrf", "flatavro_console"
_SIGNED_TEXT = b"flatavro console"
HEADERS = {
    # No script runs on the console's pages; styles and images only from the service.
    "Content-Security-Policy": "default-src 'none'; style-src 'self'; img-src 'self' data:; "
                               "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}
"""The headers of every console response."""


def session_token(key: str) -> str:
    """The sign-in cookie's value for an API key."""
    return hmac.new(key.encode(), _SIGNED_TEXT, hashlib.sha256).hexdigest()


class Access:
    """What the caller of a console page may do."""

    def __init__(self, *, keys: ApiKeys, signed_in: bool) -> None:
        self.keys, self.signed_in = keys, signed_in

    @property
    def can_write(self) -> bool:
        """No keys configured, or the caller signed in with one."""
        return not self.keys.enabled or self.signed_in

    @property
    def can_read(self) -> bool:
        """Reads are open unless ``FLATAVRO_PROTECT_READS`` asks for a key."""
        return not self.keys.protect_reads or self.signed_in

    @property
    def needs_sign_in(self) -> bool:
        """Keys are configured (the sign-in form is offered)."""
        return self.keys.enabled


def access_of(request: Request, keys: ApiKeys) -> Access:
    """The caller's access: a valid sign-in cookie, or an API key in the request's headers
    (a script may drive the console with ``X-API-Key``)."""
    token = request.cookies.get(SESSION_COOKIE)
    signed = bool(token) and keys.enabled and keys.allows_signed(token or "", session_token)
    if not signed and keys.enabled:
        signed = keys.allows(request.headers.get("authorization"),
                             request.headers.get("x-api-key"))
    return Access(keys=keys, signed_in=signed)


def csrf_token(request: Request) -> tuple[str, bool]:
    """The caller's CSRF token, and whether it is new (then the response sets its cookie)."""
    token = request.cookies.get(CSRF_COOKIE)
    if token and len(token) == 43:
        return token, False
    return secrets.token_urlsafe(32), True


def check_csrf(request: Request, posted: str | None) -> None:
    """Refuse a form whose token is missing or differs from the cookie's.

    Raises:
        CsrfError: no token, or not the cookie's.
    """
    cookie = request.cookies.get(CSRF_COOKIE) or ""
    if not posted or not cookie or not hmac.compare_digest(posted.encode(), cookie.encode()):
        raise CsrfError("the form's CSRF token is missing or not this browser's: reload the "
                        "page and send the form again")


def set_cookie(response: Response, request: Request, *, name: str, value: str,
               max_age: int | None = None) -> None:
    """Set one of the console's cookies (HttpOnly, SameSite=Strict, path /console; Secure
    when the page came over HTTPS)."""
    response.set_cookie(name, value, max_age=max_age, path="/console", httponly=True,
                        samesite="strict", secure=request.url.scheme == "https")


def local_path(target: str | None, default: str) -> str:
    """`target` when it is a console path of this service (no scheme, host or ``//``), else
    `default`: a form's return address never leads off the console."""
    if not target:
        return default
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not target.startswith("/console") or "\\" in target:
        return default
    return target
