"""``/console``: the registry console's pages (GETs, bookmarkable) and forms (POSTs that
redirect). Each handler reads its inputs, calls one use-case and renders one template; every
action is the one a ``/v1`` endpoint performs (the page names it)."""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, TypeVar
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import RedirectResponse, Response

from service.api.console.pages import Pages, console_status, subject_link
from service.api.console.security import (
    SESSION_COOKIE,
    check_csrf,
    local_path,
    session_token,
    set_cookie,
)
from service.api.deps import runtime_of
from service.api.errors import ApiKeyError
from service.core.errors import ServiceError
from service.core.options import SchemaOptions, TicdcRelease
from service.registry.compatibility import CompatibilityLevel
from service.registry.model import RegistryMode
from service.usecases import levels_and_modes
from service.usecases.console import (
    MAX_MESSAGES,
    InvalidSearchError,
    Search,
    decode_messages,
    diff_view,
    list_entries,
    pasted_messages,
    pretty_text,
    preview_ddl,
    schema_id_of,
    stem_of,
    subject_view,
    table_view,
    topic_messages,
)
from service.usecases.subject_overview import schema_uses

__all__ = ["router", "pages_of", "guarded"]

E = TypeVar("E", bound=enum.Enum)
DEFAULT_TOPIC_RULE = "tidb_{schema}_{table}"
"""The topic rule the DDL page starts with: `/v1/tables/check`'s default."""
Text = Annotated[str, Form(max_length=1 << 20)]
Token = Annotated[str | None, Form()]


router = APIRouter(prefix="/console", include_in_schema=False)
"""The console's routes; they render with the app's `Pages` (``app.state.console``)."""


def pages_of(request: Request) -> Pages:
    """The console's templates of the app serving the request."""
    pages: Pages = request.app.state.console
    return pages


async def guarded(request: Request, action: Callable[[], Awaitable[Response]], *,
                  write: bool = False, form_token: str | None = None) -> Response:
    """Run a page's `action` if the caller may (a form: with its CSRF token checked); a
    service error becomes an error page with its status."""
    pages = pages_of(request)
    access = pages.access(request)
    try:
        if not access.can_read:
            raise ApiKeyError("this console needs an API key to read: sign in")
        if write:
            check_csrf(request, form_token)
            if not access.can_write:
                raise ApiKeyError("changes need an API key: sign in first (the console "
                                  "is read-only without one)")
        return await action()
    except ServiceError as error:
        return pages.error(request, error)


@router.get("", response_model=None)
async def root() -> Response:
    return RedirectResponse("/console/", status_code=308)

@router.get("/", response_model=None)
async def index(request: Request, *, q: str = "", kind: str = "any", missing: bool = False,
                broken: bool = False, level: str = "", mode: str = "", page: int = 1,
                size: int = 50) -> Response:
    async def show() -> Response:
        pages = pages_of(request)
        wanted = schema_id_of(q)
        if wanted is not None:
            return pages.redirect(f"/console/schemas/{wanted}")
        search = Search(text=q, kind=_choice(kind, ("any", "key", "value"), name="kind"),
                        missing=missing, broken=broken,
                        level=_enum(CompatibilityLevel, level, name="level"),
                        mode=_enum(RegistryMode, mode, name="mode"), page=page, size=size)
        runtime = runtime_of(request)
        indexed = await pages.index_of(runtime).entries(runtime.registry)
        listed = pages.listed(indexed, search)
        if listed is None:
            listing = await list_entries(runtime.registry, search, indexed=indexed)
            query = {k: v for k, v in (("q", q), ("kind", kind if kind != "any" else ""),
                                       ("missing", "true" if missing else ""),
                                       ("broken", "true" if broken else ""),
                                       ("level", level), ("mode", mode),
                                       ("size", str(size) if size != 50 else "")) if v}
            listed = pages.keep_listed(indexed, search, html=pages.fragment(
                "_listing.html", listing=listing,
                page_link=lambda n: "/console/?" + urlencode({**query, "page": n})))
        return pages.render(request, "index.html", title="Tables and subjects",
                            listed=listed, q=q, kind=kind, level=level, mode=mode,
                            missing=missing, broken=broken)
    return await guarded(request, show)


@router.get("/schemas/{schema_id:int}", response_model=None)
async def schema(request: Request, *, schema_id: int) -> Response:
    async def show() -> Response:
        pages = pages_of(request)
        uses = await schema_uses(runtime_of(request).registry, schema_id, deleted=True)
        return pages.render(request, "schema.html", title=f"Schema {schema_id}", uses=uses,
                            pretty=pretty_text(uses.text))
    return await guarded(request, show)


@router.get("/tables/{stem}", response_model=None)
async def table(request: Request, *, stem: str, key: str | None = None,
                value: str | None = None) -> Response:
    async def show() -> Response:
        pages = pages_of(request)
        versions = {k: v for k, v in (("key", key), ("value", value)) if v}
        view = await table_view(runtime_of(request).registry, stem, versions=versions)
        return pages.render(request, "table.html", title=f"Table {stem}", view=view)
    return await guarded(request, show)


