"""The docs page in headless Chromium with no internet access: every operation of both
documents renders, and "Try it out" shows an admin what the service answers.

Chromium comes from Debian's package (`make test` installs it). A missing browser fails the
test: the docs page is a deliverable, not an optional extra. Clicks and typing go through
Chromium's DevTools protocol over a pipe (``--remote-debugging-pipe``: NUL-terminated JSON
on file descriptors 3 and 4), so neither a driver package nor a debugging port is needed.
"""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from service.api.docs.openapi_file import document, registry_document
from tests.support.api import ORDERS_DDL
from tests.support.harness import ServedApp

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
VALUE = "tidb_shop_orders-value"


def _chromium() -> str:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    assert chromium, "Debian's chromium is not installed (make test installs it)"
    return chromium


@pytest.mark.parametrize(("query", "spec"), [("", document), ("?definition=registry",
                                                               registry_document)])
def test_docs_page_renders_every_operation_offline(served: ServedApp, tmp_path: Path,
                                                   query: str, spec: Any) -> None:
    page = httpx.get(served.url + "/docs", timeout=10).text
    assets = re.findall(r'(?:src|href)="([^"]+)"', page)
    assert assets and all(a.startswith("/docs/assets/") for a in assets), assets
    dom = subprocess.run(
        [_chromium(), *FLAGS, "--virtual-time-budget=20000", "--dump-dom",
         f"--user-data-dir={tmp_path / 'profile'}", served.url + "/docs" + query],
        capture_output=True, text=True, timeout=120, check=True).stdout
    rendered = set(re.findall(r'id="operations-[a-z-]+?-([A-Za-z]+)"', dom))
    expected = {op["operationId"] for path in spec()["paths"].values()
                for op in path.values()}
    assert expected <= rendered, sorted(expected - rendered)


class DevTools:
    """A Chromium driven over ``--remote-debugging-pipe``: `call` sends one command (to the
    page's `session` if given) and returns its result; events are kept in `events`."""

    def __init__(self, chromium: str, profile: Path, log: Path) -> None:
        to_browser, self._out = os.pipe()
        self._in, from_browser = os.pipe()
        with log.open("wb") as stderr:  # bash: dash's redirections take one-digit fds only
            self.process = subprocess.Popen(
                ["bash", "-c", f'exec "$0" "$@" 3<&{to_browser} 4>&{from_browser}', chromium,
                 *FLAGS, "--remote-debugging-pipe", f"--user-data-dir={profile}"],
                pass_fds=(to_browser, from_browser), stdout=stderr, stderr=stderr)
        os.close(to_browser)
        os.close(from_browser)
        self.events: list[dict[str, Any]] = []
        self._buffer, self._last = b"", 0

    def call(self, method: str, params: dict[str, Any] | None = None,
             session: str | None = None, timeout: float = 30) -> dict[str, Any]:
        self._last += 1
        message = {"id": self._last, "method": method, "params": params or {},
                   **({"sessionId": session} if session else {})}
        os.write(self._out, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._next(deadline)
            if reply.get("id") != self._last:
                self.events.append(reply)
            elif "error" in reply:
                raise RuntimeError(f"{method}: {reply['error']}")
            else:
                return dict(reply["result"])

    def _next(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            ready, _, _ = select.select([self._in], [], [], max(0, deadline - time.monotonic()))
            if not ready:
                raise TimeoutError("Chromium did not answer in time")
            chunk = os.read(self._in, 1 << 16)
            if not chunk:
                raise EOFError("Chromium closed the DevTools pipe")
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        return dict(json.loads(message))

    def close(self) -> None:
        try:
            self.call("Browser.close", timeout=10)
            self.process.wait(timeout=10)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait(timeout=10)
            os.close(self._in)
            os.close(self._out)


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


class Page:
    """`/docs` open in a Chromium tab: `run(js)` awaits page script and returns its value;
    `requests()` lists every URL the page asked for."""

    def __init__(self, browser: DevTools, url: str) -> None:
        self.browser = browser
        target = browser.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = browser.call("Target.attachToTarget",
                                    {"targetId": target, "flatten": True})["sessionId"]
        browser.call("Network.enable", session=self.session)
        browser.call("Page.navigate", {"url": url}, session=self.session)
        self.run("new Promise(ready => { const tick = () => window.SwaggerUIBundle "
                 "? ready() : setTimeout(tick, 50); tick(); })")
        self.run(CONSOLE)

    def run(self, expression: str) -> Any:
        result = self.browser.call("Runtime.evaluate", {
            "expression": expression, "awaitPromise": True, "returnByValue": True},
            session=self.session, timeout=60)
        assert "exceptionDetails" not in result, result["exceptionDetails"]
        return result["result"].get("value")

    def requests(self) -> list[str]:
        return [e["params"]["request"]["url"] for e in self.browser.events
                if e.get("method") == "Network.requestWillBeSent"]

    def foreign_requests(self, origin: str) -> list[str]:
        """The requests to anywhere but `origin` (inline ``data:`` images aside)."""
        return [u for u in self.requests() if not u.startswith((origin + "/", "data:"))]


@pytest.fixture
def page(served: ServedApp, tmp_path: Path) -> Iterator[Page]:
    """The service's `/docs` in headless Chromium."""
    browser = DevTools(_chromium(), tmp_path / "profile", tmp_path / "chromium.log")
    try:
        yield Page(browser, served.url + "/docs")
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
