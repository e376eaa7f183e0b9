"""librdkafka settings for the bridge's clients: ``FLATAVRO_KAFKA_*`` variables and a
``--kafka-config`` file of ``key=value`` lines (the file wins), secrets kept out of logs."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from service.bridge.errors import KafkaConfigError

__all__ = ["client_settings", "kafka_settings", "redacted", "ENV_PREFIX"]

ENV_PREFIX = "FLATAVRO_KAFKA_"
_SECRET_WORDS = ("password", "secret", "token", "key.pem", "keystore.key", ".jaas.config",
                 "oauthbearer.config")
# Set by the bridge itself: a user value would break exactly-once.
# The partitioner is fixed so that a key lands where Java clients (and an avro changefeed
# through them) put it.
_RESERVED = frozenset({"enable.auto.commit", "isolation.level", "transactional.id",
                       "group.id", "enable.idempotence", "bootstrap.servers", "partitioner",
                       "enable.partition.eof"})


def _from_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """``FLATAVRO_KAFKA_SECURITY_PROTOCOL=SASL_SSL`` -> ``security.protocol=SASL_SSL``."""
    return {name[len(ENV_PREFIX):].lower().replace("_", "."): value
            for name, value in environ.items() if name.startswith(ENV_PREFIX)}


def _from_file(path: str) -> dict[str, str]:
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise KafkaConfigError(f"cannot read --kafka-config {path}: {exc}", path=path) from exc
    settings: dict[str, str] = {}
    for number, line in enumerate(lines, start=1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        name, sep, value = text.partition("=")
        if not sep or not name.strip():
            raise KafkaConfigError(f"{path} line {number}: expected key=value", path=path,
                                   line=number)
        settings[name.strip()] = value.strip()
    return settings


def client_settings(environ: Mapping[str, str], path: str | None) -> dict[str, str]:
    """The librdkafka settings of ``FLATAVRO_KAFKA_*`` variables, then of the file over them
    (the Spark jobs read theirs here too, so both mean the same).

    Raises:
        KafkaConfigError: an unreadable file or a line that is not key=value.
    """
    return _from_environment(environ) | (_from_file(path) if path else {})


def kafka_settings(environ: Mapping[str, str], path: str | None) -> dict[str, str]:
    """The extra client settings (variables, then the file over them).

    Raises:
        KafkaConfigError: an unreadable file, a line that is not key=value, or a setting the
            bridge owns (naming it).
    """
    settings = client_settings(environ, path)
    for name in settings:
        if name in _RESERVED:
            raise KafkaConfigError(f"Kafka setting {name} is set by the bridge (exactly-once "
                                   f"depends on it); remove it", setting=name)
    return settings


def redacted(settings: Mapping[str, object]) -> dict[str, object]:
    """The settings with every secret-looking value replaced (for logs and errors)."""
    return {name: "**********" if any(w in name for w in _SECRET_WORDS) else value
            for name, value in settings.items()}
