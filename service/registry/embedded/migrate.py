"""Upgrades a registry file written by an older flatavro to the current format, at open.

The format is SQLite's ``PRAGMA user_version``. Version 0 files kept each schema as sent, keyed
by a sorted-keys identity; version 1 keeps Java Avro's ``Schema.toString()`` text, as Confluent
stores and returns it, keyed by that form's identity. Ids, versions and deletes are untouched.
"""

from __future__ import annotations

import logging
import sqlite3

from service.registry.canonical import stored_form
from service.registry.errors import InvalidSchemaError

__all__ = ["FORMAT", "upgrade"]

FORMAT = 1
"""The format this code writes."""

log = logging.getLogger("flatavro.registry")


def upgrade(db: sqlite3.Connection) -> None:
    """Bring the file to `FORMAT`; call inside the write transaction that opens the store (so
    several workers opening one file upgrade it once, and a failure leaves it as it was)."""
    found = int(db.execute("PRAGMA user_version").fetchone()[0])
    if found >= FORMAT:
        return
    _java_texts(db)
    db.execute(f"PRAGMA user_version = {FORMAT}")


def _java_texts(db: sqlite3.Connection) -> None:
    """Rewrite every schema text in Java Avro's form, and its identity to match.

    Two rows an older version kept apart although they are one schema (``"name": "a.B"`` and
    ``"name": "B", "namespace": "a"``) keep both ids; the identity goes to the row already
    keyed by it (else the earlier), the other keeps its old key, so a registration finds one
    id for the schema, as Confluent would. A text the parser now refuses stays as it is (it
    was accepted when stored), logged.
    """
    rows = db.execute("SELECT id, canonical, schema FROM schemas ORDER BY id").fetchall()
    for schema_id, identity, text in rows:
        try:
            form = stored_form(text)
        except InvalidSchemaError as exc:
            log.warning("registry schema id %s kept as stored: %s", schema_id, exc.message)
            continue
        if (form.text, form.identity) == (text, identity):
            continue
        taken = db.execute("SELECT id FROM schemas WHERE canonical = ? AND id != ?",
                           (form.identity, schema_id)).fetchone()
        db.execute("UPDATE schemas SET schema = ?, canonical = ? WHERE id = ?",
                   (form.text, identity if taken else form.identity, schema_id))
