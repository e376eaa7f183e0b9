"""API keys: writes (and, if configured, reads) need ``Authorization: Bearer`` or ``X-API-Key``.

Keys are compared in constant time and never logged, echoed or exported as metrics.
"""

from __future__ import annotations

import base64
import hmac
import re
from collections.abc import Callable, Iterable

import orjson
from starlette.types import ASGIApp, Receive, Scope, Send
from typing_extensions import override

from service.api.errors import ApiKeyError
from service.api.middleware import AsgiCallable

__all__ = ["ApiKeys", "RegistryGuard"]

# The embedded registry's writes: register, delete, config and mode changes.
_REGISTER = re.compile(r"^/subjects/[^/]+/versions/?$")


class ApiKeys:
    """The configured keys; with none configured every request is allowed."""

    def __init__(self, keys: Iterable[str], *, protect_reads: bool) -> None:
        self._keys = tuple(k.encode() for k in keys)
        self.protect_reads = protect_reads and bool(self._keys)

    @property
    def enabled(self) -> bool:
        """True when keys are configured."""
        return bool(self._keys)

    def allows(self, authorization: str | None, api_key: str | None) -> bool:
        """Whether `check` would pass."""
        try:
            self.check(authorization, api_key)
        except ApiKeyError:
            return False
        return True

    def allows_signed(self, token: str, sign: Callable[[str], str]) -> bool:
        """Whether `token` is `sign` of a configured key (the console's sign-in cookie),
        compared in constant time with every key's."""
        candidate = token.encode()
        return any(hmac.compare_digest(candidate, sign(key.decode()).encode())
                   for key in self._keys)

    def check(self, authorization: str | None, api_key: str | None) -> None:
        """Pass when a configured key is presented (or none are configured).

        Raises:
            ApiKeyError: no key, or an unknown one.
        """
        if not self._keys:
            return
        presented = api_key
        if presented is None and authorization and authorization[:7].lower() == "bearer ":
            presented = authorization[7:].strip()
        if presented is None:
            raise ApiKeyError("this operation needs an API key (Authorization: Bearer <key> "
                              "or X-API-Key: <key>)")
        candidate = presented.encode()
        if not any(hmac.compare_digest(candidate, key) for key in self._keys):
            raise ApiKeyError("the API key is not valid")


class RegistryGuard(AsgiCallable):
    """Applies `ApiKeys` to the mounted embedded registry; refusals use Confluent's error
    body (``error_code`` 40101) because Confluent clients talk to it. Besides a Bearer token
    or X-API-Key, it takes HTTP basic auth with the key as the password (any user name), as
    Confluent's clients send credentials (``basic.auth.user.info``)."""

    def __init__(self, app: ASGIApp, keys: ApiKeys) -> None:
        self.app, self.keys = app, keys

    @override
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuse a request that needs a key and has none valid; pass the rest on."""
        if scope["type"] == "http" and self._needs_key(scope):
            headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
            authorization = headers.get("authorization")
            api_key = headers.get("x-api-key") or _basic_password(authorization)
            try:
                self.keys.check(authorization, api_key)
            except ApiKeyError as exc:
                body = orjson.dumps({"error_code": 40101, "message": exc.message})
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"application/json"),
                                        (b"www-authenticate", b'Bearer realm="flatavro"')]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)

    def _needs_key(self, scope: Scope) -> bool:
        if not self.keys.enabled:
            return False
        if self.keys.protect_reads:
            return True
        method = scope["method"]
        if method in ("PUT", "DELETE"):
            return True
        root, path = scope.get("root_path", ""), scope["path"]
        if root and path.startswith(root):  # Starlette mounts keep the full path
            path = path[len(root):]
        return method == "POST" and bool(_REGISTER.match(path))


def _basic_password(authorization: str | None) -> str | None:
    """The password of ``Authorization: Basic base64(user:password)``; None otherwise."""
    if not authorization or authorization[:6].lower() != "basic ":
        return None
    try:
        decoded = base64.b64decode(authorization[6:].strip(), validate=True).decode()
    except (ValueError, UnicodeDecodeError):
        return None
    user, colon, password = decoded.partition(":")
    return password if colon else None
