"""Write the app's OpenAPI document to ``openapi/openapi.json`` (``make openapi``).

The document does not depend on settings (the embedded registry's mount is not part of it),
so the file is the same whatever environment generates it; a test fails when it drifts.
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


def document() -> dict[str, Any]:
    """The OpenAPI document of an app built with default settings."""
    return create_app(Settings(_env_file=None)).openapi()  # type: ignore[call-arg]


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
