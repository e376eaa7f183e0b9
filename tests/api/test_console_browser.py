"""The registry console (`/console`) in headless Chromium against a served app: a person with a
keyboard alone searches, opens a table, compares versions, previews and registers a DDL,
sets a compatibility level and soft-deletes a subject, each step checked on the page and in
the registry over HTTP; axe-core finds nothing serious on any page and the focus is drawn;
and the docs' screenshots (docs/images) still show what the pages say.

Chromium comes from Debian's package (`make test` installs it). A missing browser fails the
test. Keys are trusted key events through the DevTools protocol (tests/support/devtools.py):
the focus moves with Tab as it does for a person, and nothing is clicked or set by script.
"""

from __future__ import annotations

import difflib
import json
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from service.api.app import create_app
from service.api.settings import Settings
from tests.support.api import ORDERS_DDL
from tests.support.axe import BLOCKING, violations
from tests.support.devtools import DevTools, Focus, Page, chromium
from tests.support.harness import ServedApp

ROOT = Path(__file__).resolve().parents[2]
IMAGES = ROOT / "docs" / "images"
UPDATE = "FLATAVRO_UPDATE_SCREENSHOTS"
TOPIC = "tidb_{schema}_{table}"
STEM, KEY, VALUE = "tidb_shop_orders", "tidb_shop_orders-key", "tidb_shop_orders-value"
VERSION_2 = ORDERS_DDL.replace("note TEXT", "note TEXT, qty INT")
SCRIPT = VERSION_2 + ";\nALTER TABLE shop.orders ADD COLUMN discount DECIMAL(5,2);"
REFUSED = SCRIPT.replace("DECIMAL(5,2);", "DECIMAL(5,2) NOT NULL;")
API_KEY = "k1"

Pages = Callable[..., Page]


def _serve(db: Path, **settings: Any) -> ServedApp:
    """The service on a fresh registry holding `shop.orders`: key version 1 and value
    versions 1 (schema id 2) and 2 (id 3, adds `qty`)."""
    app = ServedApp(create_app(Settings(registry_db_path=str(db), log_level="WARNING",
                                        **settings)),
                    health_path="/healthz", lifespan="on").start()
    for ddl in (ORDERS_DDL, VERSION_2):
        reply = app.http.post(app.url + "/v1/tables/register", json={"ddl": ddl, "topic": TOPIC},
                              headers={"X-API-Key": API_KEY})
        assert reply.status_code == 200, reply.text
    return app


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevTools]:
    """One Chromium for the module; each test opens tabs in browser contexts of their own."""
    where = tmp_path_factory.mktemp("chromium")
    browser = DevTools(chromium(), where / "profile", log=where / "chromium.log")
    yield browser
    browser.close()


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedApp]:
    """The two versions of `shop.orders`, never changed by a test (read-only pages)."""
    app = _serve(tmp_path_factory.mktemp("registry") / "registry.sqlite")
    yield app
    app.stop()


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedApp]:
    """The same registry behind an API key: the console is read-only until signed in."""
    app = _serve(tmp_path_factory.mktemp("keyed") / "registry.sqlite", api_keys=[API_KEY])
    yield app
    app.stop()


@pytest.fixture
def tab(browser: DevTools) -> Iterator[Pages]:
    """Open tabs (`Page` arguments), closed after the test."""
    opened: list[Page] = []

    def open_tab(**options: Any) -> Page:
        opened.append(Page(browser, **options))
        return opened[-1]

    yield open_tab
    for page in opened:
        page.close()


def _rows(page: Page, caption: str) -> list[list[str]]:
    """The body rows (cell texts) of the first table whose caption starts with `caption`."""
    rows: list[list[str]] | None = page.run(f"""(() => {{
      const table = [...document.querySelectorAll('table')]
        .find(t => t.caption && t.caption.innerText.startsWith({json.dumps(caption)}));
      return table && [...table.tBodies[0].rows].map(r => [...r.cells].map(
        c => c.innerText.replace(/\\s+/g, ' ').trim()));
    }})()""")
    assert rows is not None, f"no table captioned {caption!r} on {page.run('location.href')}"
    return rows


