"""Fail a run whose number of tests reported is not the number collected (loaded for every run
by pyproject's `addopts`: `-p tests.support.count_guard`).

pytest-xdist's `loadfile`/`loadscope` schedulers key the work by node id: items that share one
node id are folded into one, and xdist runs one of them and drops the others without a word.
The run stays green and the progress bar ends short of 100% (issue 31: the schemathesis cases,
29 operations under one node id per document, ran 3 of 87). This plugin counts the items
collected (after deselection) and the items that produced a result, and at the end of a run
that was not stopped early fails it when the two differ, naming the node ids that more than
one item shares. Shared node ids fail a run without xdist too (every item runs there, but
`make check` and `make test` would drop them). It prints one line either way:

    count guard: 3134 tests collected, 3050 reported: 84 never ran (3 node ids shared by
    several tests, xdist runs one of each: tests/api/test_schemathesis.py::test_the_..., ...)

Collected: without xdist the session's items after `pytest_collection_modifyitems` and
deselection; under xdist the ids a worker collected (every worker collects the same list,
xdist checks it). Reported: one per item, its teardown report (every run item gives exactly
one, also when its setup failed or it was skipped), or the report xdist makes for an item
whose worker crashed. The controller receives every worker's reports; workers do nothing.
Not checked: `--collect-only`, `--fixtures`, and runs stopped early (`-x`/`--maxfail`, Ctrl-C,
an internal error), which report fewer on purpose. A run that collects nothing keeps pytest's
exit code 5.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Generator, Sequence
from typing import Any

import pytest

SHOWN_DUPLICATES = 10
_ITEM_PHASES = ("setup", "call")
_STOPPED = (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.INTERNAL_ERROR,
            pytest.ExitCode.USAGE_ERROR)


def pytest_configure(config: pytest.Config) -> None:
    """Register the guard in the controller (or the only process), never in an xdist worker."""
    if hasattr(config, "workerinput") or config.getoption("collectonly", False):
        return
    config.pluginmanager.register(CountGuard(), "flatavro-count-guard")


def verdict(collected: Sequence[str], reported: int) -> tuple[bool, str]:
    """(passes, the line to print) for the node ids collected and the number of results."""
    shared = [nodeid for nodeid, n in Counter(collected).items() if n > 1]
    line = f"count guard: {len(collected)} tests collected, {reported} reported"
    if reported < len(collected):
        line += f": {len(collected) - reported} never ran"
    elif reported > len(collected):
        line += f": {reported - len(collected)} more than collected"
    if shared:
        names = ", ".join(shared[:SHOWN_DUPLICATES])
        more = f" and {len(shared) - SHOWN_DUPLICATES} more" if len(shared) > SHOWN_DUPLICATES \
            else ""
        line += f" ({len(shared)} node ids shared by several tests, xdist runs one of each: " \
            f"{names}{more})"
    return reported == len(collected) and not shared, line


class CountGuard:
    """Counts the tests collected and reported in one run and fails it when they differ."""

    def __init__(self) -> None:
        self.collected: list[str] | None = None
        self.from_workers = False
        self.reported = 0
        self.ran = False
        self.line: str | None = None
        self.passed = True

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Without xdist: the items left after collection and deselection."""
        if not self.from_workers:
            self.collected = [item.nodeid for item in session.items]

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: Sequence[str]) -> None:
        """Under xdist: a worker's collection (all of them collect the same ids)."""
        if not self.from_workers:
            self.collected = list(ids)
            self.from_workers = True

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, object, object]:
        """Only a run that runs tests is counted (not `--fixtures`, which collects)."""
        self.ran = True
        return (yield)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """One result per item: its teardown, or xdist's report of an item whose worker
        crashed (phase `???`, no teardown follows)."""
        if report.when not in _ITEM_PHASES:
            self.reported += 1

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Compare the counts of a run that ended on its own; fail it when they differ."""
        if not self.ran or self.collected is None or session.shouldfail or session.shouldstop \
                or session.exitstatus in _STOPPED:
            return
        self.passed, self.line = verdict(self.collected, self.reported)
        if not self.passed and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """The guard's line, at the end of the summary."""
        if self.line is not None:
            terminalreporter.write_line(self.line, red=not self.passed, green=self.passed)
