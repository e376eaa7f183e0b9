"""Registering tables under topics: policy, dry runs, all-or-nothing registration."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from service.core.ddl import table_from_ddl
from service.core.errors import InvalidTopicRuleError
from service.core.options import SchemaOptions
from service.registry.client import HttpSchemaRegistry, RegistryClientConfig
from service.registry.embedded.registry import EmbeddedRegistry
from service.registry.errors import IncompatibleSchemaError
from service.registry.tables import TopicBindingError, check_table, register_table
from tests.support.harness import run
from tests.support.registry import ServedRegistry

V1 = table_from_ddl("CREATE TABLE shop.orders (id BIGINT PRIMARY KEY, amount DECIMAL(10,2))")
V2_OK = table_from_ddl("CREATE TABLE shop.orders (id BIGINT PRIMARY KEY, amount DECIMAL(10,2),"
                       " note VARCHAR(20))")
V2_BAD = table_from_ddl("CREATE TABLE shop.orders (id BIGINT PRIMARY KEY, amount DECIMAL(10,2),"
                        " qty INT NOT NULL)")
OTHER = table_from_ddl("CREATE TABLE shop.refunds (id BIGINT PRIMARY KEY)")
OPTIONS = SchemaOptions(enable_tidb_extension=True)
RULE = "tidb_{schema}_{table}"


@pytest.fixture(params=["in-process", "http"])
def registry(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    embedded = EmbeddedRegistry(tmp_path / "r.sqlite")
    if request.param == "in-process":
        yield embedded
    else:
        served = ServedRegistry(embedded).start()
        yield HttpSchemaRegistry(RegistryClientConfig(url=served.url))
        served.stop()
    embedded.close()


def test_register_evolve_and_refuse(registry: Any) -> None:
    async def scenario() -> None:
        first = await register_table(registry, V1, options=OPTIONS, topic_rule=RULE)
        assert first.topic == "tidb_shop_orders"
        assert first.key is not None and first.key.subject == "tidb_shop_orders-key"
        assert (first.key.version, first.value.version) == (1, 1)
        again = await register_table(registry, V1, options=OPTIONS, topic_rule=RULE)
        assert (again.key.id, again.value.id) == (first.key.id, first.value.id)

        check = await check_table(registry, V2_BAD, options=OPTIONS, topic_rule=RULE)
        assert not check.compatible
        value = next(v for v in check.subjects if v.subject.endswith("-value"))
        assert value.compatibility_level.value == "BACKWARD"
        assert [i.type for i in value.incompatibilities] == ["READER_FIELD_MISSING_DEFAULT_VALUE"]
        assert "column `qty`" in value.incompatibilities[0].message
        with pytest.raises(IncompatibleSchemaError) as err:
            await register_table(registry, V2_BAD, options=OPTIONS, topic_rule=RULE)
        assert err.value.details["topic"] == "tidb_shop_orders"
        assert await registry.versions("tidb_shop_orders-value") == [1]

        evolved = await register_table(registry, V2_OK, options=OPTIONS, topic_rule=RULE)
        assert evolved.value.version == 2
        assert evolved.key is not None and evolved.key.version == 1  # key unchanged

    run(scenario())


def test_a_literal_topic_binds_one_table(registry: Any) -> None:
    async def scenario() -> None:
        await register_table(registry, V1, options=OPTIONS, topic_rule="orders")
        with pytest.raises(TopicBindingError) as err:
            await register_table(registry, OTHER, options=OPTIONS, topic_rule="orders")
        assert err.value.details["registered_table"] == "default.shop.orders"
        assert err.value.details["table"] == "default.shop.refunds"
        assert err.value.details["subject"] == "orders-key"
        assert await registry.subjects() == ["orders-key", "orders-value"]

    run(scenario())


def test_bad_rules_are_refused_before_any_registry_call(registry: Any) -> None:
    with pytest.raises(InvalidTopicRuleError):
        run(register_table(registry, V1, options=OPTIONS, topic_rule="{table}_{schema}"))
    assert run(registry.subjects()) == []


class _LaxRegistry:
    """An embedded registry whose own compatibility check passes everything: a registry that
    does not enforce the level it reports."""

    def __init__(self, inner: EmbeddedRegistry) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def check_compatibility(self, subject: str, schema: str, *,
                                  version: Any = None) -> Any:
        from service.registry.compatibility import CompatibilityVerdict
        return CompatibilityVerdict(True, ())


def test_a_registry_that_does_not_enforce_its_level_cannot_take_a_forbidden_change(
        tmp_path: Path) -> None:
    embedded = EmbeddedRegistry(tmp_path / "r.sqlite")
    lax = _LaxRegistry(embedded)

    async def scenario() -> None:
        await register_table(lax, V1, options=OPTIONS, topic_rule=RULE)
        check = await check_table(lax, V2_BAD, options=OPTIONS, topic_rule=RULE)
        assert not check.compatible
        with pytest.raises(IncompatibleSchemaError) as err:
            await register_table(lax, V2_BAD, options=OPTIONS, topic_rule=RULE)
        assert "column `qty`" in err.value.message
        assert await embedded.versions("tidb_shop_orders-value") == [1]
        assert (await register_table(lax, V2_OK, options=OPTIONS, topic_rule=RULE)
                ).value.version == 2

    run(scenario())
    embedded.close()
