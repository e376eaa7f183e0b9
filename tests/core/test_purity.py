"""service/core stays pure: no web, HTTP-client or Spark imports, no environment reads."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parents[2] / "service" / "core"
FORBIDDEN_IMPORTS = {"fastapi", "starlette", "httpx", "pyspark", "uvicorn", "requests"}
MODULES = sorted(CORE.glob("*.py"))


def test_core_has_modules() -> None:
    assert len(MODULES) >= 10


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_module_is_pure(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    assert ast.get_docstring(tree), f"{path.name} opens without a docstring"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots = {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            roots = {(node.module or "").split(".")[0]}
        else:
            roots = set()
        assert not roots & FORBIDDEN_IMPORTS, f"{path.name}:{node.lineno} imports {roots}"
        if isinstance(node, ast.Attribute) and node.attr in {"environ", "getenv", "environb"}:
            raise AssertionError(f"{path.name}:{node.lineno} reads the environment")
