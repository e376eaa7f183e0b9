"""The jobs' Kafka client settings: librdkafka-style, as the bridge takes them (``--kafka-config
FILE`` over ``FLATAVRO_KAFKA_*``), mapped to the ``kafka.``-prefixed Java client options of
Spark's Kafka source; a setting without an equivalent is refused, secrets are never shown.

The user's settings are kept as written: the driver's own check of the broker (`sources`) runs
librdkafka with them as they are, and Spark gets their Java equivalents (`spark_options`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from service.kafka_client.errors import KafkaConfigError
from service.kafka_client.settings import client_settings, redacted
from spark_jobs.errors import JobError

__all__ = ["KafkaSettings", "MAPPED", "SAME_NAME", "SPARK_PREFIX"]

SPARK_PREFIX = "kafka."
"""Spark's Kafka source passes options with this prefix to the Java client, without it."""

_LOGIN_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}
_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_OWNED = {"bootstrap.servers": "pass --bootstrap-servers",
          "group.id": "Spark names its own consumer groups",
          "enable.auto.commit": "Spark keeps the offsets in its checkpoint",
          "auto.offset.reset": "use --starting-offsets",
          "isolation.level": "the jobs read what transactions committed (read_committed)"}

SAME_NAME = ("client.id", "metadata.max.age.ms", "reconnect.backoff.ms",
             "reconnect.backoff.max.ms", "retry.backoff.ms",
             "socket.connection.setup.timeout.ms", "ssl.key.password",
             "ssl.keystore.password")
"""librdkafka settings whose Java client option has the same name and meaning."""

_Mapper = Callable[[str], dict[str, str]]


def _protocol(value: str) -> dict[str, str]:
    if value.upper() not in _PROTOCOLS:
        raise JobError(f"Kafka setting security.protocol={value} is not one of "
                       f"{', '.join(_PROTOCOLS)}")
    return {"security.protocol": value.upper()}


def _mechanism(value: str) -> dict[str, str]:
    if value.upper() not in _LOGIN_MODULES:
        raise JobError(f"Kafka setting sasl.mechanism={value} has no mapping to Spark's Kafka "
                       f"client here (mapped: {', '.join(_LOGIN_MODULES)})")
    return {"sasl.mechanism": value.upper()}


