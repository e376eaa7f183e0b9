"""The registry store opens only a usable file: the path named, a missing directory not made."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from service.core.errors import Fix
from service.registry.embedded.store import RegistryStore, RegistryStoreError


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
