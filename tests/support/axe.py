"""axe-core, the accessibility checker (vendored in tests/support/vendor, see its README.txt),
run on the document open in a `Page`."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from tests.support.devtools import Page

__all__ = ["BLOCKING", "AXE", "Violation", "violations"]

AXE = Path(__file__).resolve().parent / "vendor" / "axe.min.js"
BLOCKING = frozenset({"serious", "critical"})
"""The impacts a page must not have."""

_RUN = """axe.run(document, {resultTypes: ['violations']}).then(result =>
  result.violations.map(v => ({rule: v.id, impact: v.impact || 'unknown', help: v.help,
                               targets: v.nodes.map(node => node.target.join(' '))})))"""


@dataclass(frozen=True)
class Violation:
    """One rule axe found broken: its id, impact and the elements (CSS selectors) at fault."""

    rule: str
    impact: str
    help: str
    targets: list[str]

    def __str__(self) -> str:
        return f"{self.rule} ({self.impact}): {self.help}; at {', '.join(self.targets)}"


@functools.cache
def _source() -> str:
    return AXE.read_text(encoding="utf-8")


def violations(page: Page) -> list[Violation]:
    """Every violation axe finds in `page`'s document, injecting axe first if the document
    lacks it. A page whose Content-Security-Policy forbids scripts needs a `Page` opened with
    ``bypass_csp=True``."""
    if not page.run("typeof window.axe === 'object'"):
        page.run(_source())
    return [Violation(**found) for found in page.run(_RUN)]
