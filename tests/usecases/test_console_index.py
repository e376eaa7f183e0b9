"""The console's subject index: a search over all names in one pass finds exactly the entries
a search of each entry's names finds (names, regexes; any case), and the index is made again
only when the registry's subjects change."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from service.usecases.console import Search, SubjectIndex, _by_text, _entries
from tests.support.harness import run

NAME = st.from_regex(r"[A-Za-z0-9_.İß-]{1,12}(-key|-value)?", fullmatch=True)


class _Names:
    """A registry that answers only its subject list, counting the calls."""

    def __init__(self, names: list[str]) -> None:
        self.names, self.calls = names, 0

    async def subjects(self) -> list[str]:
        self.calls += 1
        return sorted(self.names)


@given(names=st.lists(NAME, max_size=40, unique=True),
       needle=st.from_regex(r"[A-Za-z0-9_İß-]{0,4}", fullmatch=True))
def test_one_pass_finds_what_each_entry_finds(names: list[str], needle: str) -> None:
    indexed = run(SubjectIndex(changes=None).entries(_Names(names)))  # type: ignore[arg-type]
    entries = _entries(sorted(names))

    def each(e: object) -> list[str]:
        return [e.name, *e.subjects]  # type: ignore[attr-defined]
    assert _by_text(indexed, needle) == [
        e for e in entries if not needle or any(needle.lower() in n.lower() for n in each(e))]
    pattern = re.compile(f"^{re.escape(needle)}", re.MULTILINE)
    assert _by_text(indexed, f"/^{re.escape(needle)}/") == [
        e for e in entries if any(pattern.match(n) for n in each(e))]


@pytest.mark.parametrize("changes", [None, "counter"])
def test_the_index_is_made_again_only_when_the_subjects_change(changes: str | None) -> None:
    registry = _Names(["a-key", "a-value"])
    counter = [1]
    index = SubjectIndex(changes=(lambda: counter[0]) if changes else None)
    first = run(index.entries(registry))  # type: ignore[arg-type]
    again = run(index.entries(registry))  # type: ignore[arg-type]
    assert again.generation == first.generation == 1
    assert registry.calls == (1 if changes else 2)  # a counter that did not move: no call
    registry.names.append("b-value")
    counter[0] += 1
    moved = run(index.entries(registry))  # type: ignore[arg-type]
    assert moved.generation == 2 and [e.name for e in moved.entries] == ["a", "b"]
    assert Search(text="b").text == "b"
