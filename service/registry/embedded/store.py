"""SQLite storage of the embedded registry: schemas by id, subject versions, config and mode.

One connection in WAL mode, guarded by a lock; every write runs in one ``BEGIN IMMEDIATE``
transaction, so a crash never leaves a half-registered schema. Several processes (``flatavro
serve --workers N``) share one file: a writer waits up to `BUSY_SECONDS` for another's
transaction, and `StoreChanges` tells a process when another one committed. Opening the file
(`database.open_database`) refuses one that cannot be used, naming the path.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from service.registry.embedded.database import RegistryStoreError, connect, open_database
from service.registry.errors import RegistryUnavailableError

__all__ = ["BUSY_SECONDS", "GLOBAL", "RegistryStore", "RegistryStoreError", "StoreChanges",
           "VersionRow"]

BUSY_SECONDS = 30.0
"""How long a write waits for another process's write transaction (SQLite's busy timeout)
before it is refused as `RegistryUnavailableError`; transactions last milliseconds, except a
compatibility check redone inside one for a wide table."""

GLOBAL = ""
"""The subject key under which global config and mode are stored."""


class VersionRow(tuple[int, int, str, bool]):
    """(version, schema id, schema text, soft-deleted) of one subject version."""

    __slots__ = ()

    @property
    def version(self) -> int:
        """The version number."""
        return self[0]

    @property
    def schema_id(self) -> int:
        """The global id of the schema the version holds."""
        return self[1]

    @property
    def schema(self) -> str:
        """The schema text (Java Avro's form)."""
        return self[2]

    @property
    def deleted(self) -> bool:
        """Whether the version is soft-deleted."""
        return self[3]


class RegistryStore:
    """Typed reads and transactional writes over the registry's SQLite file."""

    def __init__(self, path: str | Path) -> None:
        """Open the database at `path`, creating the file (not its directory) if needed.

        ``:memory:`` keeps it in memory (tests).

        Raises:
            RegistryStoreError: the directory does not exist, or the file cannot be opened,
                created or written, or is not a SQLite database.
        """
        self._lock = threading.RLock()
        self._path = str(path)
        self._db = open_database(self._path, busy_seconds=BUSY_SECONDS)
        # Reads outside a transaction use a connection of their own: in WAL mode they never
        # wait, even while this process's write connection waits (in a worker thread) for
        # another worker's write lock. A memory database is one connection's, so it shares.
        self._reader = self._db if self._path == ":memory:" else \
            connect(self._path, busy_seconds=BUSY_SECONDS)
        self._reader_lock = threading.Lock() if self._reader is not self._db else self._lock
        self._writing = threading.local()

    def close(self) -> None:
        """Close the database."""
        with self._lock, self._reader_lock:
            if self._reader is not self._db:
                self._reader.close()
            self._db.close()

    def _rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        """The rows of a read: on the write connection inside this thread's transaction (it
        sees its own writes), else on the reader."""
        if getattr(self._writing, "active", False):
            with self._lock:
                return self._db.execute(sql, params).fetchall()
        with self._reader_lock:
            return self._reader.execute(sql, params).fetchall()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """Run the block as one write transaction (rolled back on any exception)."""
        with self._lock:
            try:  # takes the write lock now, waiting up to BUSY_SECONDS for another process
                self._db.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                if exc.sqlite_errorcode & 0xFF != sqlite3.SQLITE_BUSY:
                    raise
                raise RegistryUnavailableError(
                    f"the registry file {self._path} stayed locked by another writer for "
                    f"{BUSY_SECONDS:g} s", retry_after=1, path=self._path) from exc
            self._writing.active = True
            try:
                yield
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            finally:
                self._writing.active = False
            self._db.execute("COMMIT")

    def schema_id_for(self, canonical: str) -> int | None:
        """The id of the schema with this identity, None if none has it."""
        rows = self._rows("SELECT id FROM schemas WHERE canonical = ?", (canonical,))
        return None if not rows else int(rows[0][0])

    def insert_schema(self, canonical: str, schema: str, *, schema_id: int | None = None
                      ) -> int:
        """Store a new schema; its id is the next one (AUTOINCREMENT: never one used before,
        even if deleted since) or `schema_id` (IMPORT mode)."""
        with self._lock:
            cur = self._db.execute("INSERT INTO schemas (id, canonical, schema) VALUES (?, ?, ?)",
                                   (schema_id, canonical, schema))
        assert cur.lastrowid is not None
        return int(cur.lastrowid)

    def remove_unused_schemas(self, ids: Iterable[int]) -> None:
        """Hard-delete those of `ids` no version holds any more (they then answer 40403; the
        AUTOINCREMENT counter never hands them out again)."""
        with self._lock:
            self._db.executemany(
                "DELETE FROM schemas WHERE id = ? AND NOT EXISTS "
                "(SELECT 1 FROM versions WHERE schema_id = ?)", [(i, i) for i in set(ids)])

    def max_id(self) -> int:
        """The highest schema id ever handed out, deleted ones included (0 before the first):
        SQLite's AUTOINCREMENT high-water mark, which imported ids raise too."""
        rows = self._rows("SELECT seq FROM sqlite_sequence WHERE name = 'schemas'")
        return 0 if not rows else int(rows[0][0])

    def schema_by_id(self, schema_id: int) -> str | None:
        """The schema text of an id, None if no schema has it."""
        rows = self._rows("SELECT schema FROM schemas WHERE id = ?", (schema_id,))
        return None if not rows else str(rows[0][0])

    def versions(self, subject: str) -> list[VersionRow]:
        """Every stored version of `subject` (soft-deleted included), oldest first."""
        rows = self._rows(
            "SELECT v.version, v.schema_id, s.schema, v.deleted FROM versions v "
            "JOIN schemas s ON s.id = v.schema_id WHERE v.subject = ? ORDER BY v.version",
            (subject,))
        return [VersionRow((int(r[0]), int(r[1]), str(r[2]), bool(r[3]))) for r in rows]

    def insert_version(self, subject: str, version: int, *, schema_id: int) -> None:
        """Add a live version of `subject` holding `schema_id`."""
        with self._lock:
            self._db.execute(
                "INSERT INTO versions (subject, version, schema_id) VALUES (?, ?, ?)",
                (subject, version, schema_id))

    def mark_deleted(self, subject: str, version: int | None = None) -> None:
        """Soft-delete one version, or every version of the subject when `version` is None."""
        with self._lock:
            if version is None:
                self._db.execute("UPDATE versions SET deleted = 1 WHERE subject = ?", (subject,))
            else:
                self._db.execute("UPDATE versions SET deleted = 1 WHERE subject = ? AND "
                                 "version = ?", (subject, version))

    def remove(self, subject: str, version: int | None = None) -> None:
        """Hard-delete one version, or every version of the subject when `version` is None."""
        with self._lock:
            if version is None:
                self._db.execute("DELETE FROM versions WHERE subject = ?", (subject,))
            else:
                self._db.execute("DELETE FROM versions WHERE subject = ? AND version = ?",
                                 (subject, version))

    def subjects(self, *, deleted: bool) -> list[str]:
        """Subjects with a live version (or any stored version when `deleted`), sorted."""
        where = "" if deleted else "WHERE deleted = 0"
        rows = self._rows(f"SELECT DISTINCT subject FROM versions {where} ORDER BY subject")
        return [str(r[0]) for r in rows]

    def uses_of(self, schema_id: int, *, deleted: bool) -> list[tuple[str, int]]:
        """(subject, version) pairs that hold a schema id."""
        where = "" if deleted else "AND deleted = 0"
        rows = self._rows(f"SELECT subject, version FROM versions WHERE schema_id = ? {where} "
                          "ORDER BY subject, version", (schema_id,))
        return [(str(r[0]), int(r[1])) for r in rows]

    def setting(self, table: str, subject: str) -> str | None:
        """The config level or mode stored for `subject` (GLOBAL for the global one)."""
        column = "level" if table == "config" else "mode"
        rows = self._rows(f"SELECT {column} FROM {table} WHERE subject = ?", (subject,))
        return None if not rows else str(rows[0][0])

    def put_setting(self, table: str, subject: str, *, value: str | None) -> None:
        """Store (or with None remove) the config level or mode of `subject`."""
        column = "level" if table == "config" else "mode"
        with self._lock:
            if value is None:
                self._db.execute(f"DELETE FROM {table} WHERE subject = ?", (subject,))
            else:
                self._db.execute(
                    f"INSERT INTO {table} (subject, {column}) VALUES (?, ?) "
                    f"ON CONFLICT(subject) DO UPDATE SET {column} = excluded.{column}",
                    (subject, value))


class StoreChanges:
    """Whether anyone committed to the registry file: SQLite's ``PRAGMA data_version``,
    read on a connection of its own, so every commit counts, this process's and other
    workers' alike."""

    def __init__(self, path: str | Path) -> None:
        """Watch the (existing) registry file at `path`."""
        self._lock = threading.Lock()
        self._db = connect(str(path), busy_seconds=BUSY_SECONDS)

    def version(self) -> int:
        """A number that differs from the previous answer once a commit happened since."""
        with self._lock:
            return int(self._db.execute("PRAGMA data_version").fetchone()[0])

    def close(self) -> None:
        """Close the watching connection."""
        with self._lock:
            self._db.close()