def _drawn(focus: Focus) -> Focus:
    assert focus.ring, f"no focus ring on {focus.element}: outline {focus.outline_style} " \
                       f"{focus.outline_width}"
    return focus


def _no_serious_violations(page: Page) -> None:
    """axe's violations are printed; a serious or critical one fails the test."""
    found = violations(page)
    for violation in found:
        print("axe:", violation)
    blocking = [str(v) for v in found if v.impact in BLOCKING]
    assert not blocking, f"axe on {page.path()}:\n" + "\n".join(blocking)


def _shot(page: Page, path: Path) -> None:
    print("screenshot:", page.screenshot(path, full_page=True))


def _visible_text(page: Page) -> str:
    """The page's `main` as a reader sees it: innerText, blanks collapsed, empty lines out."""
    lines = (" ".join(line.split()) for line in page.run(
        "document.querySelector('main').innerText").splitlines())
    return "\n".join(line for line in lines if line) + "\n"


def test_the_keyboard_alone_searches_compares_registers_sets_and_deletes(
        tab: Pages, tmp_path: Path) -> None:
    app = _serve(tmp_path / "registry.sqlite")
    page = tab()  # the pages' Content-Security-Policy in force
    try:
        for step in (_search_to_table, _compare, _preview_and_register, _set_level,
                     _soft_delete):
            step(page, app=app, shots=tmp_path)
    finally:
        app.stop()


def _search_to_table(page: Page, *, app: ServedApp, shots: Path) -> None:
    """A schema id in the search box, Enter: its page; Tab to its table, Enter."""
    page.open(app.url + "/console/")
    assert page.focused().element.startswith("<input#q>")  # the search box has autofocus
    page.type("2")  # a schema id: value version 1
    _shot(page, shots / "01-search.png")
    page.press_and_wait("Enter")
    assert page.path() == "/console/schemas/2"
    assert _rows(page, "Subject versions that use schema 2") == [[VALUE, "1"]]
    assert app.http.get(f"{app.url}/v1/subjects/{VALUE}/versions/1").json()["id"] == 2
    _shot(page, shots / "02-schema.png")

    _drawn(page.tab_to(f'main a[href="/console/tables/{STEM}?value=1"]'))
    page.press_and_wait("Enter")
    assert page.path() == f"/console/tables/{STEM}?value=1"
    assert page.texts("main h2") == [f"Key subject: {KEY}", f"Value subject: {VALUE}"]
    assert _rows(page, "Version 1 (schema id 2)")[-1][0] == "note"
    _shot(page, shots / "03-table.png")


def _compare(page: Page, *, app: ServedApp, shots: Path) -> None:
    """The value side's Compare form (versions 1 and 2 preselected): the added column."""
    form = f'form[action="/console/subjects/{VALUE}/diff"]'
    _drawn(page.tab_to(f"{form} button"))
    assert page.run(f"[...document.querySelectorAll('{form} select')].map(s => s.value)"
                    ) == ["1", "2"]
    page.press_and_wait("Enter")
    assert page.path() == f"/console/subjects/{VALUE}/diff?from=1&to=2"
    changes = app.http.get(f"{app.url}/v1/subjects/{VALUE}/diff?from=1&to=2").json()["changes"]
    assert [(c["change"], c["column"]) for c in changes] == [("added", "qty")]
    assert _rows(page, "Column changes from version 1") == [
        ["qty", "+ added", changes[0]["message"], "✓ compatible"]]
    _shot(page, shots / "04-diff.png")


