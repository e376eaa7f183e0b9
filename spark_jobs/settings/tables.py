"""Which topics a job reads, and where each topic's table goes: one topic into one path, or
many topics (a list, or a regular expression as Kafka's ``subscribePattern``) into the paths a
template gives (``--table-path-template 's3a://lake/{database}/{table}'``).

The template's ``{database}`` and ``{table}`` are read from the topic's value schema (its
namespace and record name, as TiCDC writes them), never parsed out of the topic's name:
``tidb_{schema}_{table}`` cannot be split back when a name holds an ``_``."""

from __future__ import annotations

import re
import string
from dataclasses import dataclass

__all__ = ["PLACEHOLDERS", "PathTemplate", "Topics", "TOPIC_NAME"]

PLACEHOLDERS = ("database", "table", "topic")
"""What a path template may name."""

TOPIC_NAME = re.compile(r"[A-Za-z0-9._-]{1,249}")
"""A legal Kafka topic name."""


@dataclass(frozen=True, slots=True)
class Topics:
    """The topics a job subscribes to: `names`, or every topic `pattern` matches (whole name,
    Java's regular expressions; topics created later are picked up by the running stream)."""

    names: tuple[str, ...] = ()
    pattern: str | None = None

    @classmethod
    def parse_list(cls, text: str) -> Topics:
        """``a,b,c`` (blanks around names ignored).

        Raises:
            ValueError: an empty list, a repeated name or one that is no Kafka topic name.
        """
        names = tuple(n.strip() for n in text.split(","))
        bad = [n for n in names if not TOPIC_NAME.fullmatch(n)]
        if bad or not names:
            raise ValueError(f"{bad[0]!r} is not a Kafka topic name (letters, digits, '.', "
                             f"'_', '-')" if bad else "no topic given")
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"topic {repeated[0]} is listed twice")
        return cls(names=names)

    @classmethod
    def parse_pattern(cls, text: str) -> Topics:
        """A regular expression matched against whole topic names.

        Raises:
            ValueError: it does not compile (Python's ``re`` and Java's agree on the common
                syntax; a pattern both refuse is caught here, before the JVM starts).
        """
        try:
            re.compile(text)
        except re.error as exc:
            raise ValueError(f"{text!r} is not a regular expression: {exc}") from exc
        return cls(pattern=text)

    def spark_option(self) -> tuple[str, str]:
        """The Kafka source's option: ``subscribe`` or ``subscribePattern``."""
        if self.pattern is not None:
            return "subscribePattern", self.pattern
        return "subscribe", ",".join(self.names)

    def __str__(self) -> str:
        if self.pattern is not None:
            return f"topics matching {self.pattern}"
        return ", ".join(self.names)


@dataclass(frozen=True, slots=True)
class PathTemplate:
    """A table location with placeholders (`PLACEHOLDERS`), e.g. ``/lake/{database}/{table}``."""

    text: str

    @classmethod
    def parse(cls, text: str, *, option: str) -> PathTemplate:
        """Check `text` names only known placeholders and at least one of ``{table}`` or
        ``{topic}`` (two topics must not share a table).

        Raises:
            ValueError: naming `option` and what is wrong.
        """
        try:
            names = [name for _, name, _, _ in string.Formatter().parse(text)
                     if name is not None]
        except ValueError as exc:
            raise ValueError(f"{option} {text!r}: {exc} (write a literal brace as {{{{ or "
                             f"}}}})") from exc
        unknown = [n for n in names if n not in PLACEHOLDERS]
        if unknown:
            raise ValueError(f"{option} {text!r} names {{{unknown[0]}}}; a template may name "
                             f"{', '.join('{' + p + '}' for p in PLACEHOLDERS)}")
        if "table" not in names and "topic" not in names:
            raise ValueError(f"{option} {text!r} names neither {{table}} nor {{topic}}: every "
                             f"topic would write to the same table")
        return cls(text)

    def uses(self, placeholder: str) -> bool:
        """Whether the template names `placeholder`."""
        return any(name == placeholder for _, name, _, _ in string.Formatter().parse(self.text))

    def render(self, *, topic: str, database: str, table: str) -> str:
        """The location for one topic's table."""
        return self.text.format(topic=topic, database=database, table=table)

    def __str__(self) -> str:
        return self.text
