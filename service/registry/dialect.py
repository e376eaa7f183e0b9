"""`Dialect`: what the HTTP client has learnt of its registry's dialect of Confluent's API.

Registries speak Confluent's API in dialects (docs/registry.md lists them, measured); the client
takes each answer as a user of that registry would and records here what it learnt.
"""

from __future__ import annotations

from dataclasses import dataclass

from service.registry.errors import (
    RegistryError,
    RegistryUnavailableError,
    SubjectNotFoundError,
)
from service.registry.transport import RegistryTransport, path_part

__all__ = ["Dialect", "PROBE_SUBJECT"]

PROBE_SUBJECT = "flatavro-dialect-probe.no-such-subject"
"""A subject nobody registers: how a registry answers the level of an unknown subject tells
whether it can tell "no level of its own" from NONE (see `Dialect.unset_level_reads_as_none`)."""


@dataclass(slots=True)
class Dialect:
    """What the client has learnt of its registry's dialect, from the registry's own answers.

    Attributes:
        modes: False once ``/mode`` answered "not implemented" (Apicurio 2.6): every mode then
            reads READWRITE, and setting one is `RegistryUnsupportedError`.
        unset_level_reads_as_none: whether a subject without a level of its own answers
            ``NONE`` (Apicurio 2.6: its subject levels are artifact rules, and a missing rule
            reads NONE, while the registry enforces the global rule) — None until asked. Such a
            registry answers the level of a subject it does not have with 40401, where
            Confluent answers 40408 or (``defaultToGlobal``) the global level; the client asks
            once, with `PROBE_SUBJECT`, when a subject's level reads NONE.
    """

    modes: bool = True
    unset_level_reads_as_none: bool | None = None

    async def unset_level_is_none(self, transport: RegistryTransport) -> bool:
        """Whether this registry's NONE for a subject may mean "no level of its own" (asked
        once, then remembered)."""
        if self.unset_level_reads_as_none is None:
            try:
                await transport.request("GET", f"config/{path_part(PROBE_SUBJECT)}")
                self.unset_level_reads_as_none = False
            except SubjectNotFoundError:
                self.unset_level_reads_as_none = True
            except RegistryUnavailableError:
                raise  # learnt nothing: ask again next time
            except RegistryError:  # 40408, or a refusal (ACLs): Confluent's way, NONE is NONE
                self.unset_level_reads_as_none = False
        return self.unset_level_reads_as_none
