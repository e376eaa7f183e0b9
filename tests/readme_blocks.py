"""The README's fenced blocks: shell examples (```sh, run by the README test) and their outputs.

Conventions the README follows (and `tests/test_readme.py` enforces):
- A ```sh block is pasted into bash against the service `make run` starts, in README order.
- The fenced block right after it, with info string ``json output`` or ``text output``, is
  what the block prints (stdout and stderr, as a terminal shows them). A ```sh block with no
  output block after it must print nothing.
- A ```console block shows commands for other contexts (make targets, Spark with a broker,
  production hosts); those are not run here, and each ``make X`` in them must be a target.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Block", "ShellExample", "read_blocks", "shell_examples", "same_output"]

_FENCE = re.compile(r"^```(.*)$")


@dataclass(frozen=True)
class Block:
    """One fenced block: its info string, text and the README line it starts on."""

    info: str
    text: str
    line: int
    follows_directly: bool  # only blank lines between the previous block and this one


@dataclass(frozen=True)
class ShellExample:
    """A ```sh block and the output the README shows for it (None: prints nothing)."""

    script: str
    expected: str | None
    line: int


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


def shell_examples(blocks: list[Block]) -> list[ShellExample]:
    """The ```sh blocks, each with the output block that directly follows it."""
    examples = []
    for index, block in enumerate(blocks):
        if block.info != "sh":
            continue
        after = blocks[index + 1] if index + 1 < len(blocks) else None
        expected = None
        if after is not None and after.follows_directly and after.info.endswith(" output"):
            expected = after.text
        examples.append(ShellExample(block.text, expected, block.line))
    return examples


def same_output(actual: str, expected: str | None) -> bool:
    """Equal up to whitespace (the README wraps long JSON lines)."""
    return re.sub(r"\s+", "", actual) == re.sub(r"\s+", "", expected or "")
