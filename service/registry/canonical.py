"""Schema identity as a registry decides it: the parsed schema re-serialized deterministically.

Whitespace, object key order and ``"int"`` vs ``{"type": "int"}`` do not make two schemas
different; docs, aliases, defaults and custom properties (``connect.parameters``) do.
"""

from __future__ import annotations

from typing import Any

import orjson

from service.registry.compatibility import InvalidSchemaError, parse_avro

__all__ = ["canonical_schema"]

_PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})


def canonical_schema(text: str) -> str:
    """Validate an Avro schema text and return its canonical identity string.

    Raises:
        InvalidSchemaError: not JSON or not a valid Avro schema.
    """
    parse_avro(text)
    try:
        document = orjson.loads(text)
    except orjson.JSONDecodeError as exc:  # parse_avro accepted it; keep the guard honest
        raise InvalidSchemaError(f"invalid Avro schema: {exc}") from exc
    return orjson.dumps(_normalize(document), option=orjson.OPT_SORT_KEYS).decode()


def _normalize(node: Any) -> Any:
    if isinstance(node, list):
        return [_normalize(n) for n in node]
    if isinstance(node, dict):
        if set(node) == {"type"} and node["type"] in _PRIMITIVES:
            return node["type"]
        return {k: _normalize(v) if k in ("type", "fields", "items", "values") else v
                for k, v in node.items()}
    return node
