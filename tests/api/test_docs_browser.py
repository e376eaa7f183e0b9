"""The docs page renders every operation in headless Chromium with no internet access.

Chromium comes from Debian's package (`make test` installs it). A missing browser fails the
test: the docs page is a deliverable, not an optional extra.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import httpx

from service.api.openapi_file import document
from tests.registry.conftest import ServedApp

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--virtual-time-budget=20000", "--dump-dom"]


def test_docs_page_renders_every_operation_offline(served: ServedApp, tmp_path: Path) -> None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    assert chromium, "Debian's chromium is not installed (make test installs it)"
    page = httpx.get(served.url + "/docs", timeout=10).text
    assets = re.findall(r'(?:src|href)="([^"]+)"', page)
    assert assets and all(a.startswith("/docs/assets/") for a in assets), assets
    dom = subprocess.run(
        [chromium, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", served.url + "/docs"],
        capture_output=True, text=True, timeout=120, check=True).stdout
    rendered = set(re.findall(r'id="operations-[a-z-]+?-([A-Za-z]+)"', dom))
    expected = {op["operationId"] for path in document()["paths"].values()
                for op in path.values()}
    assert expected <= rendered, sorted(expected - rendered)
