"""The stream's table-layout options, parsed (no JVM): `--deletion-vectors on|off` (left out:
the stream's default, on for a new table, an existing one keeps its own) and
`--optimize-every N`, and which batches OPTIMIZE follows."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from spark_jobs.fresh import parse_fresh_args
from spark_jobs.settings.config import (
    DEFAULT_APPLY_LAG_MS,
    DEFAULT_APPLY_ROWS,
    DEFAULT_CHANGELOG_RETENTION_MS,
    DEFAULT_OPTIMIZE_EVERY,
    DEFAULT_TOMBSTONE_RETENTION_MS,
    Deletes,
    parse_stream_args,
)
from spark_jobs.sinks.upkeep import Cadence, Compaction, for_new_table, optimize_due

ARGV = ["--topic", "t", "--bootstrap-servers", "b:9092", "--registry-url", "http://r",
        "--table-path", "p", "--checkpoint", "c"]


def test_deletion_vectors_and_optimize_every() -> None:
    default = parse_stream_args(ARGV)
    assert default.deletion_vectors is None
    assert default.optimize_every == DEFAULT_OPTIMIZE_EVERY == 100
    assert parse_stream_args([*ARGV, "--deletion-vectors", "on"]).deletion_vectors is True
    assert parse_stream_args([*ARGV, "--deletion-vectors", "off"]).deletion_vectors is False
    assert parse_stream_args([*ARGV, "--optimize-every", "0"]).optimize_every == 0
    assert parse_stream_args([*ARGV, "--optimize-every", "7"]).optimize_every == 7


def test_order_deletes_change_feed_and_tombstone_retention() -> None:
    default = parse_stream_args(ARGV)
    assert (default.commit_order, default.deletes, default.change_data_feed) == (
        True, Deletes.HARD, False)
    assert default.tombstone_retention_ms == DEFAULT_TOMBSTONE_RETENTION_MS == 7 * 86_400_000
    chosen = parse_stream_args([*ARGV, "--order", "offset", "--deletes", "soft",
                                "--change-data-feed", "--tombstone-retention", "36h"])
    assert (chosen.commit_order, chosen.deletes, chosen.change_data_feed) == (
        False, Deletes.SOFT, True)
    assert chosen.tombstone_retention_ms == 36 * 3_600_000
    assert [parse_stream_args([*ARGV, "--tombstone-retention", d]).tombstone_retention_ms
            for d in ("250ms", "30s", "90m", "2d")] == [250, 30_000, 5_400_000, 172_800_000]


def test_history_is_asked_for_and_goes_with_commit_order_and_hard_deletes() -> None:
    assert parse_stream_args(ARGV).history is False
    assert parse_stream_args([*ARGV, "--history"]).history is True
    iceberg = parse_stream_args([*[a if a != "p" else "shop.orders" for a in ARGV],
                                 "--history", "--format", "iceberg", "--iceberg-warehouse", "/w"])
    assert iceberg.history and iceberg.table_format.value == "iceberg"


@pytest.mark.parametrize(("extra", "message"), [
    (["--order", "offset"], "--history orders versions by TiDB's commit ts: drop --order offset"),
    (["--deletes", "soft"], "--history keeps deleted rows already (a DELETE ends the key's "
                            "version, _deleted true): drop --deletes soft"),
])
def test_history_refuses_what_it_does_not_go_with(extra: list[str], message: str,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        parse_stream_args([*ARGV, "--history", *extra])
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(("option", "value", "message"), [
    ("--tombstone-retention", "0d", "'0d' is not a duration such as 7d, 36h, 90m or 30s"),
    ("--tombstone-retention", "7 days", "'7 days' is not a duration such as 7d"),
    ("--deletes", "purge", "argument --deletes: invalid choice: 'purge'"),
    ("--order", "arrival", "argument --order: invalid choice: 'arrival'"),
    ("--deletion-vectors", "yes", "argument --deletion-vectors: invalid choice: 'yes'"),
    ("--optimize-every", "-1", "'-1' is not a whole number (0 or more)"),
    ("--optimize-every", "ten", "'ten' is not a whole number (0 or more)")])
def test_bad_values_exit_2_naming_the_option(option: str, value: str, message: str,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        parse_stream_args([*ARGV, option, value])
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


def test_new_tables_get_deletion_vectors_when_keyed_or_asked() -> None:
    assert for_new_table(None, keyed=True) is True
    assert for_new_table(None, keyed=False) is False  # an append-only change log
    assert for_new_table(True, keyed=False) is True
    assert for_new_table(False, keyed=True) is False


def test_optimize_follows_every_nth_batch_and_never_with_0() -> None:
    assert [b for b in range(10) if optimize_due(b, every=3)] == [2, 5, 8]
    assert [b for b in range(3) if optimize_due(b, every=1)] == [0, 1, 2]
    assert not any(optimize_due(b, every=0) for b in range(1000))


def due(cadence: Cadence, batches: range) -> list[int]:
    return [b for b in batches if cadence.due(b)]


def test_each_table_of_a_database_compacts_every_nth_batch_on_batches_of_its_own() -> None:
    # One table: after batches N-1, 2N-1, ..., and the same batches after a restart at batch 5.
    assert due(Cadence.of("shop.items", every=4, many=False), range(12)) == [3, 7, 11]
    assert due(Cadence.of("shop.items", every=4, many=False), range(5, 12)) == [7, 11]
    # Twenty tables in one stream (Delta's and Iceberg's writers alike): each still every 4th
    # batch it is written in, but not all on the same micro-batches.
    every = {name: due(Cadence.of(name, every=4, many=True), range(12))
             for name in (f"shop.t{n:02}" for n in range(20))}
    assert all(len(b) == 3 and b[1] - b[0] == b[2] - b[1] == 4 for b in every.values())
    assert len({b[0] for b in every.values()}) > 1
    # A table written in some batches only counts those.
    sparse = Cadence.of("shop.items", every=2, many=False)
    assert [b for b in (0, 5, 9, 20) if sparse.due(b)] == [5, 20]
    assert due(Cadence.of("shop.items", every=0, many=True), range(100)) == []


def test_a_compaction_says_what_it_did() -> None:
    assert str(Compaction(removed=41, added=1)) == "41 file(s) compacted into 1"
    assert str(Compaction(removed=0, added=0)) == "nothing to compact"


def test_every_option_is_a_row_of_the_docs_options_table(
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse_stream_args(["--help"])
    options = set(re.findall(r"^\s+(--[a-z-]+)", capsys.readouterr().out, re.M)) - {"--help"}
    docs = (Path(__file__).resolve().parents[2] / "docs" / "streaming.md").read_text()
    rows = set(re.findall(r"^\| `(--[a-z-]+)`", docs, re.M))
    for pair in re.findall(r"^\| `(--[a-z-]+)` / `(--[a-z-]+)`", docs, re.M):
        rows |= set(pair)
    assert options == rows


MANY = ["--topic-pattern", "tidb_shop_.*", "--bootstrap-servers", "b:9092", "--registry-url",
        "http://r", "--table-path-template", "/lake/{database}/{table}", "--checkpoint", "c"]


def test_changelog_apply_lag_rows_and_retention() -> None:
    default = parse_stream_args(MANY)
    assert default.changelog is None
    assert (default.apply_lag_ms, default.apply_rows, default.changelog_retention_ms) == (
        DEFAULT_APPLY_LAG_MS, DEFAULT_APPLY_ROWS, DEFAULT_CHANGELOG_RETENTION_MS) == (
        60_000, 100_000, 86_400_000)
    chosen = parse_stream_args([*MANY, "--changelog", "/lake/_changelog", "--apply-lag", "5m",
                                "--apply-rows", "500", "--changelog-retention", "2d"])
    assert (chosen.changelog, chosen.apply_lag_ms, chosen.apply_rows,
            chosen.changelog_retention_ms) == ("/lake/_changelog", 300_000, 500, 172_800_000)
    iceberg = parse_stream_args([*MANY[:-4], "--table-template", "{database}.{table}",
                                 "--checkpoint", "c", "--format", "iceberg",
                                 "--iceberg-warehouse", "/w", "--changelog", "shop.changelog"])
    assert iceberg.changelog == "shop.changelog"


@pytest.mark.parametrize(("argv", "message"), [
    ([*ARGV, "--changelog", "/lake/_changelog"],
     "--changelog lands a whole database: give --topics or --topic-pattern"),
    ([*MANY, "--apply-lag", "5m"], "--apply-lag go(es) with --changelog"),
    ([*MANY, "--apply-rows", "9", "--changelog-retention", "1h"],
     "--apply-rows, --changelog-retention go(es) with --changelog"),
    ([*MANY, "--changelog", "c2", "--apply-lag", "0s"], "'0s' is not a duration"),
    ([*MANY, "--changelog", "c2", "--apply-rows", "0"], "argument --apply-rows"),
    ([*MANY[:-4], "--table-template", "{database}.{table}", "--checkpoint", "c", "--format",
      "iceberg", "--iceberg-warehouse", "/w", "--changelog", "/lake/_changelog"],
     "--changelog /lake/_changelog: with --format iceberg the changelog is a table of the "
     "catalog, named namespace.table"),
])
def test_changelog_refuses_what_it_does_not_go_with(argv: list[str], message: str,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        parse_stream_args(argv)
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


def test_the_fresh_read_reads_delta_paths_or_iceberg_names(
        capsys: pytest.CaptureFixture[str]) -> None:
    delta = parse_fresh_args(["--changelog", "/lake/_changelog", "--table", "/lake/shop/items",
                              "--service-url", "http://s"])
    assert (delta.format, delta.catalog) == ("delta", None)
    iceberg = parse_fresh_args(["--changelog", "shop.changelog", "--table", "shop.items",
                                "--format", "iceberg", "--iceberg-warehouse", "/w"])
    assert iceberg.catalog is not None and iceberg.catalog.warehouse == "/w"
    with pytest.raises(SystemExit) as exited:
        parse_fresh_args(["--changelog", "c", "--table", "t", "--iceberg-warehouse", "/w"])
    assert exited.value.code == 2
    assert "--iceberg-warehouse is for --format iceberg" in capsys.readouterr().err
