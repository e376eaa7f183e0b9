"""Headless Chromium driven over its DevTools protocol on a pipe, for the browser tests.

``--remote-debugging-pipe`` speaks NUL-terminated JSON on file descriptors 3 and 4, so neither
a driver package nor a debugging port is needed. `DevTools` is the browser (one command at a
time, events kept); `Page` is one tab in a browser context of its own (its own cookies): it
navigates, waits for loads, evaluates page script, presses keys as a keyboard does (trusted
key events, so focus moves and forms submit as for a person) and takes screenshots.

Chromium comes from Debian's package (`make test` installs it); a missing browser fails the
test (browser tests are marked `browser` by tests/conftest.py, which `make check` leaves out).
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.parts import not_in_fast_tier

__all__ = ["FLAGS", "KEYS", "DevTools", "Focus", "Key", "Page", "chromium"]

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--font-render-hinting=none"]
"""Every Chromium the tests start: headless, offline, and drawing the same pixels each run."""
_SHIFT = 8
"""Input.dispatchKeyEvent's modifier bit for Shift."""


def chromium() -> str:
    """The path of Debian's Chromium; fails the test when it is missing (or under `make
    check`, which runs no browser)."""
    not_in_fast_tier("headless Chromium", "browser")
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    assert found, "Debian's chromium is not installed (make test installs it)"
    return found


@dataclass(frozen=True)
class Key:
    """A key as Input.dispatchKeyEvent names it; `text` is what it types (Enter's ``\\r``
    submits a form, Space's ``" "`` presses a button or ticks a box)."""

    key: str
    code: str
    key_code: int
    text: str = ""


KEYS = {key.key: key for key in (
    Key("Tab", "Tab", 9), Key("Enter", "Enter", 13, "\r"), Key(" ", "Space", 32, " "),
    Key("Escape", "Escape", 27), Key("ArrowDown", "ArrowDown", 40),
    Key("ArrowUp", "ArrowUp", 38), Key("Home", "Home", 36), Key("End", "End", 35))}
"""The keys a test may press, by their DOM ``key`` name."""


@dataclass(frozen=True)
class Focus:
    """The focused element (`element`: tag, id, name or href, text) and the computed style of
    its focus ring."""

    element: str
    outline_style: str
    outline_width: str

    @property
    def ring(self) -> bool:
        """Whether a focus ring is drawn (an outline of some width and style)."""
        return self.outline_style != "none" and self.outline_width not in ("0px", "")


_FOCUSED = """(e => {
  const style = getComputedStyle(e);
  const name = e.id ? '#' + e.id : e.name ? `[name=${e.name}]` : e.getAttribute('href') || '';
  return {element: `<${e.tagName.toLowerCase()}${name}> ${(e.innerText || e.value || '')
            .trim().slice(0, 30)}`.trim(),
          outline_style: style.outlineStyle, outline_width: style.outlineWidth};
})(document.activeElement)"""


class DevTools:
    """A Chromium driven over ``--remote-debugging-pipe``: `call` sends one command (to the
    page's `session` if given) and returns its result; events are kept in `events`."""

    def __init__(self, browser: str, profile: Path, *, log: Path) -> None:
        to_browser, self._out = os.pipe()
        self._in, from_browser = os.pipe()
        with log.open("wb") as stderr:  # bash: dash's redirections take one-digit fds only
            self.process = subprocess.Popen(
                ["bash", "-c", f'exec "$0" "$@" 3<&{to_browser} 4>&{from_browser}', browser,
                 *FLAGS, "--remote-debugging-pipe", f"--user-data-dir={profile}"],
                pass_fds=(to_browser, from_browser), stdout=stderr, stderr=stderr)
        os.close(to_browser)
        os.close(from_browser)
        self.events: list[dict[str, Any]] = []
        self._buffer, self._last = b"", 0

    def call(self, method: str, params: dict[str, Any] | None = None, *,
             session: str | None = None, timeout: float = 30) -> dict[str, Any]:
        """Send one command and return its result (events that arrive meanwhile are kept)."""
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

    def wait_event(self, method: str, *, session: str | None, since: int,
                   timeout: float = 30) -> dict[str, Any]:
        """The first event `method` (of `session`) at index `since` of `events` or later,
        reading the pipe until it comes."""
        deadline = time.monotonic() + timeout
        seen = since
        while True:
            for event in self.events[seen:]:
                if event.get("method") == method and event.get("sessionId") == session:
                    return event
            seen = len(self.events)
            try:
                self.events.append(self._next(deadline))
            except TimeoutError:
                raise TimeoutError(f"no {method} within {timeout} s") from None

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
        """Close the browser (kill it if it does not exit) and the pipe."""
        try:
            self.call("Browser.close", timeout=10)
            self.process.wait(timeout=10)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait(timeout=10)
            os.close(self._in)
            os.close(self._out)


