"""The docs' route and error-code tables are checked against the code, so they cannot drift:
every `/v1` route of the app is a row of docs/architecture.md's `/v1` table, and every error
code a `ServiceError` can carry is named in its Errors section."""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

import service
from service.api.app import create_app
from service.api.settings import Settings
from service.core.errors import ServiceError

ROOT = Path(__file__).resolve().parents[1]
ARCHITECTURE = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")


def _section(title: str) -> str:
    start = ARCHITECTURE.index(title)
    following = re.search(r"^#{2,3} ", ARCHITECTURE[start + len(title):], re.M)
    return ARCHITECTURE[start:start + len(title) + (following.start() if following else 0)]


def _subclasses(cls: type) -> set[type]:
    found = set()
    for sub in cls.__subclasses__():
        found |= {sub} | _subclasses(sub)
    return found


def test_every_v1_route_is_in_the_architecture_table(tmp_path: Path) -> None:
    app = create_app(Settings(registry_db_path=str(tmp_path / "r.sqlite")))
    table = _section("### `/v1` (problem+json errors)")
    documented = set(re.findall(r"^\| `([A-Z]+) (/v1/[^`]*)`", table, re.M))
    routes = {(method.upper(), path) for path, operations in app.openapi()["paths"].items()
              if path.startswith("/v1") for method in operations}
    assert routes - documented == set(), "routes missing from docs/architecture.md"
    assert documented - routes == set(), "docs/architecture.md lists routes the app lacks"


def test_every_error_code_is_in_the_errors_section() -> None:
    for module in pkgutil.walk_packages(service.__path__, "service."):
        if not module.name.endswith("_flatread"):
            importlib.import_module(module.name)
    codes = {cls.code for cls in _subclasses(ServiceError)
             if isinstance(cls.__dict__.get("code"), str)}
    errors = _section("## Errors")
    missing = sorted(code for code in codes if f"`{code}`" not in errors)
    assert missing == [], f"error codes missing from docs/architecture.md's Errors: {missing}"


def _expanded(path: str) -> list[str]:
    """`/v1/subjects/{s}/versions[/{v}]?x=1` -> both paths, placeholders as `{}`, no query."""
    path = re.sub(r"\{[^}]*\}", "{}", re.sub(r"\[?\?.*", "", path))
    optional = re.search(r"\[([^\]]*)\]", path)
    if optional is None:
        return [path]
    before, after = path[:optional.start()], path[optional.end():]
    return _expanded(before + after) + _expanded(before + optional.group(1) + after)


def test_every_route_the_docs_name_is_served(tmp_path: Path) -> None:
    """Every `METHOD /v1/...` the README or docs/ mention (e.g. `GET|PUT /v1/config`,
    `DELETE /v1/subjects/{s}[/versions/{v}]`) is a route of the app, by method and path."""
    app = create_app(Settings(registry_db_path=str(tmp_path / "r.sqlite")))
    routes = {(method.upper(), re.sub(r"\{[^}]*\}", "{}", path))
              for path, operations in app.openapi()["paths"].items() for method in operations}
    pattern = re.compile(r"`((?:GET|POST|PUT|DELETE)(?:\\?\|(?:GET|POST|PUT|DELETE))*) "
                         r"(/v1/[^`\s]*)`")
    named = 0
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for methods, path in pattern.findall(doc.read_text(encoding="utf-8")):
            for method in re.split(r"\\?\|", methods):
                for expanded in _expanded(path):
                    named += 1
                    assert (method, expanded) in routes, (
                        f"{doc.relative_to(ROOT)} names `{method} {path}`, which the app "
                        "does not serve")
    assert named > 40
