"""TiDB-only words are blanked in place before parsing: every other character keeps its
position (so parse errors point into the original text), and REAL columns are named."""

from __future__ import annotations

import pytest

from service.core.ddl_tokens import blank_tidb_extras
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
    assert blank_tidb_extras(ddl)[0] == expected


def test_unsigned_is_blanked_after_float_and_double_only() -> None:
    ddl = "CREATE TABLE d.t (f FLOAT(7,3) UNSIGNED, d DOUBLE UNSIGNED, i INT UNSIGNED)"
    blank = " " * len("UNSIGNED")
    expected = f"CREATE TABLE d.t (f FLOAT(7,3) {blank}, d DOUBLE {blank}, i INT UNSIGNED)"
    assert blank_tidb_extras(ddl)[0] == expected


def test_line_breaks_inside_a_blanked_span_are_kept() -> None:
    ddl = "CREATE TABLE d.t (id BIGINT AUTO_RANDOM(\n5)\n PRIMARY KEY)"
    cleaned, _ = blank_tidb_extras(ddl)
    assert cleaned.count("\n") == 2 and cleaned.index("\n") == ddl.index("\n")
    assert "AUTO_RANDOM" not in cleaned


def test_real_columns_are_named() -> None:
    _, real = blank_tidb_extras("CREATE TABLE d.t (a REAL, b FLOAT, `c` REAL UNSIGNED)")
    assert real == frozenset({"a", "c"})


def test_text_that_does_not_tokenize_is_left_to_the_parser() -> None:
    ddl = "CREATE TABLE d.t (a INT COMMENT 'unterminated"
    assert blank_tidb_extras(ddl) == (ddl, frozenset())


def test_too_many_columns_are_refused_on_the_tokens() -> None:
    columns = ", ".join(f"c{i} INT" for i in range(MAX_COLUMNS + 1))
    with pytest.raises(LimitExceededError):
        blank_tidb_extras(f"CREATE TABLE d.t ({columns}, PRIMARY KEY (c0), KEY k (c1))")