def _preview_and_register(page: Page, *, app: ServedApp, shots: Path) -> None:
    """The DDL page from the menu: type a script and the topic rule, Preview, Register."""
    versions = f"{app.url}/v1/subjects/{VALUE}/versions"
    _drawn(page.tab_to('nav a[href="/console/ddl"]'))
    page.press_and_wait("Enter")
    _drawn(page.tab_to("#ddl"))
    page.type(SCRIPT)
    _drawn(page.tab_to("#topic"))
    page.type(TOPIC)  # Tab selected the default rule: typing replaces it
    assert page.run("document.getElementById('topic').value") == TOPIC
    _drawn(page.tab_to("form.ddl button"))
    page.press_and_wait("Enter")
    assert page.path().startswith("/console/ddl?ddl=CREATE+TABLE")
    assert _rows(page, "Subjects and their verdicts") == [
        [KEY, "BACKWARD", "✓ compatible"], [VALUE, "BACKWARD", "✓ compatible"]]
    assert _rows(page, "Columns of `shop`.`orders`")[-1] == [
        "discount", "discount", "decimal(5,2)", "no", "✓ ok"]
    assert app.http.get(versions).json() == [1, 2]  # a preview registers nothing
    _shot(page, shots / "05-ddl.png")

    _drawn(page.tab_to('form[action="/console/ddl/register"] button:enabled'))
    page.press_and_wait("Enter")
    assert page.path() == f"/console/tables/{STEM}?done=registered"
    assert page.texts(".done") == ["Registered."]
    assert app.http.get(versions).json() == [1, 2, 3]
    assert _rows(page, "Version 3 (schema id 4)")[-1][0] == "discount"


def _set_level(page: Page, *, app: ServedApp, shots: Path) -> None:
    """The value side's level: arrow keys in the select to FULL, Tab, Enter."""
    level = _drawn(page.tab_to("#level-2"))
    for _ in range(10):
        if page.run("document.activeElement.value") == "FULL":
            break
        page.press("ArrowDown")
    assert page.focused().element == level.element
    assert page.run("document.activeElement.value") == "FULL"
    _drawn(page.tab_to("form:has(#level-2) button"))
    page.press_and_wait("Enter")
    assert page.path() == f"/console/tables/{STEM}?done=compatibility"
    assert page.texts(".done") == ["Compatibility level saved."]
    assert ["Compatibility", "FULL (set on the subject)"] in _rows(page, f"{VALUE} at a glance")
    assert app.http.get(f"{app.url}/v1/subjects/{VALUE}/compatibility").json() == {
        "subject": VALUE, "compatibility": "FULL", "configured": "FULL"}
    _shot(page, shots / "06-level.png")


def _soft_delete(page: Page, *, app: ServedApp, shots: Path) -> None:
    """The value subject's delete form: type its name, Tab to Soft delete, Enter."""
    _drawn(page.tab_to("#confirm-2", backwards=True))  # Shift+Tab from the top: the end
    page.type(VALUE)
    _drawn(page.tab_to("form:has(#confirm-2) button"))
    page.press_and_wait("Enter")
    assert page.path() == f"/console/tables/{STEM}?done=soft-deleted"
    assert page.texts(".done") == ["Soft-deleted. It can still be deleted permanently."]
    assert ["Soft-deleted versions", "1, 2, 3"] in _rows(page, f"{VALUE} at a glance")
    assert app.http.get(f"{app.url}/v1/subjects").json() == [KEY]
    _shot(page, shots / "07-deleted.png")


PAGES = {
    "index": "/console/",
    "search": "/console/?q=orders",
    "schema": "/console/schemas/2",
    "table": f"/console/tables/{STEM}",
    "diff": f"/console/subjects/{VALUE}/diff?from=1&to=2",
    "ddl": "/console/ddl",
    "ddl-preview": "/console/ddl?" + urlencode({"ddl": SCRIPT, "topic": TOPIC}),
    "ddl-refused": "/console/ddl?" + urlencode({"ddl": REFUSED, "topic": TOPIC}),
    "messages": "/console/messages",
    "settings": "/console/settings",
    "error": "/console/tables/nope",
    "sign-in": "keyed:/console/",
    "sign-in-table": f"keyed:/console/tables/{STEM}",
}
"""Every console page and state axe checks (``keyed:``: on the service with an API key)."""


