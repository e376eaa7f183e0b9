"""The executable documentation's fenced blocks: shell examples (```sh, run by the README
tests) and their outputs, in the README and the docs/ pages listed in `DOCUMENTS`.

Conventions these files follow (and `tests/test_readme.py` enforces):
- A ```sh block is pasted into bash from the repository root against the service `make run`
  starts (``localhost:8080``). The blocks of every file in `DOCUMENTS` run as one session, in
  that order and in file order: the README's first, then each docs/ page's, which continue
  from the state the earlier ones left (same service, same registry).
- A ```sh kafka block also needs a Kafka broker (``127.0.0.1:9092``) and the Spark extras:
  `tests/test_readme.py` leaves it alone and `tests/spark/test_readme_streaming.py` runs the
  ```sh kafka blocks, in the same order, against a real broker and a fresh service.
- The fenced block right after either, with info string ``json output`` or ``text output``,
  is what the block prints (stdout and stderr, as a terminal shows them). A block with no
  output block after it must print nothing.
- A ```console block shows commands for other contexts (make targets, production hosts);
  those are not run here, and each ``make X`` in them must be a target.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Block", "ShellExample", "read_blocks", "shell_examples", "document_examples",
           "same_output", "rewrite_output", "DOCUMENTS", "RUN", "RUN_WITH_KAFKA",
           "SERVICE_ADDRESS", "BROKER_ADDRESS"]

_FENCE = re.compile(r"^```(.*)$")

RUN = "sh"
"""Info string of the blocks run against the service alone."""

RUN_WITH_KAFKA = "sh kafka"
"""Info string of the blocks that also need a Kafka broker (and Spark)."""

SERVICE_ADDRESS = re.compile(r"(localhost|127\.0\.0\.1):8080")
"""Where the README's blocks reach the service (`make run`'s default address)."""

BROKER_ADDRESS = "127.0.0.1:9092"
"""Where the README's ```sh kafka blocks reach the broker."""

DOCUMENTS = ("README.md", "docs/flat-avro.md", "docs/service.md", "docs/registry.md",
             "docs/streaming.md", "docs/bridge.md")
"""The files whose ```sh and ```sh kafka blocks run, relative to the repository root, in the
order they run: the README's guide first, then the reference pages its examples lead to."""


@dataclass(frozen=True)
class Block:
    """One fenced block: its info string, text and the README line it starts on."""

    info: str
    text: str
    line: int
    follows_directly: bool  # only blank lines between the previous block and this one


@dataclass(frozen=True)
class ShellExample:
    """A ```sh block and the output its file shows for it (None: prints nothing)."""

    script: str
    expected: str | None
    line: int
    path: str = "README.md"  # the file, relative to the repository root
    index: int = 0  # its place among the file's blocks with the same info string

    @property
    def where(self) -> str:
        """`path:line`, as test ids and failures name the block."""
        return f"{self.path}:{self.line}"


def read_blocks(markdown: str) -> list[Block]:
    """Every fenced block of `markdown`, in order."""
    blocks: list[Block] = []
    lines = markdown.splitlines()
    i, gap_has_text = 0, True
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if not match:
            gap_has_text = gap_has_text or bool(lines[i].strip())
            i += 1
            continue
        start, body = i, []
        i += 1
        while i < len(lines) and not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        blocks.append(Block(match.group(1).strip(), "\n".join(body) + "\n", start + 1,
                            not gap_has_text))
        i, gap_has_text = i + 1, False
    return blocks


def shell_examples(blocks: list[Block], info: str = RUN, *,
                   path: str = "README.md") -> list[ShellExample]:
    """The blocks whose info string is `info` (```sh by default), each with the output block
    that directly follows it."""
    examples: list[ShellExample] = []
    for position, block in enumerate(blocks):
        if block.info != info:
            continue
        after = blocks[position + 1] if position + 1 < len(blocks) else None
        expected = None
        if after is not None and after.follows_directly and after.info.endswith(" output"):
            expected = after.text
        examples.append(ShellExample(block.text, expected, block.line, path, len(examples)))
    return examples


def document_examples(root: Path, info: str = RUN) -> list[ShellExample]:
    """The `info` blocks of every file in `DOCUMENTS` under `root`, in the order they run."""
    return [example for name in DOCUMENTS
            for example in shell_examples(read_blocks((root / name).read_text(encoding="utf-8")),
                                          info, path=name)]


def same_output(actual: str, expected: str | None) -> bool:
    """Equal up to whitespace (the README wraps long JSON lines)."""
    return re.sub(r"\s+", "", actual) == re.sub(r"\s+", "", expected or "")


def rewrite_output(path: Path, info: str, index: int, actual: str) -> None:
    """Replace the output block after the `index`-th block with info string `info` in the
    markdown file `path` (read afresh: earlier rewrites may have moved lines)."""
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    i = shell_examples(read_blocks(text), info)[index].line  # first line of the block's body
    while not lines[i].startswith("```"):
        i += 1
    i += 1
    while not lines[i].startswith("```"):
        i += 1
    start = i + 1
    end = start
    while not lines[end].startswith("```"):
        end += 1
    wrapped = [w for line in actual.rstrip("\n").split("\n") for w in _wrap(line)]
    lines[start:end] = wrapped
    path.write_text("\n".join(lines), encoding="utf-8")


def _wrap(line: str, width: int = 96) -> list[str]:
    """Break a long output line between JSON members, else at a space (whitespace does not
    count in the comparison)."""
    out: list[str] = []
    while len(line) > width:
        cut = max(line.rfind(',"', 0, width), line.rfind(",{", 0, width))
        if cut <= 0:
            cut = line.rfind(" ", 1, width)
        if cut <= 0:
            break
        out.append(line[:cut + 1].rstrip())
        line = " " + line[cut + 1:].lstrip()
    return [*out, line]
