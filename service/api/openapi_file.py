"""Write the app's OpenAPI document to ``openapi/openapi.json`` (``make openapi``).

The committed file describes the service under DEFAULT settings (no ``FLATAVRO_API_KEYS``:
no operation declares security); a running service serves its own document at
``/openapi.json``, with the API-key security its settings require. The file is built from
defaults whatever the environment, and a test fails when it drifts.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from service.api.app import create_app
from service.api.settings import Settings

__all__ = ["document", "render", "main"]

DEFAULT_PATH = Path("openapi/openapi.json")


NOTE = ("\n\nThis document describes the service under default settings: no API keys, so no "
        "operation declares security. With `FLATAVRO_API_KEYS` set, the service's own "
        "`/openapi.json` declares it on writes (and on reads with `FLATAVRO_PROTECT_READS`).")


def document() -> dict[str, Any]:
    """The OpenAPI document of an app built with default settings (the environment ignored)."""
    app = create_app(Settings.model_construct())  # the fields' defaults, no env read
    spec = app.openapi()
    spec["info"]["description"] += NOTE
    return spec


def render(spec: dict[str, Any]) -> str:
    """The file text: indented JSON, UTF-8, final newline."""
    return json.dumps(spec, indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write the document to the path given (default ``openapi/openapi.json``)."""
    args = sys.argv[1:] if argv is None else argv
    path = Path(args[0]) if args else DEFAULT_PATH
    path.write_text(render(document()), encoding="utf-8")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
