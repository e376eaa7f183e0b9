"""The installed ``flatavro schema generate`` command reproduces the golden files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.core.golden.cases import GOLDEN_DIR, expected_path

FLATAVRO = Path(sys.executable).parent / "flatavro"
TABLES = GOLDEN_DIR / "tables"


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    assert FLATAVRO.exists(), f"console script missing at {FLATAVRO}: run `make test`"
    return subprocess.run([str(FLATAVRO), *args], input=stdin, capture_output=True, text=True,
                          timeout=60, check=False)


def expected(table: str, label: str) -> dict[str, object]:
    return {kind + "_schema": json.loads(expected_path(table, label, kind).read_text())
            for kind in ("key", "value")}


@pytest.mark.parametrize(
    ("flags", "label"),
    [
        ([], "ext-off_decimal-precise_bigint-long"),
        (["--enable-tidb-extension", "--decimal-handling-mode", "string",
          "--bigint-unsigned-handling-mode", "string"], "ext-on_decimal-string_bigint-string"),
        (["--namespace", "1-tenant.a"], "ext-off_decimal-precise_bigint-long_ns-1-tenant.a"),
    ],
)
@pytest.mark.parametrize("source", ["--table", "--ddl"])
def test_generate_reproduces_golden_files(flags: list[str], label: str, source: str) -> None:
    path = TABLES / ("all_types.table.json" if source == "--table" else "all_types.sql")
    done = run("schema", "generate", source, str(path), *flags)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    want = expected("all_types", label)
    assert out == want
    assert json.dumps(out) == json.dumps(want)  # key order is TiCDC's too


def test_stdin_and_no_key_table() -> None:
    done = run("schema", "generate", "--ddl", "-", stdin=(TABLES / "no_key.sql").read_text())
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == expected("no_key", "ext-off_decimal-precise_bigint-long")


@pytest.mark.parametrize(
    ("args", "stdin", "needle"),
    [
        (["--ddl", "-"], "CREATE TABLE d.t (a INT, g GEOMETRY)", "[unsupported_type]"),
        (["--ddl", "-"], "CREATE TABLE d.t (a INT", "[invalid_ddl]"),
        (["--ddl", "-"], "CREATE TABLE t (a INT)", "[missing_database]"),
        (["--table", "-"], '{"schema": 1', "[invalid_table]"),
        (["--table", "/nonexistent/t.json"], None, "cannot read"),
    ],
)
def test_bad_input_exits_2_with_one_line(args: list[str], stdin: str | None, needle: str) -> None:
    done = run("schema", "generate", *args, stdin=stdin)
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0]


def test_bad_option_value_exits_2() -> None:
    done = run("schema", "generate", "--ddl", "-", "--decimal-handling-mode", "float", stdin="")
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert "invalid choice" in line and "--decimal-handling-mode" in line


def test_a_ddl_without_a_database_is_refused_with_the_cli_fix() -> None:
    ddl = "CREATE TABLE orders (id INT PRIMARY KEY)"
    done = run("schema", "generate", "--ddl", "-", stdin=ddl)
    assert (done.returncode, done.stdout) == (2, "")
    [line] = done.stderr.splitlines()
    assert line.startswith("flatavro: error [missing_database]: ")
    assert "`orders`" in line and "--schema DB" in line and '"database"' not in line
    fixed = run("schema", "generate", "--ddl", "-", "--schema", "shop", stdin=ddl)
    assert fixed.returncode == 0, fixed.stderr
    assert json.loads(fixed.stdout)["value_schema"]["namespace"] == "default.shop"