@router.get("/subjects/{subject}", response_model=None)
async def subject(request: Request, *, subject: str, version: str | None = None) -> Response:
    async def show() -> Response:
        pages = pages_of(request)
        parsed = stem_of(subject)
        if parsed is not None:
            return pages.redirect(subject_link(subject, version))
        view = await subject_view(runtime_of(request).registry, subject, version=version)
        return pages.render(request, "table.html", title=f"Subject {subject}", view=view)
    return await guarded(request, show)


@router.get("/subjects/{subject}/versions/{version}/schema.avsc", response_model=None)
async def download(request: Request, *, subject: str, version: str) -> Response:
    async def send() -> Response:
        found = await runtime_of(request).registry.get_version(subject, version,
                                                               deleted=True)
        name = quote(f"{subject}-v{found.version}.avsc")
        return Response(found.schema, media_type="application/json", headers={
            "Content-Disposition": f"attachment; filename*=UTF-8''{name}",
            "X-Content-Type-Options": "nosniff"})
    return await guarded(request, send)


@router.get("/subjects/{subject}/diff", response_model=None)
async def diff(request: Request, *, subject: str,
               from_: Annotated[str, Query(alias="from")] = "1",
               to: str = "latest") -> Response:
    async def show() -> Response:
        pages = pages_of(request)
        view = await diff_view(runtime_of(request).registry, subject, old=from_, new=to)
        return pages.render(request, "diff.html", title=f"Diff of {subject}", view=view,
                            subject=subject)
    return await guarded(request, show)


@router.get("/ddl", response_model=None)
async def ddl(request: Request, *, ddl: str = "", database: str = "test",
              topic: str = DEFAULT_TOPIC_RULE, tidb_extension: bool = False,
              decimal: str = "precise", bigint: str = "long",
              release: str = TicdcRelease.NEWEST.value) -> Response:
    form = {"ddl": ddl, "database": database, "topic": topic,
            "tidb_extension": tidb_extension, "decimal": decimal, "bigint": bigint,
            "release": release}

    async def show() -> Response:
        pages = pages_of(request)
        preview, problem, status = None, None, 200
        if ddl.strip():
            try:
                options = SchemaOptions.from_strings(
                    enable_tidb_extension=tidb_extension, decimal_handling_mode=decimal,
                    bigint_unsigned_handling_mode=bigint, ticdc_release=release)
                preview = await preview_ddl(runtime_of(request).registry, ddl,
                                            database=database, options=options,
                                            topic_rule=topic)
            except ServiceError as error:  # shown beside the form, which keeps its text
                problem, status = error, console_status(error)
        return pages.render(request, "ddl.html", title="What would this DDL do?",
                            status=status, form=form, preview=preview, problem=problem,
                            releases=[r.value for r in TicdcRelease])
    return await guarded(request, show)


@router.post("/ddl/register", response_model=None)
async def register(request: Request, *, ddl: Text, csrf: Token = None,
                   database: Annotated[str, Form()] = "test",
                   topic: Annotated[str, Form()] = DEFAULT_TOPIC_RULE,
                   tidb_extension: Annotated[bool, Form()] = False,
                   decimal: Annotated[str, Form()] = "precise",
                   bigint: Annotated[str, Form()] = "long",
                   release: Annotated[str, Form()] = TicdcRelease.NEWEST.value) -> Response:
    async def act() -> Response:
        pages = pages_of(request)
        options = SchemaOptions.from_strings(
            enable_tidb_extension=tidb_extension, decimal_handling_mode=decimal,
            bigint_unsigned_handling_mode=bigint, ticdc_release=release)
        runtime = runtime_of(request)
        preview = await preview_ddl(runtime.registry, ddl, database=database,
                                    options=options, topic_rule=topic)
        done = await runtime.register_table(preview.table, options, topic_rule=topic,
                                            pair=preview.pair)
        return pages.redirect(subject_link(f"{done.topic.replace('.', '_')}-value"),
                              "registered")
    return await guarded(request, act, write=True, form_token=csrf)


@router.get("/messages", response_model=None)
async def messages(request: Request, *, topic: str = "", count: int = 20) -> Response:
    async def show() -> Response:
        pages = pages_of(request)
        rows = None
        if topic:
            if not pages.kafka:
                raise InvalidSearchError(
                    "topic: the service knows no Kafka broker (set FLATAVRO_KAFKA_BOOTSTRAP_"
                    "SERVERS); paste the messages instead", field="topic")
            rows = await topic_messages(runtime_of(request), pages.kafka, topic=topic,
                                        count=count)
        return pages.render(request, "messages.html", title="Messages", rows=rows,
                            topic=topic, count=count, text="", encoding="base64",
                            max_count=MAX_MESSAGES)
    return await guarded(request, show)


