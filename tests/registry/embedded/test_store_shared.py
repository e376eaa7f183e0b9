"""One registry file shared by several connections, as the workers of ``flatavro serve
--workers N`` share it: opening and writing wait for each other, and commits are noticed."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from service.registry.embedded import store as store_module
from service.registry.embedded.store import RegistryStore, StoreChanges
from service.registry.errors import RegistryUnavailableError


@contextmanager
def held_write_lock(path: Path, *, release_after: float | None) -> Iterator[None]:
    """Another connection holding the file's write lock, released by a timer (or at exit)."""
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    other.execute("CREATE TABLE IF NOT EXISTS elsewhere (a INTEGER)")
    timer = threading.Timer(release_after or 0, other.execute, ("COMMIT",))
    if release_after is not None:
        timer.start()
    try:
        yield
    finally:
        if timer.is_alive():
            timer.join()
        if other.in_transaction:
            other.execute("COMMIT")
        other.close()


def test_opening_a_new_file_another_connection_is_writing_waits_for_it(tmp_path: Path) -> None:
    # Without waiting, SQLite refuses the switch to WAL mode at once ("database is locked"):
    # the workers of `uvicorn --factory --workers N` open a new file all at the same moment.
    path = tmp_path / "r.sqlite"
    with held_write_lock(path, release_after=0.3):
        store = RegistryStore(path)
    store.close()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_a_write_waits_for_another_connections_transaction(tmp_path: Path) -> None:
    first, second = RegistryStore(tmp_path / "r.sqlite"), RegistryStore(tmp_path / "r.sqlite")
    with held_write_lock(tmp_path / "r.sqlite", release_after=0.3), second.transaction():
        held = second.insert_schema("b", "schema b")
    with first.transaction():
        assert first.insert_schema("a", "schema a") == held + 1  # the next id, no clash
    assert (first.schema_id_for("b"), second.schema_id_for("a")) == (held, held + 1)
    first.close()
    second.close()


def test_a_write_locked_out_too_long_is_registry_unavailable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_module, "BUSY_SECONDS", 0.2)
    store = RegistryStore(tmp_path / "r.sqlite")
    with held_write_lock(tmp_path / "r.sqlite", release_after=None), \
            pytest.raises(RegistryUnavailableError) as err, store.transaction():
        store.insert_schema("never", "stored")
    assert err.value.code == "registry_unavailable" and err.value.retry_after == 1
    assert err.value.details == {"path": str(tmp_path / "r.sqlite")}
    assert isinstance(err.value.__cause__, sqlite3.OperationalError)
    assert store.schema_id_for("never") is None
    store.close()


def test_changes_tell_every_commit_and_only_commits(tmp_path: Path) -> None:
    first, second = RegistryStore(tmp_path / "r.sqlite"), RegistryStore(tmp_path / "r.sqlite")
    changes = StoreChanges(tmp_path / "r.sqlite")
    seen = [changes.version()]
    first.schema_id_for("x")  # reads commit nothing
    seen.append(changes.version())
    for store, name in ((first, "a"), (second, "b")):
        with store.transaction():
            store.insert_schema(name, name)
        seen.append(changes.version())
    assert seen[0] == seen[1] and len(set(seen[1:])) == 3
    for closing in (changes, first, second):
        closing.close()
