"""The ``/docs`` page: offline Swagger UI with a selector between the service's OpenAPI
documents (the flatavro API first, then the embedded registry's Confluent API).

Swagger UI's own definition selector lives in its standalone preset, which the offline assets
do not ship; the page's few lines of script do what it does (``specActions.updateUrl`` and
``download``) and keep the choice in the address (``/docs?definition=registry``).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from html import escape
from string import Template
from typing import Any

from fastapi.openapi.docs import swagger_ui_default_parameters

__all__ = ["Definition", "docs_page"]


@dataclass(frozen=True)
class Definition:
    """One OpenAPI document the page offers: `key` (``?definition=``), `title`, `url`."""

    key: str
    title: str
    url: str


_PAGE = Template("""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link type="text/css" rel="stylesheet" href="$assets/swagger-ui.css">
<link rel="shortcut icon" href="$assets/favicon-32x32.png">
<title>$title</title>
<style>
#definitions { display: flex; gap: 12px; align-items: center; padding: 10px 20px;
  background: #1b1b1b; color: #fff; font-family: sans-serif; font-size: 14px; }
#definitions select { font-size: 14px; padding: 4px 8px; min-width: 420px; }
</style>
</head>
<body>
<header id="definitions">
<label for="definition">Select a definition</label>
<select id="definition">$options</select>
</header>
<div id="swagger-ui"></div>
<script src="$assets/swagger-ui-bundle.js"></script>
<script>
const definitions = $definitions;
const select = document.getElementById("definition");
const wanted = new URLSearchParams(location.search).get("definition");
const first = definitions.find(d => d.key === wanted) || definitions[0];
select.value = first.key;
const ui = SwaggerUIBundle({...$parameters, url: first.url,
                            presets: [SwaggerUIBundle.presets.apis]});
select.addEventListener("change", () => {
  const chosen = definitions.find(d => d.key === select.value);
  const query = new URLSearchParams(location.search);
  query.set("definition", chosen.key);
  history.replaceState(null, "", location.pathname + "?" + query);
  ui.specActions.updateUrl(chosen.url);
  ui.specActions.download(chosen.url);
});
window.ui = ui;
</script>
</body>
</html>
""")


def _script_json(value: Any) -> str:
    """JSON that cannot close the <script> element it is written into."""
    return json.dumps(value).replace("<", "\\u003c").replace(">", "\\u003e")


def docs_page(title: str, *, assets: str, definitions: list[Definition],
              parameters: dict[str, Any]) -> str:
    """The page's HTML: Swagger UI from `assets`, showing `definitions` (the first by
    default), configured with Swagger UI `parameters` over FastAPI's defaults."""
    options = "".join(f'<option value="{escape(d.key)}">{escape(d.title)}</option>'
                      for d in definitions)
    return _PAGE.substitute(
        assets=assets, title=escape(title), options=options,
        definitions=_script_json([asdict(d) for d in definitions]),
        parameters=_script_json({**swagger_ui_default_parameters, **parameters}))

