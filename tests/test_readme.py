"""The README and the docs/ pages of `DOCUMENTS` are executable: their ```sh examples run
pasted into bash against one fresh `flatavro serve` (what `make run` starts) on a free port, in
`DOCUMENTS` order (the README's first), and print what the page shows (whitespace aside).
``FLATAVRO_UPDATE_README=1`` rewrites the shown outputs from a run instead (review the diff).
The ```sh kafka examples need a broker and Spark: tests/spark/test_readme_streaming.py runs
them. The pages' links, console blocks and info strings are checked here too."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tests.readme_blocks import (
    BROKER_ADDRESS,
    DOCUMENTS,
    RUN,
    RUN_WITH_KAFKA,
    SERVICE_ADDRESS,
    Block,
    document_examples,
    read_blocks,
    rewrite_output,
    same_output,
    shell_examples,
)
from tests.support.harness import free_port

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
BLOCKS = {page.relative_to(ROOT).as_posix(): read_blocks(page.read_text(encoding="utf-8"))
          for page in PAGES}
EXAMPLES = document_examples(ROOT)
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
    in_readme = [e for e in EXAMPLES if e.path == "README.md"]
    assert len(in_readme) >= 8
    assert any("curl" in e.script for e in in_readme)
    assert any("flatavro " in e.script for e in in_readme)


def test_every_page_with_shell_examples_is_run() -> None:
    """A docs/ page's ```sh or ```sh kafka block runs only when the page is in `DOCUMENTS`."""
    for name, blocks in BLOCKS.items():
        for block in blocks:
            assert block.info not in {RUN, RUN_WITH_KAFKA} or name in DOCUMENTS, (
                f"{name}:{block.line}: add {name} to DOCUMENTS in tests/readme_blocks.py, or "
                "mark the block console")


@pytest.mark.parametrize("index", range(len(EXAMPLES)), ids=[e.where for e in EXAMPLES])
def test_example_prints_what_the_readme_shows(index: int, service: str) -> None:
    example = EXAMPLES[index]
    script = SERVICE_ADDRESS.sub(service, example.script)
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLATAVRO_")}
    done = subprocess.run(["bash", "-c", script], cwd=ROOT, env=env, capture_output=False,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=120)
    actual = done.stdout.replace(service, "localhost:8080")
    if UPDATE and example.expected is not None:
        rewrite_output(ROOT / example.path, RUN, example.index, actual)
        return
    assert same_output(actual, example.expected), (
        f"{example.where} printed:\n{actual}\nthe page shows:\n{example.expected}")


def test_console_blocks_name_real_make_targets() -> None:
    targets = set(re.findall(r"^([a-z][a-z-]*):", (ROOT / "Makefile").read_text(), re.M))
    for name, blocks in BLOCKS.items():
        for block in blocks:
            if block.info == "console":
                for target in re.findall(r"^\s*make ([a-z-]+)", block.text, re.M):
                    assert target in targets, f"{name}:{block.line}: no make target {target}"


def test_the_readme_names_make_setup() -> None:
    """The README's command table has every target a newcomer types, `make setup` included."""
    table = README.read_text(encoding="utf-8").split("## Commands", 1)[1].split("\n## ", 1)[0]
    for target in ("run", "setup", "check", "test", "demo", "bench"):
        assert f"| `make {target}` |" in table, f"the README's command table lacks make {target}"


def test_shell_blocks_use_known_info_strings() -> None:
    """Every shell-looking block is run (sh here, sh kafka by the Spark tests) or explicitly
    not run (console)."""
    for name, blocks in BLOCKS.items():
        for block in blocks:
            assert block.info not in {"bash", "shell", "zsh", ""} or not _looks_like_shell(
                block), (
                f"{name}:{block.line}: mark the block {RUN} (run by tests/test_readme.py), "
                f"{RUN_WITH_KAFKA} (needs a broker: run by tests/spark/test_readme_streaming.py) "
                "or console")


