"""TiDB-only words are blanked in place before parsing: every other character keeps its
position (so parse errors point into the original text), and REAL columns are named."""

from __future__ import annotations

import pytest

from service.core.ddl_tokens import scan_create
from service.core.errors import LimitExceededError
from service.core.limits import MAX_COLUMNS


@pytest.mark.parametrize(("ddl", "tidb_only"), [
    ("CREATE TABLE d.t (id BIGINT AUTO_RANDOM(5, 54) PRIMARY KEY)", ["AUTO_RANDOM(5, 54)"]),
    ("CREATE TABLE d.t (id INT, PRIMARY KEY (id) NONCLUSTERED)", ["NONCLUSTERED"]),
    ("CREATE TABLE d.t (id INT) SHARD_ROW_ID_BITS = 4 PRE_SPLIT_REGIONS=2",
     ["SHARD_ROW_ID_BITS = 4", "PRE_SPLIT_REGIONS=2"]),
])
def test_tidb_words_become_spaces_in_place(ddl: str, tidb_only: list[str]) -> None:
    expected = ddl
    for text in tidb_only:
        expected = expected.replace(text, " " * len(text))
    assert scan_create(ddl).text == expected


def test_unsigned_is_blanked_after_float_and_double_only() -> None:
    ddl = "CREATE TABLE d.t (f FLOAT(7,3) UNSIGNED, d DOUBLE UNSIGNED, i INT UNSIGNED)"
    blank = " " * len("UNSIGNED")
    expected = f"CREATE TABLE d.t (f FLOAT(7,3) {blank}, d DOUBLE {blank}, i INT UNSIGNED)"
    assert scan_create(ddl).text == expected


def test_line_breaks_inside_a_blanked_span_are_kept() -> None:
    ddl = "CREATE TABLE d.t (id BIGINT AUTO_RANDOM(\n5)\n PRIMARY KEY)"
    cleaned = scan_create(ddl).text
    assert cleaned.count("\n") == 2 and cleaned.index("\n") == ddl.index("\n")
    assert "AUTO_RANDOM" not in cleaned


def test_real_columns_are_named() -> None:
    scanned = scan_create("CREATE TABLE d.t (a REAL, b FLOAT, `c` REAL UNSIGNED)")
    assert scanned.real_columns == frozenset({"a", "c"})
    assert scanned.tokens is None  # UNSIGNED after REAL was blanked: tokenized again


def test_a_statement_without_tidb_words_keeps_its_tokens_for_the_parser() -> None:
    ddl = "CREATE TABLE d.t (id INT PRIMARY KEY, v VARCHAR(10))"
    scanned = scan_create(ddl)
    assert scanned.text == ddl and scanned.tokens is not None
    assert [t.text for t in scanned.tokens][:4] == ["CREATE", "TABLE", "d", "."]


def test_text_that_does_not_tokenize_is_left_to_the_parser() -> None:
    ddl = "CREATE TABLE d.t (a INT COMMENT 'unterminated"
    assert scan_create(ddl) == (ddl, frozenset(), None)


def test_too_many_columns_are_refused_on_the_tokens() -> None:
    columns = ", ".join(f"c{i} INT" for i in range(MAX_COLUMNS + 1))
    with pytest.raises(LimitExceededError):
        scan_create(f"CREATE TABLE d.t ({columns}, PRIMARY KEY (c0), KEY k (c1))")
