"""What callers send the embedded registry, checked as Confluent checks it: subject names,
version specs, compatibility levels and schema references."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from service.registry.compatibility import CompatibilityLevel
from service.registry.embedded.store import RegistryStore
from service.registry.errors import (
    InvalidCompatibilityLevelError,
    InvalidSchemaError,
    InvalidSubjectError,
    InvalidVersionError,
)
from service.registry.interface import VersionSpec

__all__ = ["MAX_VERSION", "check_subject", "parse_level", "parse_version", "refuse_references"]

MAX_VERSION = 2**31 - 1
"""The highest version number Confluent accepts (a Java int)."""


def parse_version(spec: VersionSpec) -> int | None:
    """A version number, or None for ``latest`` / ``-1``.

    Raises:
        InvalidVersionError: anything else (42202).
    """
    text = str(spec).strip()
    if text.lower() == "latest" or text == "-1":
        return None
    if text.isdigit() and 1 <= int(text) <= MAX_VERSION:
        return int(text)
    raise InvalidVersionError(
        f"The specified version '{spec}' is not a valid version id. Allowed values are between "
        f"[1, 2^31-1] and the string \"latest\"", version=str(spec))


def parse_level(text: str) -> CompatibilityLevel:
    """A compatibility level from any case. Raises InvalidCompatibilityLevelError (42203)."""
    try:
        return CompatibilityLevel(str(text).upper())
    except ValueError as exc:
        raise InvalidCompatibilityLevelError(
            f"Invalid compatibility level. Valid values are none, backward, forward, full, "
            f"backward_transitive, forward_transitive, and full_transitive (got {text!r})"
        ) from exc


def check_subject(subject: str) -> None:
    """Refuse an empty subject or one with control characters (42208)."""
    if not subject or any(ord(c) < 0x20 or ord(c) == 0x7F for c in subject):
        raise InvalidSubjectError(f"The specified subject is not valid: {subject!r}",
                                  subject=subject)


def refuse_references(store: RegistryStore, references: Sequence[Mapping[str, Any]]) -> None:
    """Refuse the first schema reference (42201): the embedded registry stores none. The
    message says whether the reference would resolve, so a caller learns which is wrong.

    Raises:
        InvalidSchemaError: naming ``references[i]``.
    """
    for i, ref in enumerate(references):
        name, target = ref.get("name"), ref.get("subject")
        number = ref.get("version")
        rows = store.versions(str(target)) if isinstance(target, str) else []
        resolves = any(not r.deleted and (r.version == number or number == -1)
                       for r in rows)
        why = ("schema references are not supported by the embedded registry" if resolves
               else f"subject {target!r} version {number!r} not found")
        raise InvalidSchemaError(
            f"Invalid schema: references[{i}] (name {name!r}, subject {target!r}, version "
            f"{number!r}): {why}", field=f"references[{i}]", reference=dict(ref))
