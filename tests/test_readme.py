"""The README is executable: its ```sh examples run pasted into bash against a fresh
`flatavro serve` (what `make run` starts) on a free port, in README order, and print what the
README shows (whitespace aside). ``FLATAVRO_UPDATE_README=1`` rewrites the shown outputs from
a run instead (review the diff). The ```sh kafka examples need a broker and Spark:
tests/spark/test_readme_streaming.py runs them."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.readme_blocks import (
    BROKER_ADDRESS,
    RUN,
    RUN_WITH_KAFKA,
    SERVICE_ADDRESS,
    read_blocks,
    rewrite_output,
    same_output,
    shell_examples,
)
from tests.support.harness import free_port

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
BLOCKS = read_blocks(README.read_text(encoding="utf-8"))
EXAMPLES = shell_examples(BLOCKS)
UPDATE = os.environ.get("FLATAVRO_UPDATE_README") == "1"


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`flatavro serve` as `make run` starts it, on a fresh registry and a free port."""
    port, data = free_port(), tmp_path_factory.mktemp("readme")
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLATAVRO_")}
    env.update(FLATAVRO_PORT=str(port), FLATAVRO_REGISTRY_DB_PATH=str(data / "r.sqlite"),
               FLATAVRO_LOG_LEVEL="WARNING")
    server = subprocess.Popen([str(Path(sys.executable).parent / "flatavro"), "serve"],
                              cwd=data, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    url = f"localhost:{port}"
    try:
        _wait_healthy(f"http://{url}/healthz", server)
        yield url
    finally:
        server.terminate()
        server.wait(10)


def _wait_healthy(url: str, server: subprocess.Popen[bytes]) -> None:
    for _ in range(300):
        if server.poll() is not None:
            raise AssertionError(f"flatavro serve exited with {server.returncode}")
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        subprocess.run(["sleep", "0.1"], check=True)
    raise AssertionError("flatavro serve did not answer /healthz")


def test_readme_has_shell_examples() -> None:
    assert len(EXAMPLES) >= 8
    assert any("curl" in e.script for e in EXAMPLES)
    assert any("flatavro " in e.script for e in EXAMPLES)


@pytest.mark.parametrize("index", range(len(EXAMPLES)),
                         ids=[f"README.md:{e.line}" for e in EXAMPLES])
def test_example_prints_what_the_readme_shows(index: int, service: str) -> None:
    example = EXAMPLES[index]
    script = SERVICE_ADDRESS.sub(service, example.script)
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLATAVRO_")}
    done = subprocess.run(["bash", "-c", script], cwd=ROOT, env=env, capture_output=False,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=120)
    actual = done.stdout.replace(service, "localhost:8080")
    if UPDATE and example.expected is not None:
        rewrite_output(README, RUN, index, actual)
        return
    assert same_output(actual, example.expected), (
        f"README.md:{example.line} printed:\n{actual}\nthe README shows:\n{example.expected}")


def test_console_blocks_name_real_make_targets() -> None:
    targets = set(re.findall(r"^([a-z][a-z-]*):", (ROOT / "Makefile").read_text(), re.M))
    for block in BLOCKS:
        if block.info == "console":
            for target in re.findall(r"^\s*make ([a-z-]+)", block.text, re.M):
                assert target in targets, f"README.md:{block.line}: no make target {target}"


def test_shell_blocks_use_known_info_strings() -> None:
    """Every shell-looking block is run (sh here, sh kafka by the Spark tests) or explicitly
    not run (console)."""
    for block in BLOCKS:
        assert block.info not in {"bash", "shell", "zsh", ""} or not _looks_like_shell(block), (
            f"README.md:{block.line}: mark the block {RUN} (run by this test), {RUN_WITH_KAFKA} "
            f"(needs a broker: run by tests/spark/test_readme_streaming.py) or console")


def test_blocks_that_need_a_broker_are_left_to_the_spark_tests() -> None:
    """A block that reaches Kafka or Spark is ```sh kafka, so this test (service only) never
    runs it and tests/spark/test_readme_streaming.py does."""
    for example in EXAMPLES:
        assert BROKER_ADDRESS not in example.script and "spark_jobs" not in example.script, (
            f"README.md:{example.line}: a block that needs a broker or Spark is "
            f"```{RUN_WITH_KAFKA}")
    assert shell_examples(BLOCKS, RUN_WITH_KAFKA), "the README shows no streaming example"


def test_links_stay_inside_the_repository() -> None:
    text = README.read_text(encoding="utf-8")
    assert "../shared" not in text and "/work/" not in text
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        if not re.match(r"[a-z]+:", target):
            assert (ROOT / target).exists(), f"README links to missing {target}"


def _looks_like_shell(block: object) -> bool:
    text = getattr(block, "text", "")
    return bool(re.search(r"^\s*(curl|make|\.venv/|flatavro|python)", text, re.M))


def test_shown_table_schema_is_the_example_file() -> None:
    shown = [b for b in BLOCKS if b.info == "json" and '"tableID"' in b.text]
    assert len(shown) == 1
    example = ROOT / "examples" / "payments.table.json"
    assert json.loads(shown[0].text) == json.loads(example.read_text(encoding="utf-8"))