@pytest.mark.parametrize("path", PAGES.values(), ids=list(PAGES))
def test_axe_finds_nothing_serious_and_the_focus_is_drawn(
        tab: Pages, registry: ServedApp, request: pytest.FixtureRequest, path: str) -> None:
    app: ServedApp = request.getfixturevalue("keyed") if path.startswith("keyed:") else registry
    page = tab(bypass_csp=True)
    page.open(app.url + path.removeprefix("keyed:"))
    assert page.run("document.title").endswith("· flatavro console")
    assert bool(page.run("!!document.querySelector('.sign-in')")) == path.startswith("keyed:")
    _no_serious_violations(page)
    _drawn(page.tab_to("a, input, select, textarea, button, summary"))


def test_signing_in_with_the_keyboard_opens_the_forms(tab: Pages, keyed: ServedApp) -> None:
    page = tab(bypass_csp=True)
    page.open(f"{keyed.url}/console/tables/{STEM}")
    assert page.texts(".access .badge") == ["Read-only"]
    assert page.run("document.querySelectorAll('form.danger').length") == 0
    _drawn(page.tab_to("#sign-in-key"))
    page.type(API_KEY)
    page.press_and_wait("Enter")
    assert page.path() == f"/console/tables/{STEM}?done=signed-in"
    assert page.texts(".access .badge") == ["Signed in: writes allowed"]
    assert page.run("document.querySelectorAll('form.danger').length") == 2
    _no_serious_violations(page)


def test_pasted_messages_decode_by_keyboard_and_axe_finds_nothing_serious(
        tab: Pages, registry: ServedApp, tmp_path: Path) -> None:
    encoded = registry.http.post(f"{registry.url}/v1/topics/{STEM}/encode", json={"records": [
        {"op": "insert", "row": {"id": 9, "sku": "A-9", "price": "9.90"}},
        {"op": "delete", "row": {"id": 9}}]}).json()["messages"]
    page = tab(bypass_csp=True)
    page.open(f"{registry.url}/console/messages")
    _drawn(page.tab_to("#messages"))
    page.type("\n".join(f"{m['key']} {m['value'] or 'null'}" for m in encoded))
    _drawn(page.tab_to("form[method=post] button[type=submit]"))
    page.press_and_wait("Enter")
    rows = _rows(page, "2 message(s)")
    assert [r[1] for r in rows] == ["upsert", "delete (tombstone)"]
    assert rows[0][5].endswith(f"{VALUE} v2") and rows[1][4] == "—"
    _no_serious_violations(page)
    _shot(page, tmp_path / "messages.png")


SCREENSHOTS = {"console-table": f"/console/tables/{STEM}",
               "console-ddl": "/console/ddl?" + urlencode({"ddl": SCRIPT, "topic": TOPIC})}
"""The docs' screenshots (docs/images/<name>.png) and the pages they show."""


def test_the_docs_screenshots_show_the_pages_as_they_are(
        tab: Pages, registry: ServedApp, tmp_path: Path) -> None:
    page, stale = tab(), []
    for name, path in SCREENSHOTS.items():
        page.open(registry.url + path)
        shot = page.screenshot(tmp_path / f"{name}.png", full_page=True)
        print("screenshot:", shot)
        text, stored = _visible_text(page), IMAGES / f"{name}.txt"
        if os.environ.get(UPDATE):
            IMAGES.mkdir(exist_ok=True)
            shutil.copyfile(shot, IMAGES / shot.name)
            stored.write_text(text, encoding="utf-8")
        if not stored.exists():
            stale.append(f"{stored.relative_to(ROOT)} is missing")
        elif (old := stored.read_text(encoding="utf-8")) != text:
            stale.append("".join(list(difflib.unified_diff(
                old.splitlines(keepends=True), text.splitlines(keepends=True),
                str(stored.relative_to(ROOT)), f"the page now ({name})"))[:40]))
    if stale:
        pytest.fail(f"the docs' console screenshots are stale: rerun this test with {UPDATE}=1, "
                    "which rewrites docs/images/console-*.png and their .txt, and look at the "
                    "pictures\n" + "\n".join(stale), pytrace=False)
