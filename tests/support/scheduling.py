"""How `make test` spreads test files over its pytest-xdist workers (`--dist loadfile`).

xdist's file scheduler hands out files in collection order (tests/conftest.py sorts the long
files first) and gives a worker its next file as soon as the one it runs has two tests or fewer
left. A long file of one or two tests therefore takes the next file in the queue at once, often
the next long one, which then waits minutes behind it while the other worker may run dry. Here a
worker whose last pending test belongs to a long file is given the *shortest* file left instead
(it runs in seconds once the long test ends), and a worker whose last test belongs to a short
file takes the longest. A worker with one test left must be given its next file before that
test runs: xdist runs an item only once it knows the item after it (the module's fixtures are
torn down between files).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

from xdist.scheduler import LoadFileScheduling


class ShortFileBehindLong(LoadFileScheduling):
    """`--dist loadfile` with the prefetch rule above; `minutes` gives each long file's
    rough duration by file name (the rest count as short)."""

    def __init__(self, config: Any, log: Any = None, *,
                 minutes: Mapping[str, float]) -> None:
        """Schedule as LoadFileScheduling does, but for which file a busy worker gets next."""
        super().__init__(config, log)
        self.minutes = minutes

    def _long(self, scope: str) -> bool:
        return self.minutes.get(PurePosixPath(scope).name, 0) >= 1

    def _reschedule(self, node: Any) -> None:
        if node.shutting_down:
            return
        if not self.workqueue:
            node.shutdown()
            return
        assigned = self.assigned_work[node]
        if self._pending_of(assigned) > 1:
            return
        pending = [scope for scope, tests in assigned.items() if not all(tests.values())]
        if pending and self._long(pending[-1]) and len(self.workqueue) > 1:
            self.workqueue.move_to_end(next(reversed(self.workqueue)), last=False)
        self._assign_work_unit(node)
