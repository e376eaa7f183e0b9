"""Write the app's OpenAPI documents to ``openapi/openapi.json`` and, for the embedded
registry's Confluent API, ``openapi/registry-openapi.json`` (``make openapi``).

The committed files describe the service under DEFAULT settings (no ``FLATAVRO_API_KEYS``:
no operation declares security); a running service serves its own documents at
``/openapi.json`` and ``/openapi-registry.json``, with the API-key security its settings
require. The files are built from defaults whatever the environment, and tests fail when
they drift.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from service.api.app import create_app
from service.api.docs import registry_openapi
from service.api.docs.spec import AuthDoc
from service.api.settings import Settings

__all__ = ["document", "registry_document", "render", "main"]

DEFAULT_PATH = Path("openapi/openapi.json")
REGISTRY_PATH = Path("openapi/registry-openapi.json")


NOTE = ("\n\nThis document describes the service under default settings: no API keys, so no "
        "operation declares security. With `FLATAVRO_API_KEYS` set, the service's own "
        "`/openapi.json` declares it on writes (and on reads with `FLATAVRO_PROTECT_READS`).")


def document() -> dict[str, Any]:
    """The OpenAPI document of an app built with default settings (the environment ignored)."""
    app = create_app(Settings.model_construct())  # the fields' defaults, no env read
    spec = app.openapi()
    spec["info"]["description"] += NOTE
    return spec


def registry_document() -> dict[str, Any]:
    """The embedded registry's OpenAPI document under default settings (no API keys)."""
    spec = registry_openapi.document(AuthDoc(keys=False, protect_reads=False))
    spec["info"]["description"] += NOTE.replace("`/openapi.json`", "`/openapi-registry.json`")
    return spec


def render(spec: dict[str, Any]) -> str:
    """The file text: indented JSON, UTF-8, final newline."""
    return json.dumps(spec, indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write the service's document and the registry's to the paths given (default
    ``openapi/openapi.json`` and ``openapi/registry-openapi.json``)."""
    args = sys.argv[1:] if argv is None else argv
    paths = [Path(a) for a in args] + [DEFAULT_PATH, REGISTRY_PATH][len(args):]
    for path, spec in zip(paths, (document(), registry_document()), strict=True):
        path.write_text(render(spec), encoding="utf-8")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
