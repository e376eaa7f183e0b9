"""The docs page in headless Chromium with no internet access: every operation of both
documents renders, and "Try it out" shows an admin what the service answers.

Chromium comes from Debian's package (`make test` installs it). A missing browser fails the
test: the docs page is a deliverable, not an optional extra. Clicks and typing go through
Chromium's DevTools protocol over a pipe (tests/support/devtools.py), so neither a driver
package nor a debugging port is needed.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from service.api.docs.openapi_file import document, registry_document
from tests.support.api import ORDERS_DDL
from tests.support.devtools import FLAGS, DevTools, Page, chromium
from tests.support.harness import ServedApp

VALUE = "tidb_shop_orders-value"


@pytest.mark.parametrize(("query", "spec"), [("", document), ("?definition=registry",
                                                               registry_document)])
def test_docs_page_renders_every_operation_offline(served: ServedApp, tmp_path: Path,
                                                   query: str, spec: Any) -> None:
    page = httpx.get(served.url + "/docs", timeout=10).text
    assets = re.findall(r'(?:src|href)="([^"]+)"', page)
    assert assets and all(a.startswith("/docs/assets/") for a in assets), assets
    dom = subprocess.run(
        [chromium(), *FLAGS, "--virtual-time-budget=20000", "--dump-dom",
         f"--user-data-dir={tmp_path / 'profile'}", served.url + "/docs" + query],
        capture_output=True, text=True, timeout=120, check=True).stdout
    rendered = set(re.findall(r'id="operations-[a-z-]+?-([A-Za-z]+)"', dom))
    expected = {op["operationId"] for path in spec()["paths"].values()
                for op in path.values()}
    assert expected <= rendered, sorted(expected - rendered)


# What an admin does on the page, as page script: open an operation, make sure "Try it out"
# is on, fill the parameters, Execute, and read the live response the page renders.
CONSOLE = r"""
window.console_test = (() => {
  const wait = (selector, root = document, ms = 20000) => new Promise((resolve, reject) => {
    const start = Date.now();
    const tick = () => {
      const found = root.querySelector(selector);
      if (found) resolve(found);
      else if (Date.now() - start > ms) reject(new Error(`no ${selector} after ${ms} ms`));
      else setTimeout(tick, 50);
    };
    tick();
  });
  const type = (field, value) => {
    const proto = field.tagName === 'SELECT' ? HTMLSelectElement : HTMLInputElement;
    field.focus();
    Object.getOwnPropertyDescriptor(proto.prototype, 'value').set.call(field, value);
    field.dispatchEvent(new Event('input', {bubbles: true}));
    field.dispatchEvent(new Event('change', {bubbles: true}));
    field.blur();  // Swagger UI's text inputs debounce a change; leaving the field commits it
  };
  const execute = async (operationId, params) => {
    const block = await wait(`.opblock[id$="-${operationId}"]`);
    block.querySelector('.opblock-summary-control').click();
    const tryOut = await wait('.try-out__btn', block);
    if (tryOut.textContent.trim() === 'Try it out') tryOut.click();
    for (const [name, value] of Object.entries(params)) {
      const row = await wait(`tr[data-param-name="${name}"]`, block);
      type(await wait('select, input', row), value);
    }
    (await wait('button.execute', block)).click();
    const answer = await wait('.live-responses-table tbody tr.response', block);
    return {tryOut: block.querySelector('.try-out__btn').textContent.trim(),
            url: block.querySelector('.request-url pre').textContent.trim(),
            status: answer.querySelector('.response-col_status').textContent.trim(),
            body: answer.querySelector('.response-col_description pre').textContent};
  };
  const pick = async (definition, operationId) => {
    const select = document.getElementById('definition');
    select.value = definition;
    select.dispatchEvent(new Event('change'));
    await wait(`.opblock[id$="-${operationId}"]`);
    return location.search;
  };
  return {wait, execute, pick};
})();
"""


@pytest.fixture
def page(served: ServedApp, tmp_path: Path) -> Iterator[Page]:
    """The service's `/docs` in headless Chromium, with `console_test` loaded."""
    browser = DevTools(chromium(), tmp_path / "profile", log=tmp_path / "chromium.log")
    try:
        page = Page(browser)
        page.open(served.url + "/docs")
        page.run("new Promise(ready => { const tick = () => window.SwaggerUIBundle "
                 "? ready() : setTimeout(tick, 50); tick(); })")
        page.run(CONSOLE)
        yield page
    finally:
        browser.close()


def _register_two_versions(url: str) -> None:
    for ddl in (ORDERS_DDL, ORDERS_DDL.replace("note TEXT", "note TEXT, qty INT")):
        assert httpx.post(url + "/v1/tables/register", json={"ddl": ddl}).status_code == 200


def test_try_it_out_shows_the_overview_and_a_diff(served: ServedApp, page: Page) -> None:
    _register_two_versions(served.url)
    overview = page.run("console_test.execute('listSubjects', {detail: 'true'})")
    # the button reads "Cancel" while the operation is being tried out
    assert (overview["tryOut"], overview["status"]) == ("Cancel", "200")
    assert overview["url"] == served.url + "/v1/subjects?deleted=false&detail=true"
    shown = json.loads(overview["body"])
    assert shown == httpx.get(served.url + "/v1/subjects?detail=true").json()
    assert [(s["subject"], s["versions"], s["compatibility"]) for s in shown] == [
        ("tidb_shop_orders-key", [1], {"configured": None, "effective": "BACKWARD"}),
        (VALUE, [1, 2], {"configured": None, "effective": "BACKWARD"})]

    diff = page.run(f"console_test.execute('diffVersions', {{subject: '{VALUE}', "
                    f"from: '1', to: '2'}})")
    assert (diff["status"], diff["url"]) == (
        "200", f"{served.url}/v1/subjects/{VALUE}/diff?from=1&to=2")
    shown = json.loads(diff["body"])
    assert [(c["change"], c["column"]) for c in shown["changes"]] == [("added", "qty")]
    assert (shown["from"]["version"], shown["to"]["version"]) == (1, 2)
    assert shown["compatibility"] == {"compatibility_level": "BACKWARD", "compatible": True,
                                      "incompatibilities": []}
    assert page.requests() and page.foreign_requests(served.url) == []


def test_the_registry_definition_is_a_console_too(served: ServedApp, page: Page) -> None:
    _register_two_versions(served.url)
    assert page.run("console_test.pick('registry', 'listVersions')") == "?definition=registry"
    assert served.url + "/openapi-registry.json" in page.requests()
    versions = page.run(f"console_test.execute('listVersions', {{subject: '{VALUE}'}})")
    assert (versions["status"], json.loads(versions["body"])) == ("200", [1, 2])
    assert versions["url"].startswith(f"{served.url}/registry/subjects/{VALUE}/versions?")
    delete = page.run("console_test.wait('.opblock[id$=\"-deleteSubject\"] "
                      ".opblock-summary-description').then(e => e.textContent)")
    assert delete == "WRITE: Delete a subject"
    assert page.foreign_requests(served.url) == []