class Page:
    """One tab, in a browser context of its own (cookies included): `open` a URL and wait for
    its load, `run` page script, `press` keys and `type` text, `screenshot` it."""

    def __init__(self, browser: DevTools, *, bypass_csp: bool = False,
                 size: tuple[int, int] = (1280, 900)) -> None:
        """Open a blank tab; `bypass_csp` lets injected script (axe-core) run on pages whose
        Content-Security-Policy forbids scripts."""
        self.browser = browser
        self.context = browser.call("Target.createBrowserContext")["browserContextId"]
        target = browser.call("Target.createTarget", {
            "url": "about:blank", "browserContextId": self.context})["targetId"]
        self.session = browser.call("Target.attachToTarget",
                                    {"targetId": target, "flatten": True})["sessionId"]
        for method in ("Network.enable", "Page.enable"):
            self.call(method)
        if bypass_csp:
            self.call("Page.setBypassCSP", {"enabled": True})
        width, height = size
        self.call("Emulation.setDeviceMetricsOverride", {
            "width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """One DevTools command to this tab."""
        return self.browser.call(method, params, session=self.session)

    def open(self, url: str, *, timeout: float = 30) -> None:
        """Navigate to `url` and wait for its load event."""
        since = len(self.browser.events)
        navigated = self.call("Page.navigate", {"url": url})
        assert "errorText" not in navigated, f"{url}: {navigated['errorText']}"
        self.browser.wait_event("Page.loadEventFired", session=self.session, since=since,
                                timeout=timeout)

    def run(self, expression: str) -> Any:
        """Evaluate page script (awaiting a promise) and return its value."""
        result = self.browser.call("Runtime.evaluate", {
            "expression": expression, "awaitPromise": True, "returnByValue": True},
            session=self.session, timeout=60)
        assert "exceptionDetails" not in result, result["exceptionDetails"]
        return result["result"].get("value")

    def path(self) -> str:
        """The path and query of the page's URL."""
        where: str = self.run("location.pathname + location.search")
        return where

    def texts(self, selector: str) -> list[str]:
        """The rendered text (innerText, trimmed) of each element matching `selector`."""
        texts: list[str] = self.run(f"[...document.querySelectorAll({json.dumps(selector)})]"
                                    ".map(e => e.innerText.trim())")
        return texts

    def press(self, name: str, *, shift: bool = False) -> None:
        """Press and release one key of `KEYS` (with Shift held if `shift`)."""
        key = KEYS[name]
        common = {"key": key.key, "code": key.code, "windowsVirtualKeyCode": key.key_code,
                  "nativeVirtualKeyCode": key.key_code, "modifiers": _SHIFT if shift else 0}
        down = {"type": "keyDown", "text": key.text} if key.text else {"type": "rawKeyDown"}
        self.call("Input.dispatchKeyEvent", {**common, **down})
        self.call("Input.dispatchKeyEvent", {**common, "type": "keyUp"})

    def press_and_wait(self, name: str, *, timeout: float = 30) -> None:
        """Press a key that leaves the page (Enter on a link or in a form) and wait for the
        next page's load event."""
        since, focus = len(self.browser.events), self.focused().element
        self.press(name)
        try:
            self.browser.wait_event("Page.loadEventFired", session=self.session, since=since,
                                    timeout=timeout)
        except TimeoutError:
            raise AssertionError(f"{name} on {focus} at {self.path()} loaded no page within "
                                 f"{timeout} s") from None

    def type(self, text: str) -> None:
        """Type `text` into the focused field, as an input method commits it."""
        self.call("Input.insertText", {"text": text})

    def focused(self) -> Focus:
        """The element that has the focus, and the outline the page draws around it."""
        return Focus(**self.run(_FOCUSED))

    def tab_to(self, selector: str, *, backwards: bool = False, limit: int = 80) -> Focus:
        """Press Tab (Shift+Tab if `backwards`) until the focused element matches the CSS
        `selector`; fails after `limit` presses, naming where the focus went."""
        went: list[str] = []
        for _ in range(limit):
            self.press("Tab", shift=backwards)
            if self.run(f"document.activeElement.matches({json.dumps(selector)})"):
                return self.focused()
            went.append(self.focused().element)
        raise AssertionError(
            f"{limit} presses of {'Shift+' if backwards else ''}Tab on "
            f"{self.run('location.href')} never focused {selector}; the focus went to "
            f"{', '.join(went)}")

    def screenshot(self, path: Path, *, full_page: bool = False) -> Path:
        """Write the viewport (or, with `full_page`, the whole page) as a PNG to `path`."""
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            size = self.call("Page.getLayoutMetrics")["cssContentSize"]
            params |= {"captureBeyondViewport": True, "clip": {
                "x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}}
        shot = self.call("Page.captureScreenshot", params)
        path.write_bytes(base64.b64decode(shot["data"]))
        return path

    def close(self) -> None:
        """Close the tab and drop its browser context (its cookies)."""
        self.browser.call("Target.disposeBrowserContext", {"browserContextId": self.context})

    def requests(self) -> list[str]:
        """Every URL this tab asked for."""
        return [e["params"]["request"]["url"] for e in self.browser.events
                if e.get("method") == "Network.requestWillBeSent"
                and e.get("sessionId") == self.session]

    def foreign_requests(self, origin: str) -> list[str]:
        """The requests to anywhere but `origin` (inline ``data:`` images aside)."""
        return [u for u in self.requests() if not u.startswith((origin + "/", "data:"))]