def test_blocks_that_need_a_broker_are_left_to_the_spark_tests() -> None:
    """A block that reaches Kafka or Spark is ```sh kafka, so this test (service only) never
    runs it and tests/spark/test_readme_streaming.py does."""
    for example in EXAMPLES:
        assert BROKER_ADDRESS not in example.script and "spark_jobs" not in example.script, (
            f"{example.where}: a block that needs a broker or Spark is ```{RUN_WITH_KAFKA}")
    assert shell_examples(BLOCKS["README.md"], RUN_WITH_KAFKA), (
        "the README shows no streaming example")


def test_links_stay_inside_the_repository() -> None:
    """Every relative link of the README and docs/ names a file of the repository and, with a
    `#fragment` into a markdown file, one of its headings."""
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        name = page.relative_to(ROOT)
        assert "../shared" not in text and "/work/" not in text, f"{name} links outside"
        for target, fragment in re.findall(r"\]\(([^)#\s]*)(?:#([^)\s]*))?\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            linked = (page.parent / target) if target else page
            assert linked.exists(), f"{name} links to missing {target}"
            if fragment and linked.suffix == ".md":
                assert fragment in _anchors(linked.read_text(encoding="utf-8")), (
                    f"{name} links to {target or name}#{fragment}, which has no such heading")


def _anchors(markdown: str) -> set[str]:
    """The fragments GitHub gives a page's headings (outside fenced blocks)."""
    anchors, fenced = set(), False
    for line in markdown.splitlines():
        fenced ^= line.startswith("```")
        heading = re.match(r"#{1,6} (.*)", line)
        if heading and not fenced:
            words = re.sub(r"[^\w\- ]", "", heading.group(1).strip().lower())
            anchors.add(words.replace(" ", "-"))
    return anchors


def _looks_like_shell(block: Block) -> bool:
    return bool(re.search(r"^\s*(curl|make|\.venv/|flatavro|python)", block.text, re.M))


def test_the_kafka_examples_reset_empties_the_registry(tmp_path: Path) -> None:
    """The reset the README gives before its Kafka examples (which need an empty registry)
    removes what `make run` registered in its directory: served again there, the registry
    hands out id 1 again."""
    reset = [b for b in BLOCKS["README.md"] if b.info == "console" and "sqlite" in b.text]
    assert len(reset) == 1, "the README shows no (or several) registry resets"
    removal = [line.split("#")[0] for line in reset[0].text.splitlines()
               if line.startswith("rm ") and "sqlite" in line]
    assert len(removal) == 1, reset[0].text
    table = '{"ddl": "CREATE TABLE shop.t (id INT PRIMARY KEY)"}'
    with _served(tmp_path) as url:
        httpx.post(f"{url}/v1/tables/register", content=QUICKSTART_TABLE, timeout=30,
                   headers=JSON).raise_for_status()
        before = httpx.post(f"{url}/v1/tables/register", content=table, headers=JSON,
                            timeout=30).json()
    assert before["key"]["id"] == 3
    subprocess.run(["bash", "-c", removal[0]], cwd=tmp_path, check=True)
    with _served(tmp_path) as url:
        after = httpx.post(f"{url}/v1/tables/register", content=table, headers=JSON,
                           timeout=30).json()
    assert after["key"]["id"] == 1


JSON = {"content-type": "application/json"}
QUICKSTART_TABLE = '{"ddl": "CREATE TABLE shop.orders (id BIGINT PRIMARY KEY, sku TEXT)"}'


@contextmanager
def _served(cwd: Path) -> Iterator[str]:
    """`flatavro serve` as `make run` starts it in `cwd`: the default registry file there."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLATAVRO_")}
    env.update(FLATAVRO_PORT=str(port), FLATAVRO_LOG_LEVEL="WARNING")
    server = subprocess.Popen([str(Path(sys.executable).parent / "flatavro"), "serve"],
                              cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        _wait_healthy(f"http://127.0.0.1:{port}/healthz", server)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(10)


def test_shown_table_schema_is_the_example_file() -> None:
    shown = [b for blocks in BLOCKS.values() for b in blocks
             if b.info == "json" and '"tableID"' in b.text]
    assert len(shown) == 1
    example = ROOT / "examples" / "payments.table.json"
    assert json.loads(shown[0].text) == json.loads(example.read_text(encoding="utf-8"))