@router.post("/messages", response_model=None)
async def decode_pasted(request: Request, *, messages: Text,
                        encoding: Annotated[str, Form()] = "base64") -> Response:
    async def show() -> Response:
        pages = pages_of(request)
        chosen = _choice(encoding, ("base64", "hex"), name="encoding")
        found, where = pasted_messages(messages, encoding=chosen)
        rows = await decode_messages(runtime_of(request), found, where=where,
                                     encoding=chosen)
        return pages.render(request, "messages.html", title="Messages", rows=rows, topic="",
                            count=20, text=messages, encoding=chosen, max_count=MAX_MESSAGES)
    return await guarded(request, show)


@router.get("/settings", response_model=None)
async def global_settings(request: Request) -> Response:
    async def show() -> Response:
        pages = pages_of(request)
        registry = runtime_of(request).registry
        return pages.render(request, "settings.html", title="Global settings",
                            level=(await registry.get_compatibility()).value,
                            mode=(await registry.get_mode()).value)
    return await guarded(request, show)


@router.post("/settings/compatibility", response_model=None)
async def set_level(request: Request, *, level: Annotated[str, Form()], csrf: Token = None,
                    subject: Annotated[str, Form()] = "",
                    back: Annotated[str, Form()] = "") -> Response:
    return await _setting(request, _LEVEL, value=level, subject=subject, back=back, csrf=csrf)


@router.post("/settings/mode", response_model=None)
async def set_mode(request: Request, *, mode: Annotated[str, Form()], csrf: Token = None,
                   subject: Annotated[str, Form()] = "",
                   back: Annotated[str, Form()] = "") -> Response:
    return await _setting(request, _MODE, value=mode, subject=subject, back=back, csrf=csrf)


@dataclass(frozen=True)
class _Setting:
    """A setting the console's forms change: a subject's (or the global) level or mode."""

    name: str
    values: type[CompatibilityLevel] | type[RegistryMode]
    put: Callable[..., Awaitable[object]]
    remove: Callable[..., Awaitable[object]]


_LEVEL = _Setting("compatibility", CompatibilityLevel, levels_and_modes.set_compatibility,
                  levels_and_modes.remove_compatibility)
_MODE = _Setting("mode", RegistryMode, levels_and_modes.set_mode, levels_and_modes.remove_mode)


async def _setting(request: Request, setting: _Setting, *, value: str, subject: str, back: str,
                   csrf: str | None) -> Response:
    """Set `setting` on `subject` (empty: the global one), or with ``inherit`` remove the
    subject's own; back to `back` (a console path)."""
    async def act() -> Response:
        registry = runtime_of(request).registry
        if subject and value == "inherit":
            await setting.remove(registry, subject)
            done = f"{setting.name}-removed"
        else:
            chosen = _member(setting.values, value, name=setting.name.replace(
                "compatibility", "level"))
            await setting.put(registry, chosen, subject=subject or None)
            done = setting.name
        return pages_of(request).redirect(local_path(back, "/console/settings"), done)
    return await guarded(request, act, write=True, form_token=csrf)


@router.post("/subjects/{subject}/delete", response_model=None)
async def delete(request: Request, *, subject: str, confirm: Annotated[str, Form()] = "",
                 permanent: Annotated[bool, Form()] = False,
                 csrf: Token = None) -> Response:
    async def act() -> Response:
        pages = pages_of(request)
        if confirm != subject:
            raise InvalidSearchError(
                f"confirm: type the subject's name ({subject}) to delete it; nothing was "
                "deleted", field="confirm")
        await runtime_of(request).delete_subject(subject, permanent=permanent)
        return pages.redirect(subject_link(subject) if not permanent else "/console/",
                              "deleted" if permanent else "soft-deleted")
    return await guarded(request, act, write=True, form_token=csrf)


@router.post("/sign-in", response_model=None)
async def sign_in(request: Request, *, key: Annotated[str, Form()], csrf: Token = None,
                  back: Annotated[str, Form()] = "") -> Response:
    pages = pages_of(request)
    try:
        check_csrf(request, csrf)
        keys = pages.keys(request)
        keys.check(None, key)
    except ServiceError as error:
        return pages.error(request, error)
    response = pages.redirect(local_path(back, "/console/"), "signed-in")
    set_cookie(response, request, name=SESSION_COOKIE, value=session_token(key))
    return response

@router.post("/sign-out", response_model=None)
async def sign_out(request: Request, *, csrf: Token = None) -> Response:
    try:
        check_csrf(request, csrf)
    except ServiceError as error:
        return pages_of(request).error(request, error)
    response = Pages.redirect("/console/", "signed-out")
    response.delete_cookie(SESSION_COOKIE, path="/console")
    return response


def _choice(value: str, allowed: tuple[str, ...], *, name: str) -> str:
    if value not in allowed:
        raise InvalidSearchError(f"{name}: {value!r} is not one of {', '.join(allowed)}",
                                 field=name)
    return value


def _enum(kind: type[E], value: str, *, name: str) -> E | None:
    return _member(kind, value, name=name) if value else None


def _member(kind: type[E], value: str, *, name: str) -> E:
    try:
        return kind(value.upper())
    except ValueError:
        raise InvalidSearchError(
            f"{name}: {value!r} is not one of {', '.join(m.value for m in kind)}",
            field=name) from None
