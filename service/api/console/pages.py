"""Rendering console pages: the Jinja2 environment (autoescaped), the page frame every
template gets (access, CSRF token, a message after a redirect), errors as pages, and the
headers and cookies every response carries."""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jinja2
from fastapi import Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from markupsafe import Markup

from service.api.auth import ApiKeys
from service.api.console import security
from service.api.errors import CsrfError
from service.api.problems import status_of
from service.core.errors import ServiceError
from service.kafka_client.errors import KafkaReadError, TopicNotFoundError
from service.registry.compatibility import CompatibilityLevel
from service.registry.model import RegistryMode
from service.usecases.console import (
    COMPATIBILITY_HELP,
    MODE_HELP,
    Indexed,
    Search,
    SubjectIndex,
    stem_of,
)
from service.usecases.runtime import Runtime

__all__ = ["Pages", "DONE", "subject_link", "console_status", "CONSOLE_STATUS"]

HERE = Path(__file__).resolve().parent
LISTS_KEPT = 256
"""Rendered lists of subjects the console keeps (by search and entries' generation): a list
reads the registry's names and renders its rows again only when the names changed."""
DONE = {
    "registered": "Registered.",
    "compatibility": "Compatibility level saved.",
    "compatibility-removed": "The subject's own level is removed: the global level applies.",
    "mode": "Mode saved.",
    "mode-removed": "The subject's own mode is removed: the global mode applies.",
    "soft-deleted": "Soft-deleted. It can still be deleted permanently.",
    "deleted": "Deleted permanently.",
    "signed-in": "Signed in: writes are allowed.",
    "signed-out": "Signed out.",
}
"""What a page says after the form that redirected to it (`?done=`)."""
CONSOLE_STATUS: dict[type[ServiceError], int] = {
    CsrfError: 403, TopicNotFoundError: 404, KafkaReadError: 502}
"""The statuses of the errors only the console raises; the rest are `/v1`'s
(`problems.STATUS`)."""


def console_status(error: ServiceError) -> int:
    """The status of a console page showing `error`."""
    for cls in type(error).__mro__:
        if cls in CONSOLE_STATUS:
            return CONSOLE_STATUS[cls]
    return status_of(error)


class Pages:
    """The console's templates, rendered with the frame every page shares."""

    def __init__(self, keys_of: Any, *, kafka: dict[str, str]) -> None:
        self._keys_of = keys_of
        self.kafka = kafka
        """The Kafka client settings of ``FLATAVRO_KAFKA_*`` when they name a broker (the
        messages page then fetches a topic's last messages), else empty."""
        self._index: SubjectIndex | None = None
        self._listed: OrderedDict[tuple[int, Search], Markup] = OrderedDict()
        self.env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(HERE / "templates"),
            autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True,
            lstrip_blocks=True)
        self.env.globals.update(levels=[level.value for level in CompatibilityLevel],
                                modes=[mode.value for mode in RegistryMode],
                                level_help=COMPATIBILITY_HELP, mode_help=MODE_HELP,
                                link=subject_link)

    def index_of(self, runtime: Runtime) -> SubjectIndex:
        """The subjects grouped as tables, kept between requests (`SubjectIndex`)."""
        if self._index is None:
            self._index = SubjectIndex(
                changes=runtime.changes.version if runtime.changes is not None else None)
        return self._index

    def listed(self, indexed: Indexed, search: Search) -> Markup | None:
        """The list's HTML for `search` as rendered before from the same entries, if kept."""
        return self._listed.get((indexed.generation, search)) if indexed.answers(
            search) else None

    def keep_listed(self, indexed: Indexed, search: Search, *, html: Markup) -> Markup:
        """Keep the list's HTML for `search` (when the entries alone answer it; the last
        `LISTS_KEPT`), and give it back."""
        if indexed.answers(search):
            self._listed[(indexed.generation, search)] = html
            while len(self._listed) > LISTS_KEPT:
                self._listed.popitem(last=False)
        return html

    def fragment(self, template: str, **context: Any) -> Markup:
        """A part of a page (no frame), rendered."""
        return Markup(self.env.get_template(template).render(**context))  # noqa: S704

    def keys(self, request: Request) -> ApiKeys:
        """The app's API keys."""
        keys: ApiKeys = self._keys_of(request)
        return keys

    def access(self, request: Request) -> security.Access:
        """What the caller may do."""
        return security.access_of(request, self.keys(request))

    def render(self, request: Request, template: str, *, status: int = 200,
               **context: Any) -> HTMLResponse:
        """A page: `template` with the frame (access, CSRF token, `done` message)."""
        token, new = security.csrf_token(request)
        done = DONE.get(request.query_params.get("done", ""))
        html = self.env.get_template(template).render(
            request=request, access=self.access(request), csrf=token, done=done,
            path=request.url.path, **context)
        response = HTMLResponse(html, status_code=status, headers=security.HEADERS)
        if new:
            security.set_cookie(response, request, name=security.CSRF_COOKIE, value=token)
        return response

    def error(self, request: Request, error: ServiceError) -> HTMLResponse:
        """A service error as a page with its status, code and message (and details)."""
        details = {k: v for k, v in error.to_dict().items()
                   if k not in ("code", "message", "fix") and isinstance(v, (str, int))}
        listed = error.to_dict().get("errors")
        errors = [(f"{e['where']}: " if "where" in e else "") + str(e.get("message", e))
                  + (f" (byte offset {e['offset']})" if e.get("offset") is not None else "")
                  for e in listed if isinstance(e, dict)] if isinstance(listed, list) else []
        return self.render(request, "error.html", status=console_status(error), error=error,
                           details=details, errors=errors, title="Error")

    @staticmethod
    def redirect(target: str, done: str | None = None) -> Response:
        """303 See Other to a console page (`done`: the message it shows)."""
        if done:
            target += ("&" if "?" in target else "?") + f"done={done}"
        return RedirectResponse(target, status_code=303, headers=security.HEADERS)


def subject_link(subject: str, version: str | int | None = None) -> str:
    """The console page of a subject: its table's page (at `version` on its side) or, for a
    subject outside the naming rule, its own."""
    parsed = stem_of(subject)
    if parsed is None:
        query = f"?version={version}" if version is not None else ""
        return f"/console/subjects/{quote(subject, safe='')}{query}"
    stem, kind = parsed
    query = f"?{kind.value}={version}" if version is not None else ""
    return f"/console/tables/{quote(stem, safe='')}{query}"