def _file(name: str, path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise JobError(f"Kafka setting {name}: cannot read {path}: {exc}") from exc


def _identification(value: str) -> dict[str, str]:
    return {"ssl.endpoint.identification.algorithm": "" if value == "none" else value}


MAPPED: dict[str, tuple[str, _Mapper]] = {
    "security.protocol": ("security.protocol (upper-cased)", _protocol),
    "sasl.mechanism": ("sasl.mechanism", _mechanism),
    "sasl.mechanisms": ("sasl.mechanism", _mechanism),
    "ssl.ca.location": ("ssl.truststore.type=PEM, ssl.truststore.location",
                        lambda v: {"ssl.truststore.type": "PEM",
                                   "ssl.truststore.location": v}),
    "ssl.ca.pem": ("ssl.truststore.type=PEM, ssl.truststore.certificates",
                   lambda v: {"ssl.truststore.type": "PEM",
                              "ssl.truststore.certificates": v}),
    "ssl.certificate.location": (
        "ssl.keystore.type=PEM, ssl.keystore.certificate.chain (the file's text)",
        lambda v: {"ssl.keystore.type": "PEM",
                   "ssl.keystore.certificate.chain": _file("ssl.certificate.location", v)}),
    "ssl.certificate.pem": ("ssl.keystore.type=PEM, ssl.keystore.certificate.chain",
                            lambda v: {"ssl.keystore.type": "PEM",
                                       "ssl.keystore.certificate.chain": v}),
    "ssl.key.location": ("ssl.keystore.key (the file's text)",
                         lambda v: {"ssl.keystore.key": _file("ssl.key.location", v)}),
    "ssl.key.pem": ("ssl.keystore.key", lambda v: {"ssl.keystore.key": v}),
    "ssl.keystore.location": ("ssl.keystore.type=PKCS12, ssl.keystore.location",
                              lambda v: {"ssl.keystore.type": "PKCS12",
                                         "ssl.keystore.location": v}),
    "ssl.endpoint.identification.algorithm": (
        "ssl.endpoint.identification.algorithm (none: empty)", _identification),
}
"""librdkafka setting -> (what it becomes, the mapping); ``sasl.username`` and
``sasl.password`` become ``sasl.jaas.config`` (`KafkaSettings.spark_options`)."""


def _jaas_value(text: str) -> str:
    """A JAAS option value: double-quoted, backslash and quote escaped (the Java client
    parses ``sasl.jaas.config`` with a StreamTokenizer)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


@dataclass(frozen=True, slots=True)
class KafkaSettings:
    """librdkafka-style client settings (``security.protocol``, ``sasl.username``,
    ``ssl.ca.location`` ...), as the user wrote them."""

    values: tuple[tuple[str, str], ...] = ()

    @classmethod
    def read(cls, environ: Mapping[str, str], path: str | None) -> KafkaSettings:
        """The settings of ``FLATAVRO_KAFKA_*`` variables and of ``--kafka-config`` (the file
        wins), checked to have a Spark equivalent.

        Raises:
            JobError: an unreadable file, a bad line, a setting without a mapping (named).
        """
        try:
            found = client_settings(environ, path)
        except KafkaConfigError as exc:
            raise JobError(str(exc)) from exc
        settings = cls(tuple(sorted(found.items())))
        settings.spark_options()
        return settings

    def librdkafka(self) -> dict[str, str]:
        """The settings as librdkafka takes them (the driver's broker check)."""
        return dict(self.values)

    def shown(self) -> dict[str, object]:
        """The settings for a log line or an error: secrets replaced by ``**********``."""
        return redacted(self.librdkafka())

    def spark_options(self) -> dict[str, str]:
        """The options of Spark's Kafka source (``kafka.``-prefixed Java client settings).

        Raises:
            JobError: a setting without a Java equivalent, a SASL mechanism without its user
                name and password (each named).
        """
        values = self.librdkafka()
        java: dict[str, str] = {}
        for name, value in values.items():
            if name in _OWNED:
                raise JobError(f"Kafka setting {name} is set by the job: {_OWNED[name]}")
            if name in SAME_NAME:
                java[name] = value
            elif name in MAPPED:
                java |= MAPPED[name][1](value)
            elif name not in ("sasl.username", "sasl.password"):
                raise JobError(f"Kafka setting {name} has no mapping to Spark's Kafka client "
                               f"(docs/streaming.md#secured-kafka lists those that do); "
                               f"remove it")
        java |= _jaas(values, mechanism=java.get("sasl.mechanism"))
        return {SPARK_PREFIX + name: value for name, value in java.items()}


def _jaas(values: Mapping[str, str], *, mechanism: str | None) -> dict[str, str]:
    """``sasl.jaas.config`` from ``sasl.username`` and ``sasl.password`` with the login module
    of the mechanism (which must be named: both clients' default is GSSAPI)."""
    user, password = values.get("sasl.username"), values.get("sasl.password")
    if user is None and password is None:
        if mechanism is not None:
            raise JobError(f"Kafka setting sasl.mechanism={mechanism} needs sasl.username "
                           f"and sasl.password")
        return {}
    if user is None or password is None:
        raise JobError("Kafka settings sasl.username and sasl.password go together: set both")
    if mechanism is None:
        raise JobError(f"Kafka settings sasl.username and sasl.password need sasl.mechanism "
                       f"({', '.join(_LOGIN_MODULES)})")
    module = _LOGIN_MODULES[mechanism]
    return {"sasl.jaas.config": f"{module} required username={_jaas_value(user)} "
                                f"password={_jaas_value(password)};"}
