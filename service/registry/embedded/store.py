"""SQLite storage of the embedded registry: schemas by id, subject versions, config and mode.

One connection in WAL mode, guarded by a lock; every write runs in one ``BEGIN IMMEDIATE``
transaction, so a crash never leaves a half-registered schema.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

__all__ = ["RegistryStore", "VersionRow"]

_DDL = """
CREATE TABLE IF NOT EXISTS schemas (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  canonical TEXT NOT NULL UNIQUE,
  schema TEXT NOT NULL,
  schema_type TEXT NOT NULL DEFAULT 'AVRO'
);
CREATE TABLE IF NOT EXISTS versions (
  subject TEXT NOT NULL,
  version INTEGER NOT NULL,
  schema_id INTEGER NOT NULL REFERENCES schemas(id),
  deleted INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (subject, version)
);
CREATE INDEX IF NOT EXISTS versions_by_schema ON versions(schema_id);
CREATE TABLE IF NOT EXISTS config (subject TEXT PRIMARY KEY, level TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS mode (subject TEXT PRIMARY KEY, mode TEXT NOT NULL);
"""
GLOBAL = ""
"""The subject key under which global config and mode are stored."""


class VersionRow(tuple[int, int, str, bool]):
    """(version, schema id, schema text, soft-deleted) of one subject version."""

    __slots__ = ()

    @property
    def version(self) -> int:
        return self[0]

    @property
    def schema_id(self) -> int:
        return self[1]

    @property
    def schema(self) -> str:
        return self[2]

    @property
    def deleted(self) -> bool:
        return self[3]


class RegistryStore:
    """Typed reads and transactional writes over the registry's SQLite file."""

    def __init__(self, path: str | Path) -> None:
        """Open (creating if needed) the database at `path` (``:memory:`` for tests)."""
        if str(path) != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA foreign_keys=ON")
        self._db.executescript(_DDL)

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """Run the block as one write transaction (rolled back on any exception)."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def schema_id_for(self, canonical: str) -> int | None:
        with self._lock:
            row = self._db.execute("SELECT id FROM schemas WHERE canonical = ?",
                                   (canonical,)).fetchone()
        return None if row is None else int(row[0])

    def insert_schema(self, canonical: str, schema: str) -> int:
        with self._lock:
            cur = self._db.execute("INSERT INTO schemas (canonical, schema) VALUES (?, ?)",
                                   (canonical, schema))
        assert cur.lastrowid is not None
        return int(cur.lastrowid)

    def schema_by_id(self, schema_id: int) -> str | None:
        with self._lock:
            row = self._db.execute("SELECT schema FROM schemas WHERE id = ?",
                                   (schema_id,)).fetchone()
        return None if row is None else str(row[0])

    def versions(self, subject: str) -> list[VersionRow]:
        """Every stored version of `subject` (soft-deleted included), oldest first."""
        with self._lock:
            rows = self._db.execute(
                "SELECT v.version, v.schema_id, s.schema, v.deleted FROM versions v "
                "JOIN schemas s ON s.id = v.schema_id WHERE v.subject = ? ORDER BY v.version",
                (subject,),
            ).fetchall()
        return [VersionRow((int(r[0]), int(r[1]), str(r[2]), bool(r[3]))) for r in rows]

    def insert_version(self, subject: str, version: int, schema_id: int) -> None:
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
        with self._lock:
            rows = self._db.execute(
                f"SELECT DISTINCT subject FROM versions {where} ORDER BY subject").fetchall()
        return [str(r[0]) for r in rows]

    def uses_of(self, schema_id: int, *, deleted: bool) -> list[tuple[str, int]]:
        """(subject, version) pairs that hold a schema id."""
        where = "" if deleted else "AND deleted = 0"
        with self._lock:
            rows = self._db.execute(
                f"SELECT subject, version FROM versions WHERE schema_id = ? {where} "
                "ORDER BY subject, version", (schema_id,)).fetchall()
        return [(str(r[0]), int(r[1])) for r in rows]

    def setting(self, table: str, subject: str) -> str | None:
        """The config level or mode stored for `subject` (GLOBAL for the global one)."""
        column = "level" if table == "config" else "mode"
        with self._lock:
            row = self._db.execute(f"SELECT {column} FROM {table} WHERE subject = ?",
                                   (subject,)).fetchone()
        return None if row is None else str(row[0])

    def put_setting(self, table: str, subject: str, value: str | None) -> None:
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
