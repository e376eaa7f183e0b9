"""Schema text as a registry keeps it: Avro's compact ``Schema.toString()`` form and identity.

Identity: whitespace, object key order and ``"int"`` vs ``{"type": "int"}`` do not make two
schemas different; docs, aliases, defaults and custom properties (``connect.parameters``) do.
The stored text is what Confluent's registry stores and returns: Java Avro's
``Schema.toString()`` of the parsed schema (`java_form`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import orjson

from service.registry.compatibility import InvalidSchemaError, parse_avro
from service.registry.java_json import java_json

__all__ = ["canonical_schema", "StoredForm", "stored_form"]

_PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})
# Java Avro's reserved attribute names: any other attribute is a custom property, kept in order.
_SCHEMA_RESERVED = frozenset({"doc", "fields", "items", "name", "namespace", "size", "symbols",
                              "values", "type", "aliases"})
_ENUM_RESERVED = _SCHEMA_RESERVED | {"default"}
_FIELD_RESERVED = frozenset({"default", "doc", "name", "order", "type", "aliases"})
_LOGICAL_FIRST = ("logicalType", "precision", "scale")


@dataclass(frozen=True, slots=True)
class StoredForm:
    """A schema as the registry stores it.

    Attributes:
        text: Java Avro's compact ``Schema.toString()`` (Confluent's stored, returned string).
        identity: the key two spellings of one schema share (sorted keys of `text`).
    """

    text: str
    identity: str


def stored_form(text: str, *, normalize: bool = False) -> StoredForm:
    """Validate an Avro schema text and return the form a Confluent registry stores.

    Args:
        text: the schema as sent.
        normalize: Confluent's ``?normalize=true``: custom properties and aliases sorted.

    Raises:
        InvalidSchemaError: not JSON or not a valid Avro schema.
    """
    parse_avro(text)
    document = _JavaForm(normalize).schema(json.loads(text), None)
    return StoredForm(java_json(document), java_json(document, sort_keys=True))


class _JavaForm:
    """Re-writes a schema document the way Java Avro's ``Schema.toJson`` writes it.

    Attribute order: type, name, namespace (only where it differs from the enclosing one),
    doc, then fields / symbols / size / items / values, then custom properties in the order
    given, then aliases; a field: name, type, doc, default, order (unless ascending), aliases,
    properties. A named type's second use is its name, relative to the enclosing namespace.
    """

    def __init__(self, normalize: bool) -> None:
        self._defined: set[str] = set()
        self._normalize = normalize

    def schema(self, node: Any, space: str | None) -> Any:
        if isinstance(node, str):
            return self._reference(node, space)
        if isinstance(node, list):
            return [self.schema(branch, space) for branch in node]
        kind = node["type"]
        if kind in ("record", "error", "enum", "fixed"):
            return self._named(node, space)
        if kind in ("array", "map"):
            child = "items" if kind == "array" else "values"
            return {"type": kind, child: self.schema(node[child], space),
                    **self._props(node, _SCHEMA_RESERVED)}
        if kind in _PRIMITIVES:
            props = self._props(node, _SCHEMA_RESERVED)
            return {"type": kind, **props} if props else kind
        return self.schema(kind, space)  # {"type": "SomeName"}: Java keeps only the reference

    def _reference(self, name: str, space: str | None) -> str:
        if name in _PRIMITIVES:
            return name
        full = f"{space}.{name}" if space and "." not in name else name
        if full not in self._defined:  # Java's Names.get: the enclosing space, then none
            full = name
        own_space, _, short = full.rpartition(".")
        return short if not own_space or own_space == space else full

    def _named(self, node: dict[str, Any], space: str | None) -> dict[str, Any]:
        given = node.get("namespace")
        own: str | None = given if isinstance(given, str) else space
        own_space, _, short = str(node["name"]).rpartition(".")
        own = (own_space if own_space else own) or None
        self._defined.add(f"{own}.{short}" if own else short)
        out: dict[str, Any] = {"type": node["type"], "name": short}
        if own is not None and own != space:
            out["namespace"] = own
        elif own is None and space is not None:
            out["namespace"] = ""
        if isinstance(node.get("doc"), str):
            out["doc"] = node["doc"]
        if node["type"] == "enum":
            out["symbols"] = node["symbols"]
            if isinstance(node.get("default"), str):
                out["default"] = node["default"]
        elif node["type"] == "fixed":
            out["size"] = node["size"]
        else:
            out["fields"] = [self._field(field, own) for field in node["fields"]]
        out.update(self._props(node, _ENUM_RESERVED if node["type"] == "enum" else
                               _SCHEMA_RESERVED))
        aliases = self._aliases(node.get("aliases"), own)
        if aliases:
            out["aliases"] = aliases
        return out

    def _field(self, field: dict[str, Any], space: str | None) -> dict[str, Any]:
        out: dict[str, Any] = {"name": field["name"], "type": self.schema(field["type"], space)}
        if isinstance(field.get("doc"), str):
            out["doc"] = field["doc"]
        if "default" in field:
            out["default"] = field["default"]
        order = str(field.get("order", "ascending")).lower()
        if order != "ascending":
            out["order"] = order
        aliases = list(dict.fromkeys(field.get("aliases") or ()))
        if aliases:
            out["aliases"] = sorted(aliases) if self._normalize else aliases
        out.update(self._props(field, _FIELD_RESERVED))
        return out

    def _aliases(self, aliases: Any, space: str | None) -> list[str]:
        fulls = [a if "." in a or not space else f"{space}.{a}" for a in aliases or ()]
        fulls = sorted(set(fulls)) if self._normalize else list(dict.fromkeys(fulls))
        return [full.rpartition(".")[2] if full.rpartition(".")[0] in ("", space) else full
                for full in fulls]

    def _props(self, node: dict[str, Any], reserved: frozenset[str]) -> dict[str, Any]:
        props = {k: v for k, v in node.items() if k not in reserved}
        if not self._normalize:
            return props
        # Confluent's normalize: the logical type first, then every property sorted by name.
        first = {k: props[k] for k in _LOGICAL_FIRST if k in props and "logicalType" in props}
        return {**first, **{k: _sorted(props[k]) for k in sorted(props) if k not in first}}


def _sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


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
