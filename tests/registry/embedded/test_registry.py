"""The embedded registry in-process: identity, ids, versions, deletes, config, mode."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from service.registry.compatibility import CompatibilityLevel
from service.registry.embedded.registry import EmbeddedRegistry
from service.registry.errors import (
    IncompatibleSchemaError,
    InvalidSchemaError,
    InvalidSubjectError,
    InvalidVersionError,
    OperationNotPermittedError,
    ReadOnlyModeError,
    SchemaNotFoundError,
    SubjectConfigNotFoundError,
    SubjectNotFoundError,
    SubjectNotSoftDeletedError,
    SubjectSoftDeletedError,
    VersionNotFoundError,
    VersionNotSoftDeletedError,
    VersionSoftDeletedError,
)
from service.registry.model import RegistryMode
from tests.support.harness import run


def rec(*fields: dict[str, Any], name: str = "R") -> str:
    return json.dumps({"type": "record", "name": name, "fields": list(fields)})


A = rec({"name": "a", "type": "int"})
A_B = rec({"name": "a", "type": "int"}, {"name": "b", "type": "string", "default": ""})
A_C = rec({"name": "a", "type": "int"}, {"name": "c", "type": "long", "default": 0})
A_REQ = rec({"name": "a", "type": "int"}, {"name": "z", "type": "string"})


@pytest.fixture
def reg(tmp_path: Path) -> Iterator[EmbeddedRegistry]:
    registry = EmbeddedRegistry(tmp_path / "registry.sqlite")
    yield registry
    registry.close()


def test_ids_start_at_one_and_reregistration_is_idempotent(reg: EmbeddedRegistry) -> None:
    first = run(reg.register("s-value", A))
    assert (first.id, first.version) == (1, 1)
    again = run(reg.register("s-value", json.dumps(json.loads(A), indent=4)))  # whitespace
    assert (again.id, again.version) == (1, 1)
    assert run(reg.versions("s-value")) == [1]


def test_same_schema_under_another_subject_reuses_the_id(reg: EmbeddedRegistry) -> None:
    run(reg.register("s-value", A))
    other = run(reg.register("t-value", '{"fields":[{"type":{"type":"int"},"name":"a"}],'
                                        '"type":"record","name":"R"}'))
    assert (other.id, other.version) == (1, 1)
    assert run(reg.uses_of(1)) == [("s-value", 1), ("t-value", 1)]


def test_doc_and_custom_properties_make_a_new_schema(reg: EmbeddedRegistry) -> None:
    run(reg.register("s-value", A))
    with_param = rec({"name": "a", "type": {"type": "int", "connect.parameters": {"x": "1"}}})
    assert run(reg.register("s-value", with_param)).id == 2


def test_incompatible_registration_is_refused_with_reasons(reg: EmbeddedRegistry) -> None:
    run(reg.register("s-value", A))
    with pytest.raises(IncompatibleSchemaError) as err:
        run(reg.register("s-value", A_REQ))
    assert err.value.registry_code == 40901  # the newest Confluent Platform's code
    [reason] = err.value.details["incompatibilities"]
    assert reason["type"] == "READER_FIELD_MISSING_DEFAULT_VALUE"
    assert run(reg.versions("s-value")) == [1]  # nothing half-registered


def test_versions_after_soft_and_hard_deletes(reg: EmbeddedRegistry) -> None:
    run(reg.register("s", A))
    run(reg.register("s", A_B))
    assert run(reg.delete_version("s", 2)) == 2
    assert run(reg.versions("s")) == [1]
    assert run(reg.versions("s", deleted=True)) == [1, 2]
    assert run(reg.get_version("s", "latest")).version == 1
    # soft-deleted ids still resolve
    assert json.loads(run(reg.schema_by_id(2))) == json.loads(A_B)
    # a new version counts soft-deleted ones
    assert run(reg.register("s", A_C)).version == 3
    with pytest.raises(VersionSoftDeletedError):
        run(reg.delete_version("s", 2))
    with pytest.raises(VersionNotSoftDeletedError):
        run(reg.delete_version("s", 3, permanent=True))
    assert run(reg.delete_version("s", 2, permanent=True)) == 2
    assert run(reg.versions("s", deleted=True)) == [1, 3]
    with pytest.raises(VersionNotFoundError):
        run(reg.get_version("s", 2, deleted=True))


def test_subject_delete_rules(reg: EmbeddedRegistry) -> None:
    run(reg.register("s", A))
    run(reg.register("s", A_B))
    with pytest.raises(SubjectNotSoftDeletedError):
        run(reg.delete_subject("s", permanent=True))
    assert run(reg.delete_subject("s")) == [1, 2]
    assert run(reg.subjects()) == []
    assert run(reg.subjects(deleted=True)) == ["s"]
    with pytest.raises(SubjectSoftDeletedError):
        run(reg.delete_subject("s"))
    with pytest.raises(SubjectNotFoundError):
        run(reg.get_version("s", 1))
    assert run(reg.delete_subject("s", permanent=True)) == [1, 2]
    with pytest.raises(SubjectNotFoundError):
        run(reg.delete_subject("s"))
    # hard-deleted ids are gone for good (40403) and never handed out again, not even to
    # the same schema (Confluent)
    for gone in (1, 2):
        with pytest.raises(SchemaNotFoundError):
            run(reg.schema_by_id(gone))
    assert run(reg.register("s", A_C)).id == 3
    assert run(reg.register("s", A)).id == 4


def test_lookup(reg: EmbeddedRegistry) -> None:
    run(reg.register("s", A))
    found = run(reg.lookup("s", " " + A))
    assert (found.id, found.version) == (1, 1)
    with pytest.raises(SchemaNotFoundError):
        run(reg.lookup("s", A_B))
    with pytest.raises(SubjectNotFoundError):
        run(reg.lookup("nope", A))


def test_config_precedence_and_transitive_levels(reg: EmbeddedRegistry) -> None:
    assert run(reg.get_compatibility()) is CompatibilityLevel.BACKWARD
    with pytest.raises(SubjectConfigNotFoundError):
        run(reg.get_compatibility("s"))
    assert run(reg.get_compatibility("s", default_to_global=True)) is CompatibilityLevel.BACKWARD
    run(reg.set_compatibility(CompatibilityLevel.NONE))
    run(reg.register("s", A))
    run(reg.register("s", A_REQ))  # NONE globally: anything goes
    run(reg.set_compatibility(CompatibilityLevel.BACKWARD_TRANSITIVE, "s"))
    assert run(reg.get_compatibility("s")) is CompatibilityLevel.BACKWARD_TRANSITIVE
    # transitive: v2 (A_REQ itself) is fine, v1 lacks `z` without a default
    verdict = run(reg.check_compatibility("s", A_REQ))
    assert [i.version for i in verdict.incompatibilities] == [1]
    run(reg.set_compatibility(CompatibilityLevel.BACKWARD, "s"))
    assert run(reg.check_compatibility("s", A_REQ)).compatible  # only the newest counts
    run(reg.set_compatibility(CompatibilityLevel.BACKWARD_TRANSITIVE, "s"))
    assert run(reg.delete_compatibility("s")) is CompatibilityLevel.BACKWARD_TRANSITIVE
    assert run(reg.get_compatibility("s", default_to_global=True)) is CompatibilityLevel.NONE


def test_check_against_one_version_and_unknown_subjects(reg: EmbeddedRegistry) -> None:
    assert run(reg.check_compatibility("nobody", A_REQ)).compatible
    assert run(reg.check_compatibility("nobody", A_REQ, version="latest")).compatible
    run(reg.register("s", A))
    assert not run(reg.check_compatibility("s", A_REQ, version=1)).compatible
    with pytest.raises(VersionNotFoundError):
        run(reg.check_compatibility("s", A_REQ, version=7))


def test_readonly_mode_refuses_writes(reg: EmbeddedRegistry) -> None:
    run(reg.set_mode(RegistryMode.READONLY))
    with pytest.raises(ReadOnlyModeError) as err:
        run(reg.register("s", A))
    assert err.value.registry_code == 42205
    run(reg.set_mode(RegistryMode.READWRITE, "s"))
    assert run(reg.register("s", A)).id == 1


@pytest.mark.parametrize("spec", ["0", "abc", "2147483648", "-2", "1.5"])
def test_bad_version_specs(reg: EmbeddedRegistry, spec: str) -> None:
    run(reg.register("s", A))
    with pytest.raises(InvalidVersionError) as err:
        run(reg.get_version("s", spec))
    assert err.value.registry_code == 42202


def test_bad_schemas_and_subjects(reg: EmbeddedRegistry) -> None:
    with pytest.raises(InvalidSchemaError):
        run(reg.register("s", '{"type": "record", "name": "R"}'))
    with pytest.raises(InvalidSubjectError) as err:
        run(reg.register("bad\x01subject", A))
    assert err.value.registry_code == 42208


def test_state_survives_reopening(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"
    first = EmbeddedRegistry(path)
    run(first.register("s", A))
    first.close()
    second = EmbeddedRegistry(path)
    assert run(second.get_version("s")).id == 1
    assert run(second.register("t", A_B)).id == 2
    second.close()


def test_import_mode_keeps_given_ids_and_refuses_conflicts(reg: EmbeddedRegistry) -> None:
    with pytest.raises(OperationNotPermittedError) as err:
        run(reg.register("s", A, schema_id=7))
    assert (err.value.registry_code, err.value.details["field"]) == (42205, "id")
    run(reg.set_mode(RegistryMode.IMPORT))
    with pytest.raises(OperationNotPermittedError):
        run(reg.register("s", A))  # IMPORT takes explicit ids only
    assert (run(reg.register("s", A, schema_id=7, version=3)).id,
            run(reg.versions("s"))) == (7, [3])
    for schema, schema_id, version in [(A_B, 7, 4), (A, 8, 5), (A_B, 9, 3)]:
        with pytest.raises(OperationNotPermittedError):  # id taken / schema has an id / version
            run(reg.register("s", schema, schema_id=schema_id, version=version))
    run(reg.set_mode(RegistryMode.READWRITE))
    assert run(reg.register("s", A_B)).id == 8  # past the imported id


def test_explicit_versions_and_references_are_checked(reg: EmbeddedRegistry) -> None:
    with pytest.raises(InvalidSchemaError) as err:
        run(reg.register("s", A, version=2))
    assert err.value.details["field"] == "version"
    run(reg.register("s", A, version=1))
    for ref in ({"name": "x", "subject": "nope", "version": 1},
                {"name": "x", "subject": "s", "version": 1}):
        with pytest.raises(InvalidSchemaError) as err:
            run(reg.register("t", A, references=[ref]))
        assert err.value.details["field"] == "references[0]"


def test_listings_by_prefix_and_deleted_only(reg: EmbeddedRegistry) -> None:
    run(reg.register("app-value", A))
    run(reg.register("app-value", A_B))
    run(reg.register("app-key", A))
    run(reg.register("zeta", A_C))
    run(reg.delete_version("app-value", 1))
    run(reg.delete_subject("zeta"))
    assert run(reg.subjects(prefix="app")) == ["app-key", "app-value"]
    assert run(reg.subjects(deleted_only=True)) == ["zeta"]
    assert run(reg.versions("app-value", deleted_only=True)) == [1]
    assert run(reg.versions("app-key", deleted_only=True)) == []
    assert [(s.subject, s.version) for s in run(reg.schemas(latest_only=True))] == [
        ("app-key", 1), ("app-value", 2)]
    assert [(s.subject, s.version) for s in run(reg.schemas(prefix="z", deleted=True))] == [
        ("zeta", 1)]
    assert run(reg.referenced_by("app-value", "latest")) == []
    with pytest.raises(VersionNotFoundError):
        run(reg.referenced_by("app-value", 1))


def test_hard_deleting_a_subject_forgets_its_level_and_mode(reg: EmbeddedRegistry) -> None:
    run(reg.register("s", A))
    run(reg.set_compatibility(CompatibilityLevel.FULL, "s"))
    run(reg.set_mode(RegistryMode.READWRITE, "s"))
    run(reg.delete_subject("s"))
    assert run(reg.configured_compatibility("s")) is CompatibilityLevel.FULL  # soft: kept
    run(reg.delete_subject("s", permanent=True))
    assert (run(reg.configured_compatibility("s")), run(reg.configured_mode("s"))) == (None, None)


def test_registering_a_deleted_schema_again_drops_its_old_version(reg: EmbeddedRegistry) -> None:
    run(reg.register("s", A))
    run(reg.register("s", A_B))
    run(reg.delete_subject("s"))
    assert run(reg.register("s", A)).version == 3
    assert run(reg.versions("s", deleted=True)) == [2, 3]  # Confluent drops v1 (same id)


def test_import_mode_needs_force_while_live_subjects_exist(reg: EmbeddedRegistry) -> None:
    run(reg.register("s", A))
    with pytest.raises(OperationNotPermittedError):
        run(reg.set_mode(RegistryMode.IMPORT))
    with pytest.raises(OperationNotPermittedError):
        run(reg.set_mode(RegistryMode.IMPORT, "s"))
    run(reg.delete_subject("s"))  # soft-deleted subjects do not count (Confluent)
    assert run(reg.set_mode(RegistryMode.IMPORT, "s")) is RegistryMode.IMPORT
    assert run(reg.set_mode(RegistryMode.IMPORT)) is RegistryMode.IMPORT
