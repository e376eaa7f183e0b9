"""The HTTP client's ``/config`` (compatibility level) and ``/mode`` calls, each answer taken as
its registry's dialect means it (`Dialect`).

A subject without a level of its own falls back to the global level whether the registry
answers 40408, 40401 (Apicurio, for a subject it does not have yet) or no level; a registry
without ``/mode`` is READWRITE.
"""

from __future__ import annotations

from typing import Any

from service.registry.compatibility import CompatibilityLevel
from service.registry.dialect import Dialect
from service.registry.errors import (
    RegistryServerError,
    RegistryUnsupportedError,
    SubjectConfigNotFoundError,
    SubjectModeNotFoundError,
    SubjectNotFoundError,
)
from service.registry.model import RegistryMode
from service.registry.transport import RegistryTransport, path_part, query_flag

__all__ = ["ConfigModeCalls"]


class ConfigModeCalls:
    """Levels and modes of one registry, read and written over `transport`."""

    def __init__(self, transport: RegistryTransport, dialect: Dialect) -> None:
        """Call the registry through `transport`, learning its ways into `dialect`."""
        self._transport, self._dialect = transport, dialect
        self._request = transport.request

    async def get_compatibility(self, subject: str | None, *,
                                default_to_global: bool) -> CompatibilityLevel:
        """The subject's level (or the global one); with `default_to_global`, a subject
        without a level of its own has the global level, in every dialect (see `Dialect`).

        Raises:
            SubjectConfigNotFoundError: the subject has no level of its own, and not
                `default_to_global`.
        """
        if subject is None:
            level = _level(await self._request("GET", "config"))
            return level or CompatibilityLevel.BACKWARD  # Confluent's default, if unsaid
        level = await self._subject_level(subject, default_to_global=default_to_global)
        if level is not None:
            return level
        if not default_to_global:
            raise SubjectConfigNotFoundError(
                f"subject {subject!r} has no compatibility level of its own", subject=subject)
        return await self.get_compatibility(None, default_to_global=False)

    async def _subject_level(self, subject: str, *, default_to_global: bool
                             ) -> CompatibilityLevel | None:
        """The level a subject answers; None for none of its own: 40408, 40401 (a registry
        that keeps levels only for subjects it has: Apicurio), no level in the answer, or a
        NONE that may mean unset (`Dialect.unset_level_reads_as_none`)."""
        try:
            body = await self._request("GET", f"config/{path_part(subject)}",
                                       params={"defaultToGlobal": query_flag(default_to_global)})
        except (SubjectNotFoundError, SubjectConfigNotFoundError):
            return None
        level = _level(body)
        if level is CompatibilityLevel.NONE and await self._dialect.unset_level_is_none(
                self._transport):
            return None
        return level

    async def set_compatibility(self, level: CompatibilityLevel,
                                subject: str | None) -> CompatibilityLevel:
        """Set the subject's level (or the global one); returns the level the registry says."""
        path = "config" if subject is None else f"config/{path_part(subject)}"
        body = await self._request("PUT", path, json={"compatibility": level.value})
        return _level(body) or level  # `compatibility`, or `compatibilityLevel` (Apicurio 3.0)

    async def configured_compatibility(self, subject: str | None) -> CompatibilityLevel | None:
        """The subject's own level, None without one (40408, or a dialect's equivalent); for
        the global level Confluent answers its default when none was set, so that is never
        None."""
        if subject is None:
            return await self.get_compatibility(None, default_to_global=False)
        return await self._subject_level(subject, default_to_global=False)

    async def delete_compatibility(self, subject: str | None) -> CompatibilityLevel:
        """Remove the subject's level (or reset the global one); returns the level removed.

        Raises:
            SubjectConfigNotFoundError: the subject has no level of its own (Confluent
                answers 40401 "subject not found" there).
        """
        path = "config" if subject is None else f"config/{path_part(subject)}"
        try:
            body = await self._request("DELETE", path)
        except SubjectNotFoundError as exc:
            raise SubjectConfigNotFoundError(
                f"subject {subject!r} has no compatibility level of its own ({exc.message})",
                subject=subject) from exc
        return CompatibilityLevel(body.get("compatibilityLevel") or body.get("compatibility"))

    async def get_mode(self, subject: str | None) -> RegistryMode:
        """The effective mode; READWRITE on a registry without ``/mode`` (Apicurio 2.6)."""
        if not self._dialect.modes:
            return RegistryMode.READWRITE
        path = "mode" if subject is None else f"mode/{path_part(subject)}"
        try:
            body = await self._request("GET", path, params={"defaultToGlobal": "true"})
        except RegistryUnsupportedError:
            self._dialect.modes = False
            return RegistryMode.READWRITE
        return _mode(body)

    async def configured_mode(self, subject: str | None) -> RegistryMode | None:
        """The mode set on the subject (or the global one); None when unset, and for a
        subject on a registry without ``/mode`` (globally: READWRITE)."""
        if not self._dialect.modes:
            return RegistryMode.READWRITE if subject is None else None
        path = "mode" if subject is None else f"mode/{path_part(subject)}"
        try:
            return _mode(await self._request("GET", path))
        except SubjectModeNotFoundError:  # 40409: the subject has no mode of its own
            return None
        except RegistryUnsupportedError:
            self._dialect.modes = False
            return RegistryMode.READWRITE if subject is None else None

    async def set_mode(self, mode: RegistryMode, subject: str | None, *,
                       force: bool) -> RegistryMode:
        """Set the subject's mode (or the global one); returns the mode the registry says."""
        path = "mode" if subject is None else f"mode/{path_part(subject)}"
        body = await self._request("PUT", path, json={"mode": mode.value},
                                   params={"force": query_flag(force)})
        return _mode(body)

    async def delete_mode(self, subject: str) -> RegistryMode:
        """Remove the subject's mode; returns the mode removed.

        Raises:
            SubjectModeNotFoundError: the subject has no mode of its own (Confluent answers
                40401 "subject not found" there).
        """
        try:
            return _mode(await self._request("DELETE", f"mode/{path_part(subject)}"))
        except SubjectNotFoundError as exc:
            raise SubjectModeNotFoundError(
                f"subject {subject!r} has no mode of its own ({exc.message})",
                subject=subject) from exc


