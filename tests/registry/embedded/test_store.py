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
from tests.registry.conftest import run


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


def test_a_file_written_before_the_java_form_keeps_its_ids(tmp_path: Path) -> None:
    """Rows stored as sent, keyed by the legacy canonical form: the same schema registered
    again (in any spelling) finds its id; hard-deleted ids are never handed out again."""
    sent = '{"name": "R", "type": "record", "fields": [{"name": "a", "type": "int"}]}'
    path = tmp_path / "old.sqlite"
    store = RegistryStore(path)
    with store.transaction():
        old_id = store.insert_schema(canonical_schema(sent), sent)
        store.insert_version("s", 1, old_id)
    store.close()
    registry = EmbeddedRegistry(path)
    again = run(registry.register("s", '{"type":"record","name":"R","fields":['
                                       '{"type":"int","name":"a"}]}'))
    assert (again.id, again.version, again.schema) == (old_id, 1, sent)
    assert run(registry.lookup("s", sent)).id == old_id
    run(registry.delete_subject("s"))
    run(registry.delete_subject("s", permanent=True))
    with pytest.raises(SchemaNotFoundError):
        run(registry.schema_by_id(old_id))
    assert run(registry.register("s", sent)).id == old_id + 1
    registry.close()


def test_ids_stay_above_every_id_ever_used(tmp_path: Path) -> None:
    store = RegistryStore(tmp_path / "r.sqlite")
    with store.transaction():
        first = store.insert_schema("a", "a")
        imported = store.insert_schema("b", "b", schema_id=40)
        store.remove_unused_schemas()  # neither is held by a version: both go
    with store.transaction():
        after = store.insert_schema("c", "c")
    assert (first, imported, after) == (1, 40, 41)
    assert store.schema_by_id(40) is None
    store.close()
