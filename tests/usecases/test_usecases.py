"""The use-cases without HTTP: a `Runtime` on an embedded registry (no socket), the plain
results the routers turn into models, and the hooks the service counts with."""

from __future__ import annotations

from pathlib import Path

import pytest

from service.core.options import SchemaOptions
from service.registry.compatibility import CompatibilityLevel
from service.registry.errors import SubjectNotSoftDeletedError
from service.registry.instrumented import InstrumentedRegistry
from service.registry.model import RegistryMode
from service.usecases import levels_and_modes
from service.usecases.runtime import Runtime
from service.usecases.settings import RuntimeSettings
from service.usecases.subject_overview import SubjectFacts, VersionRef, all_subject_facts
from service.usecases.tables import (
    TableSource,
    check_table_schemas,
    generate_table_schemas,
    register_table_schemas,
)
from service.usecases.topic_deletion import SubjectDeletion, delete_topic
from service.usecases.version_diff import diff_versions
from tests.support.harness import run

DDL = "CREATE TABLE shop.orders (id BIGINT PRIMARY KEY, note TEXT)"
WIDER = "CREATE TABLE shop.orders (id BIGINT PRIMARY KEY, note TEXT, qty INT NOT NULL)"
RULE = "tidb_{schema}_{table}"


@pytest.fixture
def settings(tmp_path: Path) -> RuntimeSettings:
    return RuntimeSettings(registry_db_path=str(tmp_path / "registry.sqlite"))


def test_a_table_source_gives_the_schemas_of_its_ddl() -> None:
    pair = run(generate_table_schemas(TableSource(ddl=DDL)))
    assert pair.key_columns == ("id",)
    assert [f["name"] for f in pair.value_schema["fields"]] == ["id", "note"]


def test_registration_check_diff_and_delete_give_plain_results(
        settings: RuntimeSettings) -> None:
    async def scenario() -> None:
        runtime = Runtime.start(settings)
        try:
            done = await register_table_schemas(runtime, TableSource(ddl=DDL), topic_rule=RULE)
            assert (done.topic, done.value.version) == ("tidb_shop_orders", 1)
            check = await check_table_schemas(runtime, TableSource(ddl=WIDER), topic_rule=RULE)
            assert not check.compatible
            await levels_and_modes.set_compatibility(
                runtime.registry, CompatibilityLevel.NONE, subject="tidb_shop_orders-value")
            await register_table_schemas(runtime, TableSource(ddl=WIDER), topic_rule=RULE)
            diff = await diff_versions(runtime.registry, "tidb_shop_orders-value",
                                       old_spec="1", new_spec="2")
            assert [(c.kind.value, c.column) for c in diff.changes] == [("added", "qty")]
            assert (diff.old, diff.level, diff.compatible) == (
                VersionRef(version=1, id=done.value.id), CompatibilityLevel.NONE, True)
            facts = await all_subject_facts(runtime.registry, deleted=False)
            assert [f.subject for f in facts] == ["tidb_shop_orders-key",
                                                  "tidb_shop_orders-value"]
            assert isinstance(facts[1], SubjectFacts) and facts[1].versions == [1, 2]
            assert facts[1].compatibility.configured is CompatibilityLevel.NONE
            with pytest.raises(SubjectNotSoftDeletedError):
                await delete_topic(runtime, "tidb_shop_orders", permanent=True)
            deleted = await delete_topic(runtime, "tidb_shop_orders", permanent=False)
            assert deleted.subjects == [
                SubjectDeletion(subject="tidb_shop_orders-key", versions=[1], permanent=False),
                SubjectDeletion(subject="tidb_shop_orders-value", versions=[1, 2],
                                permanent=False)]
        finally:
            await runtime.stop()

    run(scenario())


def test_a_removed_level_or_mode_is_named_with_the_one_now_in_effect(
        settings: RuntimeSettings) -> None:
    async def scenario() -> None:
        runtime = Runtime.start(settings)
        try:
            await register_table_schemas(runtime, TableSource(ddl=DDL), topic_rule=RULE)
            subject = "tidb_shop_orders-value"
            await levels_and_modes.set_mode(runtime.registry, RegistryMode.READONLY,
                                            subject=subject)
            removed = await levels_and_modes.remove_mode(runtime.registry, subject)
            assert (removed.removed, removed.configured, removed.effective) == (
                RegistryMode.READONLY, None, RegistryMode.READWRITE)
            level = await levels_and_modes.compatibility_setting(runtime.registry)
            assert (level.subject, level.configured, level.effective) == (
                None, None, CompatibilityLevel.BACKWARD)
        finally:
            await runtime.stop()

    run(scenario())


def test_the_runtime_counts_only_through_the_hooks_it_is_given(
        settings: RuntimeSettings) -> None:
    calls: list[str] = []

    async def scenario() -> None:
        plain = Runtime.start(settings)
        counted = Runtime.start(settings, on_registry_call=calls.append)
        try:
            assert not isinstance(plain.registry, InstrumentedRegistry)
            await counted.register_table(TableSource(ddl=DDL).to_table(), SchemaOptions(),
                                         topic_rule=RULE)
            assert "register" in calls
        finally:
            await plain.stop()
            await counted.stop()

    run(scenario())