def _level(body: Any) -> CompatibilityLevel | None:
    """The level in a ``/config`` answer (``compatibilityLevel``, or ``compatibility`` as some
    registries answer), None when the body names none (an empty answer).

    Raises:
        RegistryServerError: a level this service does not know (the registry's answer cannot
            be used: 502).
    """
    value = (body.get("compatibilityLevel") or body.get("compatibility")) \
        if isinstance(body, dict) else None
    if not value:
        return None
    try:
        return CompatibilityLevel(str(value).upper())
    except ValueError as exc:
        raise RegistryServerError(
            f"the schema registry answered compatibility level {value!r}, which this service "
            "does not know", level=value) from exc


def _mode(body: Any) -> RegistryMode:
    """A mode a registry answered. READONLY_OVERRIDE (deprecated since CP 7.9 for a global
    READONLY) refuses writes as READONLY does; FORWARD (cluster linking) has no equivalent.

    Raises:
        RegistryServerError: a mode this service does not know, named (the registry's answer
            cannot be used: 502, not the caller's mistake).
    """
    value = str(body.get("mode") if isinstance(body, dict) else body).upper()
    if value == "READONLY_OVERRIDE":
        return RegistryMode.READONLY
    try:
        return RegistryMode(value)
    except ValueError as exc:
        raise RegistryServerError(
            f"the schema registry answered mode {value!r}, which this service does not "
            "support (known: READWRITE, READONLY, IMPORT)", mode=value) from exc
