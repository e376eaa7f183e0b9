"""The bridge's extra librdkafka settings: variables, a key=value file over them, settings the
bridge owns refused, secrets kept out of what is shown; and the bound on librdkafka's close."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from service.bridge.clients import finished_within
from service.bridge.kafka_settings import kafka_settings
from service.kafka_client.errors import KafkaConfigError
from service.kafka_client.settings import redacted


def test_variables_then_the_file_over_them(tmp_path: Path) -> None:
    config = tmp_path / "kafka.properties"
    config.write_text("# TLS\nsecurity.protocol = SASL_SSL\n\nsasl.password=s3cret\n")
    environ = {"FLATAVRO_KAFKA_SECURITY_PROTOCOL": "SSL", "FLATAVRO_KAFKA_SASL_MECHANISM":
               "PLAIN", "FLATAVRO_PORT": "1"}
    assert kafka_settings(environ, str(config)) == {
        "security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", "sasl.password": "s3cret"}
    assert kafka_settings(environ, None) == {"security.protocol": "SSL",
                                             "sasl.mechanism": "PLAIN"}


def test_bad_lines_and_owned_settings_are_refused(tmp_path: Path) -> None:
    config = tmp_path / "kafka.properties"
    config.write_text("security.protocol=SSL\nnot a setting\n")
    with pytest.raises(KafkaConfigError, match="line 2: expected key=value") as bad:
        kafka_settings({}, str(config))
    assert bad.value.code == "invalid_kafka_config"
    with pytest.raises(KafkaConfigError, match="isolation.level is set by the bridge"):
        kafka_settings({"FLATAVRO_KAFKA_ISOLATION_LEVEL": "read_uncommitted"}, None)
    with pytest.raises(KafkaConfigError, match="cannot read --kafka-config"):
        kafka_settings({}, str(tmp_path / "missing"))


def test_secrets_are_redacted() -> None:
    shown = redacted({"sasl.password": "p", "ssl.key.password": "k", "sasl.username": "u",
                      "sasl.oauthbearer.client.secret": "s", "security.protocol": "SSL"})
    assert shown == {"sasl.password": "**********", "ssl.key.password": "**********",
                     "sasl.username": "u", "sasl.oauthbearer.client.secret": "**********",
                     "security.protocol": "SSL"}


def test_a_blocked_close_does_not_keep_the_bridge_from_exiting() -> None:
    """librdkafka's consumer close can block for good once the brokers are gone: the bridge
    waits a bounded time, then exits without it (and what the call raises still surfaces)."""
    release = threading.Event()
    try:
        assert finished_within(release.wait, 0.2) is False  # still blocked: left behind
    finally:
        release.set()
    assert finished_within(lambda: None, 5) is True

    def broken() -> None:
        raise KafkaConfigError("boom")

    with pytest.raises(KafkaConfigError, match="boom"):
        finished_within(broken, 5)
