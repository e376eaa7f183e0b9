"""Kafka client settings: ``FLATAVRO_KAFKA_*`` variables and a ``--kafka-config`` file of
``key=value`` lines (the file wins), in librdkafka's names, secrets kept out of logs. The bridge
passes them to its clients (checking the ones it owns itself, `service.bridge.kafka_settings`);
the Spark jobs map them to Spark's ``kafka.`` options (`spark_jobs.settings.kafka`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from service.kafka_client.errors import KafkaConfigError

__all__ = ["client_settings", "redacted", "ENV_PREFIX"]

ENV_PREFIX = "FLATAVRO_KAFKA_"
_SECRET_WORDS = ("password", "secret", "token", "key.pem", "keystore.key", ".jaas.config",
                 "oauthbearer.config")


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
    (the bridge and the Spark jobs read theirs here, so both mean the same).

    Raises:
        KafkaConfigError: an unreadable file or a line that is not key=value.
    """
    return _from_environment(environ) | (_from_file(path) if path else {})


def redacted(settings: Mapping[str, object]) -> dict[str, object]:
    """The settings with every secret-looking value replaced (for logs and errors)."""
    return {name: "**********" if any(w in name for w in _SECRET_WORDS) else value
            for name, value in settings.items()}
