"""Names on the wire: Avro name sanitization, topic rules and TopicNameStrategy subjects.

Pure functions implementing docs/flat-avro.md §2, shared by the service and the Spark jobs.
"""

from __future__ import annotations

import enum
import re

from service.core.errors import InvalidTopicRuleError

__all__ = [
    "sanitize_name",
    "SubjectKind",
    "subject_for",
    "TopicRule",
    "parse_topic_rule",
    "MAX_TOPIC_LENGTH",
]

MAX_TOPIC_LENGTH = 249
"""Kafka's limit on a topic name's length."""

_AVRO_HEAD = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_AVRO_TAIL = _AVRO_HEAD | frozenset("0123456789")
_TOPIC_CHARS = re.compile(r"[^A-Za-z0-9._-]")
_PLACEHOLDER_RULE = re.compile(
    r"^[A-Za-z0-9._-]*\{schema\}[A-Za-z0-9._-]*\{table\}[A-Za-z0-9._-]*$"
)
_LITERAL_TOPIC = re.compile(r"^[A-Za-z0-9._-]+$")


def sanitize_name(name: str) -> str:
    """Turn any string into a valid Avro name the way TiCDC does, code point by code point.

    The first code point, if not ``[A-Za-z_]``, becomes ``_`` (an ASCII digit is kept after
    it: ``1abc`` -> ``_1abc``); every later code point outside ``[A-Za-z0-9_]`` becomes one
    ``_`` (``中文`` -> ``__``). The empty string stays empty.
    """
    if not name:
        return ""
    out: list[str] = []
    head = name[0]
    if head in _AVRO_HEAD:
        out.append(head)
    else:
        out.append("_")
        if "0" <= head <= "9":
            out.append(head)
    out.extend(ch if ch in _AVRO_TAIL else "_" for ch in name[1:])
    return "".join(out)


class SubjectKind(enum.Enum):
    """Which half of a Kafka message a subject's schema describes."""

    KEY = "key"
    VALUE = "value"


def subject_for(topic: str, kind: SubjectKind) -> str:
    """TopicNameStrategy as TiCDC applies it: ``.`` -> ``_``, then ``-key`` / ``-value``."""
    return f"{topic.replace('.', '_')}-{kind.value}"


class TopicRule:
    """A validated topic rule: a ``{schema}``/``{table}`` pattern or one literal topic.

    A literal topic binds exactly one table (TopicNameStrategy allows one schema per topic);
    the registry layer enforces that binding.
    """

    __slots__ = ("rule",)

    def __init__(self, rule: str) -> None:
        self.rule = rule

    @property
    def is_literal(self) -> bool:
        """True when the rule is a plain topic name without placeholders."""
        return "{" not in self.rule and "}" not in self.rule

    def expand(self, schema: str, table: str) -> str:
        """Return the topic of ``schema.table`` under this rule.

        Code points outside ``[A-Za-z0-9._-]`` become ``_``, the result is cut at 249
        characters, and the names ``.`` / ``..`` (illegal in Kafka) become ``_`` / ``__``.
        """
        if self.is_literal:
            return self.rule
        topic = self.rule.replace("{schema}", schema).replace("{table}", table)
        topic = _TOPIC_CHARS.sub("_", topic)[:MAX_TOPIC_LENGTH]
        if topic in (".", ".."):
            topic = "_" * len(topic)
        return topic

    def __repr__(self) -> str:
        return f"TopicRule({self.rule!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TopicRule) and other.rule == self.rule

    def __hash__(self) -> int:
        return hash(self.rule)


def parse_topic_rule(rule: str) -> TopicRule:
    """Validate a topic rule (docs/flat-avro.md §2) and return it.

    Raises:
        InvalidTopicRuleError: a placeholder rule that lacks ``{table}``, puts it before
            ``{schema}``, uses another placeholder or a character Kafka forbids; or a literal
            topic that is empty, too long, ``.``/``..`` or holds a forbidden character.
    """
    if "{" in rule or "}" in rule:
        if _PLACEHOLDER_RULE.match(rule):
            return TopicRule(rule)
        raise InvalidTopicRuleError(
            f"topic rule {rule!r} is invalid: {_why_rule_invalid(rule)}", rule=rule
        )
    if not rule:
        raise InvalidTopicRuleError("topic rule is empty", rule=rule)
    if len(rule) > MAX_TOPIC_LENGTH:
        raise InvalidTopicRuleError(
            f"topic {rule[:40]!r}... is {len(rule)} characters long; Kafka allows "
            f"{MAX_TOPIC_LENGTH}",
            rule=rule,
        )
    if rule in (".", ".."):
        raise InvalidTopicRuleError(f"topic {rule!r} is not a legal Kafka topic name", rule=rule)
    bad = _TOPIC_CHARS.search(rule)
    if bad:
        raise InvalidTopicRuleError(
            f"topic {rule!r} has the character {bad.group()!r} at position {bad.start()}; "
            "Kafka topics allow only [A-Za-z0-9._-]",
            rule=rule,
            position=bad.start(),
        )
    return TopicRule(rule)


def _why_rule_invalid(rule: str) -> str:
    """Explain, in one clause, why a placeholder rule fails the avro topic-rule pattern."""
    placeholders = re.findall(r"\{[^{}]*\}", rule)
    unknown = [p for p in placeholders if p not in ("{schema}", "{table}")]
    if unknown:
        return f"unknown placeholder {unknown[0]}; only {{schema}} and {{table}} are allowed"
    if "{schema}" not in rule or "{table}" not in rule:
        return (
            "the avro protocol needs both {schema} and {table}, so that one table maps to one "
            "topic (TopicNameStrategy allows one schema per topic)"
        )
    if rule.count("{schema}") > 1 or rule.count("{table}") > 1:
        return "each placeholder may appear only once"
    if rule.index("{table}") < rule.index("{schema}"):
        return "{schema} must come before {table}"
    rest = rule.replace("{schema}", "").replace("{table}", "")
    bad = _TOPIC_CHARS.search(rest)
    if bad:
        return f"the character {bad.group()!r} is not allowed; use only [A-Za-z0-9._-]"
    return "it must match ^[A-Za-z0-9._-]*{schema}[A-Za-z0-9._-]*{table}[A-Za-z0-9._-]*$"
