"""Opening the embedded registry's SQLite file: checked, in WAL mode, its tables created and
an older format upgraded, in one write transaction.

A file that cannot be used is refused when it opens, naming the path; a missing directory is
never created (a mistyped path must not start an empty registry whose ids clash with the real
one's).
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from service.core.errors import Fix, ServiceError
from service.registry.embedded.migrate import upgrade

__all__ = ["RegistryStoreError", "connect", "open_database"]

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


class RegistryStoreError(ServiceError):
    """The registry's SQLite file cannot be opened, created or written (`path` names it)."""

    code = "registry_store_unavailable"


def connect(path: str, *, busy_seconds: float) -> sqlite3.Connection:
    """A connection to the file, usable from any thread (each use under a lock), waiting up
    to `busy_seconds` for another writer.

    Raises:
        RegistryStoreError: SQLite cannot open the file.
    """
    try:
        return sqlite3.connect(path, check_same_thread=False, isolation_level=None,
                               timeout=busy_seconds)
    except sqlite3.Error as exc:
        raise _unusable(path, str(exc)) from exc


def open_database(path: str, *, busy_seconds: float) -> sqlite3.Connection:
    """Connect, set WAL mode, create the tables and upgrade a file an older flatavro wrote
    (`upgrade`) in one write transaction, which also proves the file writable; nothing is
    created when the directory is missing.

    Raises:
        RegistryStoreError: the directory does not exist, or the file cannot be opened,
            created or written, or is not a SQLite database.
    """
    if path != ":memory:":
        _check_directory(path)
    db = connect(path, busy_seconds=busy_seconds)
    try:
        _set_wal(db, busy_seconds=busy_seconds)
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA foreign_keys=ON")
        db.executescript(f"BEGIN IMMEDIATE;{_DDL}")  # the script leaves it open
        try:
            upgrade(db)
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
    except sqlite3.Error as exc:
        db.close()
        raise _unusable(path, str(exc)) from exc
    return db


def _set_wal(db: sqlite3.Connection, *, busy_seconds: float) -> None:
    """Switch to WAL mode, retrying for up to `busy_seconds`: on a new file opened by several
    workers at once SQLite answers "database is locked" at once here, without waiting."""
    deadline = time.monotonic() + busy_seconds
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode & 0xFF != sqlite3.SQLITE_BUSY or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def _check_directory(path: str) -> None:
    """Refuse a path whose directory is missing or not a directory, or that is a directory."""
    target = Path(path)
    directory = target.absolute().parent
    try:
        if not directory.exists():
            raise _unusable(path, f"directory {directory} does not exist")
        if not directory.is_dir():
            raise _unusable(path, f"{directory} is not a directory")
        if target.is_dir():
            raise _unusable(path, "it is a directory")
    except OSError as exc:  # e.g. a parent directory this user may not search
        raise _unusable(path, exc.strerror or str(exc)) from exc


def _unusable(path: str, why: str) -> RegistryStoreError:
    """The error naming the file (and its absolute path) and why it cannot be used."""
    absolute = str(Path(path).absolute())
    shown = path if absolute == path else f"{path} ({absolute})"
    return RegistryStoreError(f"cannot use the registry file {shown}: {why}", path=absolute,
                              fix=[Fix.REGISTRY_PATH])
