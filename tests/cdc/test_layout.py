"""docs/architecture.md (`service/cdc`): every protocol is a folder with the same file names,
listed in the one catalog, and never imports another protocol."""

from __future__ import annotations

import ast
from pathlib import Path

from service.cdc.catalog import DECODERS, Protocol

CDC = Path(__file__).resolve().parents[2] / "service" / "cdc"
FOLDERS = {p.value.replace("-", "_") for p in Protocol}


def test_each_protocol_folder_has_the_same_files() -> None:
    listings = {name: sorted(f.name for f in (CDC / name).glob("*.py")) for name in FOLDERS}
    assert len({tuple(v) for v in listings.values()}) == 1, listings
    assert {d.name for d in CDC.iterdir() if (d / "__init__.py").exists()} == FOLDERS


def test_protocols_never_import_each_other() -> None:
    for name in FOLDERS:
        others = {f"service.cdc.{o}" for o in FOLDERS - {name}}
        for source in (CDC / name).glob("*.py"):
            for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and node.module:
                    assert not any(node.module.startswith(o) for o in others), (source, node.module)


def test_every_decoder_follows_the_interface() -> None:
    for protocol, make in DECODERS.items():
        decoder = make(schema_cache_size=2)
        assert callable(decoder.decode), protocol
