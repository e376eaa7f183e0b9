"""The registry store opens only a usable file: the path named, a missing directory not made."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from service.core.errors import Fix
from service.registry.canonical import canonical_schema
from service.registry.embedded.registry import EmbeddedRegistry
from service.registry.embedded.store import RegistryStore, RegistryStoreError
from service.registry.errors import SchemaNotFoundError
from tests.support.harness import run


def _unusable(tmp_path: Path, where: str) -> Path:
    afile = tmp_path / "afile"
    afile.write_text("not sqlite", encoding="utf-8")
    return {"missing directory": tmp_path / "typo" / "deeper" / "r.sqlite",
            "under a file": afile / "r.sqlite", "a directory": tmp_path,
            "not a database": afile, "unwritable": Path("/proc/flatavro.sqlite")}[where]


@pytest.mark.parametrize("where", ["missing directory", "under a file", "a directory",
                                   "not a database", "unwritable"])
def test_an_unusable_path_is_refused_naming_it(tmp_path: Path, where: str) -> None:
    path = _unusable(tmp_path, where)
    with pytest.raises(RegistryStoreError) as err:
        RegistryStore(path)
    assert err.value.code == "registry_store_unavailable"
    assert err.value.details == {"path": str(path)}
    assert err.value.fix == (Fix.REGISTRY_PATH,)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]
    assert (tmp_path / "afile").read_text(encoding="utf-8") == "not sqlite"


@pytest.mark.parametrize("where", ["not a database", "unwritable"])
def test_sqlite_failures_are_translated_keeping_the_cause(tmp_path: Path, where: str) -> None:
    with pytest.raises(RegistryStoreError) as err:
        RegistryStore(_unusable(tmp_path, where))
    assert isinstance(err.value.__cause__, sqlite3.Error)


def test_a_relative_path_is_reported_absolute_too(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(RegistryStoreError) as err:
        RegistryStore("typo/r.sqlite")
    assert err.value.details["path"] == str(tmp_path / "typo" / "r.sqlite")
    assert not (tmp_path / "typo").exists()


def test_a_new_file_in_an_existing_directory_is_created_and_reopened(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"
    store = RegistryStore(path)
    with store.transaction():
        schema_id = store.insert_schema("canonical", "schema")
    store.close()
    again = RegistryStore(path)
    assert again.schema_by_id(schema_id) == "schema"
    again.close()


# The tables as the first flatavro release created them (user_version 0): schema texts kept
# as sent, keyed by a sorted-keys identity.
_V0_DDL = """
CREATE TABLE schemas (id INTEGER PRIMARY KEY AUTOINCREMENT, canonical TEXT NOT NULL UNIQUE,
  schema TEXT NOT NULL, schema_type TEXT NOT NULL DEFAULT 'AVRO');
CREATE TABLE versions (subject TEXT NOT NULL, version INTEGER NOT NULL,
  schema_id INTEGER NOT NULL REFERENCES schemas(id), deleted INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (subject, version));
CREATE INDEX versions_by_schema ON versions(schema_id);
CREATE TABLE config (subject TEXT PRIMARY KEY, level TEXT NOT NULL);
CREATE TABLE mode (subject TEXT PRIMARY KEY, mode TEXT NOT NULL);
"""
SENT = '{"name": "R", "type": "record", "fields": [{"name": "a", "type": {"type": "int"}}]}'
JAVA = '{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}'
# one schema an old version kept under two ids (its identity did not resolve namespaces)
SPLIT = ['{"type": "record", "name": "a.B", "fields": []}',
         '{"type": "record", "name": "B", "namespace": "a", "fields": []}']


def _v0_file(path: Path) -> None:
    db = sqlite3.connect(path)
    db.executescript(_V0_DDL)
    texts = [SENT, *SPLIT, "not a schema any more"]
    for schema_id, text in enumerate(texts, start=1):
        identity = text if schema_id == 4 else canonical_schema(text)
        db.execute("INSERT INTO schemas (id, canonical, schema) VALUES (?, ?, ?)",
                   (schema_id, identity, text))
    db.executemany("INSERT INTO versions (subject, version, schema_id, deleted) "
                   "VALUES (?, ?, ?, ?)", [("s", 1, 1, 0), ("t", 1, 2, 0), ("t", 2, 3, 1)])
    db.execute("INSERT INTO schemas (id, canonical, schema) VALUES (9, 'gone', 'gone')")
    db.execute("DELETE FROM schemas WHERE id = 9")  # hard-deleted: 9 is never handed out
    db.commit()
    db.close()


def test_a_file_an_older_version_wrote_is_upgraded_keeping_ids(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    _v0_file(path)
    registry = EmbeddedRegistry(path)
    assert run(registry.schema_by_id(1)) == JAVA  # Java Avro's form, as Confluent returns it
    assert run(registry.get_version("s")).schema == JAVA
    again = run(registry.register("s", '{"type":"record","name":"R","fields":['
                                       '{"type":"int","name":"a"}]}'))
    assert (again.id, again.version, again.schema) == (1, 1, JAVA)
    assert run(registry.lookup("s", SENT)).id == 1
    java_b = '{"type":"record","name":"B","namespace":"a","fields":[]}'
    assert (run(registry.schema_by_id(2)), run(registry.schema_by_id(3))) == (java_b, java_b)
    # the id whose old key already was the new identity keeps it: one id for the schema
    assert run(registry.register("u", SPLIT[0])).id == 3
    assert run(registry.schema_by_id(4)) == "not a schema any more"  # kept as it was
    assert run(registry.register("v", '"string"')).id == 10
    registry.close()
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA user_version").fetchone() == (1,)
    db.close()


def test_the_upgrade_runs_once(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    _v0_file(path)
    EmbeddedRegistry(path).close()
    db = sqlite3.connect(path)
    db.execute("UPDATE schemas SET schema = ? WHERE id = 1", (SENT,))  # as if written now
    db.commit()
    db.close()
    registry = EmbeddedRegistry(path)
    assert run(registry.schema_by_id(1)) == SENT
    registry.close()


def test_a_hard_delete_drops_only_the_schemas_it_orphaned(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    _v0_file(path)
    db = sqlite3.connect(path)
    db.execute("INSERT INTO schemas (id, canonical, schema) VALUES (5, 'x', ?)", (JAVA,))
    db.commit()  # an orphan an old version left behind: it keeps resolving
    db.close()
    registry = EmbeddedRegistry(path)
    run(registry.delete_subject("s"))
    run(registry.delete_subject("s", permanent=True))
    with pytest.raises(SchemaNotFoundError):
        run(registry.schema_by_id(1))
    assert run(registry.schema_by_id(5)) == JAVA
    registry.close()


def test_ids_stay_above_every_id_ever_used(tmp_path: Path) -> None:
    store = RegistryStore(tmp_path / "r.sqlite")
    assert store.max_id() == 0
    with store.transaction():
        first = store.insert_schema("a", "a")
        imported = store.insert_schema("b", "b", schema_id=40)
        store.remove_unused_schemas([first, imported])  # no version holds them: both go
    with store.transaction():
        after = store.insert_schema("c", "c")
    assert (first, imported, after, store.max_id()) == (1, 40, 41, 41)
    assert store.schema_by_id(40) is None
    store.close()
