"""docs/flat-avro.md §2: Avro name sanitization, topic rules, subjects."""

from __future__ import annotations

import pytest

from service.core.errors import InvalidTopicRuleError
from service.core.naming import SubjectKind, parse_topic_rule, sanitize_name, subject_for


@pytest.mark.parametrize(
    ("name", "expected"),
    [("normalColumnName123", "normalColumnName123"), ("1abc", "_1abc"), ("-abc", "_abc"),
     ("中文", "__"), ("a.b", "a_b"), ("columnNameWith中文", "columnNameWith__"), ("_x", "_x"),
     ("A.B", "A_B"), ("😀a", "_a"), ("", ""), ("a b-c", "a_b_c")],
)
def test_sanitize_name(name: str, expected: str) -> None:
    assert sanitize_name(name) == expected


def test_subjects_follow_topic_name_strategy_with_dots_replaced() -> None:
    assert subject_for("tidb.shop.orders", SubjectKind.KEY) == "tidb_shop_orders-key"
    assert subject_for("tidb_shop_orders", SubjectKind.VALUE) == "tidb_shop_orders-value"


@pytest.mark.parametrize(
    ("rule", "schema", "table", "topic"),
    [
        ("tidb_{schema}_{table}", "shop", "orders", "tidb_shop_orders"),
        ("{schema}.{table}", "shop", "orders", "shop.orders"),
        ("{schema}{table}", "库", "表", "__"),
        ("{schema}{table}", "", ".", "_"),
        ("{schema}{table}", ".", ".", "__"),
        ("x-{schema}-{table}", "a b", "c/d", "x-a_b-c_d"),
        ("{schema}_{table}", "s" * 200, "t" * 100, ("s" * 200 + "_" + "t" * 100)[:249]),
        ("literal.topic", "any", "thing", "literal.topic"),
    ],
)
def test_topic_rule_expansion(rule: str, schema: str, table: str, topic: str) -> None:
    assert parse_topic_rule(rule).expand(schema, table) == topic


@pytest.mark.parametrize(
    ("rule", "why"),
    [
        ("tidb_{schema}", "both"),
        ("{table}", "both"),
        ("{table}_{schema}", "before"),
        ("{schema}_{table}_{column}", "unknown placeholder"),
        ("{schema}/{table}", "not allowed"),
        ("{schema}_{table}_{table}", "once"),
        ("", "empty"),
        ("a" * 250, "249"),
        ("..", "legal"),
        ("bad topic", "position 3"),
    ],
)
def test_bad_topic_rules_say_why(rule: str, why: str) -> None:
    with pytest.raises(InvalidTopicRuleError) as err:
        parse_topic_rule(rule)
    assert why in err.value.message
    assert err.value.code == "invalid_topic_rule"


def test_literal_topic_is_marked_as_binding_one_table() -> None:
    assert parse_topic_rule("orders").is_literal
    assert not parse_topic_rule("{schema}_{table}").is_literal
