"""Incompatibilities worded as Confluent's registry words them (409 ``details`` and verbose checks).

Follows the newest Confluent Platform (``SchemaValidatorBuilder``, avro ``Difference``,
``AbstractSchemaRegistry.isCompatibleWithPrevious``): versions are checked newest first and
the first one that fails is reported; each Avro incompatibility becomes
``{errorType:'...', description:'...', additionalInfo:'...'}``, then ``{oldSchemaVersion: N}``
and ``{oldSchema: '...'}``, and last ``{validateFields: 'false', compatibility: 'LEVEL'}``.
Older releases answered 409 with ``error_code`` 409 and a shorter message; the newest use
40901 and this format.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from service.registry.compatibility import (
    CompatibilityLevel,
    CompatibilityVerdict,
    Incompatibility,
)

__all__ = ["incompatibility_messages", "incompatible_message"]

_MAX_SCHEMA_IN_MESSAGE = 10 * 1024  # Confluent truncates the old schema beyond this
_DESCRIPTIONS = {
    "FIXED_SIZE_MISMATCH": "The size of FIXED type field at path '{path}' in the {reader} "
                           "schema does not match with the {writer} schema",
    "TYPE_MISMATCH": "The type (path '{path}') of a field in the {reader} schema does not "
                     "match with the {writer} schema",
    "NAME_MISMATCH": "The name of the schema has changed (path '{path}')",
    "MISSING_ENUM_SYMBOLS": "The {reader} schema is missing enum symbols '{info}' at path "
                            "'{path}' in the {writer} schema",
    "MISSING_UNION_BRANCH": "The {reader} schema is missing a type inside a union field at "
                            "path '{path}' in the {writer} schema",
    "READER_FIELD_MISSING_DEFAULT_VALUE": "The field '{info}' at path '{path}' in the {reader} "
                                          "schema has no default value and is missing in the "
                                          "{writer} schema",
}


def incompatibility_messages(verdict: CompatibilityVerdict, *, level: CompatibilityLevel,
                             old_schemas: Mapping[int, str]) -> list[str]:
    """Confluent's verbose ``messages`` for a verdict ([] when compatible).

    Args:
        verdict: the check's outcome.
        level: the level the check applied.
        old_schemas: stored schema text by version (for ``oldSchema``).
    """
    if verdict.compatible:
        return []
    version = max(i.version for i in verdict.incompatibilities)
    found = [i for i in verdict.incompatibilities if i.version == version]
    old_reads_new = [i for i in found if i.direction == "old_reads_new"]
    new_reads_old = [i for i in found if i.direction == "new_reads_old"]
    old = old_schemas.get(version, "")
    if level.new_reads_old and level.old_reads_new:  # FULL: both ways, schema appended once
        messages = _worded(old_reads_new, reader="old", writer="new", version=None, old="")
        messages += _worded(new_reads_old, reader="new", writer="old", version=version,
                            old=old)
    elif level.old_reads_new:
        messages = _worded(old_reads_new, reader="old", writer="new", version=version, old=old)
    else:
        messages = _worded(new_reads_old, reader="new", writer="old", version=version, old=old)
    return [*messages, f"{{validateFields: 'false', compatibility: '{level.value}'}}"]


def incompatible_message(subject: str, messages: Sequence[str]) -> str:
    """The 409 message of a refused registration, as the newest Confluent Platform writes it."""
    return (f"Schema being registered is incompatible with an earlier schema for subject "
            f"\"{subject}\", details: [{', '.join(messages)}]")


def _worded(found: Sequence[Incompatibility], *, reader: str, writer: str,
            version: int | None, old: str) -> list[str]:
    """The differences, then (with `version`) the old version and its schema text."""
    if not found:
        return []
    out = [_difference(i, reader=reader, writer=writer) for i in found]
    if version is not None:
        out.append(f"{{oldSchemaVersion: {version}}}")
        out.append(f"{{oldSchema: '{old}'}}" if len(old) <= _MAX_SCHEMA_IN_MESSAGE
                   else f"{{oldSchema: <truncated> '{old[:_MAX_SCHEMA_IN_MESSAGE]}...'}}")
    return out


def _difference(found: Incompatibility, *, reader: str, writer: str) -> str:
    """One incompatibility as Confluent's ``{errorType:..., description:..., ...}``."""
    template = _DESCRIPTIONS.get(found.type, "")
    description = template.format(path=found.location, reader=reader, writer=writer,
                                  info=found.detail)
    return (f"{{errorType:'{found.type}', description:'{description}', "
            f"additionalInfo:'{found.detail}'}}")
