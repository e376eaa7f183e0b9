"""The service's layers, held by its imports: `service.api` (HTTP) sits on `service.usecases`
(the use-cases and the `Runtime` wiring), which the command line and the Kafka bridge share;
nothing below HTTP imports it, so the bridge never loads HTTP settings, API keys or HTTP
metrics; and api/'s top level stays a short list, the rest in subpackages."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SERVICE = ROOT / "service"
HTTP_LIBRARIES = ("fastapi", "starlette", "uvicorn")
API_TOP_LEVEL_LIMIT = 15


def _imports(path: Path) -> set[str]:
    """Every module a file imports (function-level and type-checking imports too), with
    ``from package import module`` counted as ``package.module``."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
    return found


def _offending(paths: list[Path], *, forbidden: tuple[str, ...]) -> dict[str, list[str]]:
    """File -> the imports of `forbidden` packages (or their modules) it makes."""
    out: dict[str, list[str]] = {}
    for path in paths:
        bad = sorted(m for m in _imports(path)
                     if any(m == f or m.startswith(f + ".") for f in forbidden))
        if bad:
            out[str(path.relative_to(ROOT))] = bad
    return out


def _files(*parts: str) -> list[Path]:
    where = SERVICE.joinpath(*parts)
    return sorted(where.rglob("*.py")) if where.is_dir() else [where]


def test_the_http_layer_imports_neither_the_bridge_nor_the_command_line() -> None:
    assert _offending(_files("api"), forbidden=("service.bridge", "service.cli")) == {}


BELOW_HTTP = {"usecases": HTTP_LIBRARIES, "bridge": HTTP_LIBRARIES, "codec": HTTP_LIBRARIES,
              "cdc": HTTP_LIBRARIES, "core": HTTP_LIBRARIES, "kafka_client": HTTP_LIBRARIES,
              "registry": ()}  # the embedded registry serves its own REST API (Starlette)
"""Package -> the HTTP frameworks it may not import (besides `service.api` and the CLI)."""


@pytest.mark.parametrize("part", sorted(BELOW_HTTP))
def test_layers_below_http_import_no_http(part: str) -> None:
    forbidden = ("service.api", "service.cli", *BELOW_HTTP[part])
    assert _offending(_files(part), forbidden=forbidden) == {}


def test_the_usecases_import_neither_the_bridge_nor_the_command_line() -> None:
    assert _offending(_files("usecases"), forbidden=("service.bridge", "service.cli")) == {}


def test_only_the_serve_command_imports_the_http_layer() -> None:
    commands = [p for p in _files("cli") if p.name != "serve_cmd.py"]
    assert _offending(commands, forbidden=("service.api",)) == {}


def test_the_bridge_loads_no_http_module() -> None:
    """Importing the bridge command and every bridge module, as ``flatavro bridge`` runs them,
    loads nothing of ``service.api`` nor an HTTP framework (a fresh interpreter)."""
    script = (
        "import importlib, pkgutil, sys\n"
        "import service.bridge, service.cli.bridge_cmd\n"
        "for m in pkgutil.walk_packages(service.bridge.__path__, 'service.bridge.'):\n"
        "    importlib.import_module(m.name)\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {HTTP_LIBRARIES!r}\n"
        "             or m == 'service.api' or m.startswith('service.api.')))\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                          text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_the_http_layer_keeps_a_short_top_level() -> None:
    modules = sorted(p.name for p in (SERVICE / "api").glob("*.py") if p.name != "__init__.py")
    assert len(modules) <= API_TOP_LEVEL_LIMIT, modules


def test_no_test_module_imports_a_conftest() -> None:
    """What tests share lives in tests/support/; a conftest holds only fixtures and hooks."""
    importers = {str(p.relative_to(ROOT)): bad for p in sorted((ROOT / "tests").rglob("*.py"))
                 if (bad := sorted(m for m in _imports(p) if m.split(".")[-1] == "conftest"))}
    assert importers == {}


SPARK_JOBS = ROOT / "spark_jobs"


def test_the_kafka_client_layer_sits_below_the_bridge_and_the_spark_jobs() -> None:
    """The bridge and the Spark jobs share the Kafka client settings and the TLS probe from
    `service.kafka_client`, which imports neither of them; the Spark jobs import nothing of
    the bridge, the HTTP layer or the command line."""
    assert _offending(_files("kafka_client"),
                      forbidden=("service.bridge", "service.usecases", "spark_jobs")) == {}
    assert _offending(sorted(SPARK_JOBS.rglob("*.py")),
                      forbidden=("service.bridge", "service.api", "service.cli")) == {}


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle of `graph` (module -> the modules it imports), or none."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(module: str, path: list[str]) -> list[str]:
        state[module] = 1
        for target in sorted(graph[module]):
            if state.get(target) == 1:
                return [*path[path.index(target):], target]
            if target not in state and (found := visit(target, [*path, target])):
                return found
        state[module] = 2
        return []

    for module in sorted(graph):
        if module not in state and (found := visit(module, [module])):
            return found
    return []


def test_the_spark_jobs_have_no_import_cycle() -> None:
    """Function-level imports count too: an import put off until a call is still a cycle."""
    paths = sorted(SPARK_JOBS.rglob("*.py"))
    modules = {_module(p): p for p in paths}
    graph = {name: {m for m in _imports(path) if m in modules and m != name}
             for name, path in modules.items()}
    assert _cycle(graph) == []
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


SPARK_LAYERS = {"errors": 0, "settings": 1, "session": 1, "sources": 2, "decoding": 3,
                "sinks": 4, "jobs": 5, "bulk_read": 6, "stream": 6, "fresh": 6}
"""`spark_jobs` by layer, lowest first: a module imports only from its own layer or below.
The three command lines (``python -m spark_jobs.bulk_read``, ``.stream``, ``.fresh``) sit on
top."""


def _spark_layer(module: str) -> int:
    parts = module.split(".")
    return SPARK_LAYERS[parts[1]] if len(parts) > 1 else 0


def test_the_spark_jobs_import_only_downwards() -> None:
    paths = sorted(SPARK_JOBS.rglob("*.py"))
    modules = {_module(p): p for p in paths}
    assert {m.split(".")[1] for m in modules if "." in m} == set(SPARK_LAYERS)
    upwards = {name: sorted(m for m in _imports(path) if m in modules
                            and _spark_layer(m) > _spark_layer(name))
               for name, path in modules.items()}
    assert {name: found for name, found in upwards.items() if found} == {}


def test_benchmarks_and_deploy_tools_import_nothing_from_the_tests() -> None:
    """`make bench` runs without the test suite: the standalone cluster and the JVM archive it
    shares with the tests live in deploy/spark, which imports nothing of tests/ either."""
    paths = sorted((ROOT / "bench").rglob("*.py")) + sorted((ROOT / "deploy").rglob("*.py"))
    assert _offending(paths, forbidden=("tests",)) == {}
    # The check sees such an import (a test file makes them):
    assert _offending([ROOT / "tests" / "spark" / "test_cluster.py"], forbidden=("tests",))
