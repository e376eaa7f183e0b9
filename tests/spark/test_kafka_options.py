"""The Spark jobs' Kafka settings without a JVM or a broker: the bridge's librdkafka names
(``--kafka-config`` over ``FLATAVRO_KAFKA_*``) mapped to Spark's ``kafka.`` options, a setting
without a mapping refused in one line naming it, the JAAS value escaped, secrets redacted in
what the jobs show and matched by Spark's redaction pattern; ``FLATAVRO_API_KEY`` as the
registry's bearer token."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from spark_jobs.decoding.registry import registry_settings
from spark_jobs.errors import JobError
from spark_jobs.session import REDACTION_REGEX
from spark_jobs.settings.config import JobConfig, parse_args, parse_stream_args
from spark_jobs.settings.kafka import MAPPED, SAME_NAME, KafkaSettings

SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"
STREAM_ARGS = ["--topic", "t", "--bootstrap-servers", "127.0.0.1:9", "--registry-url",
               "http://127.0.0.1:9", "--table-path", "/tmp/t", "--checkpoint", "/tmp/c"]
BULK_ARGS = ["--topic", "t", "--bootstrap-servers", "127.0.0.1:9", "--registry-url",
             "http://127.0.0.1:9", "--output", "/tmp/o"]


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for name in list(os.environ):
        if name.upper().startswith(("FLATAVRO_KAFKA_", "FLATAVRO_REGISTRY_", "FLATAVRO_API")):
            monkeypatch.delenv(name)


def options(**settings: str) -> dict[str, str]:
    return KafkaSettings(tuple(settings.items())).spark_options()


def test_sasl_ssl_with_scram_and_a_ca_file(tmp_path: Path) -> None:
    config = tmp_path / "kafka.properties"
    config.write_text("# as for the bridge\nsecurity.protocol=sasl_ssl\n"
                      "sasl.mechanism=SCRAM-SHA-512\nsasl.password=pa\"ss\\word\n")
    environ = {"FLATAVRO_KAFKA_SASL_USERNAME": "alice", "FLATAVRO_KAFKA_SSL_CA_LOCATION":
               "/etc/ca.pem", "FLATAVRO_KAFKA_SASL_PASSWORD": "overridden-by-the-file"}
    settings = KafkaSettings.read(environ, str(config))
    assert settings.spark_options() == {
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": "SCRAM-SHA-512",
        "kafka.sasl.jaas.config": f'{SCRAM} required username="alice" '
                                  f'password="pa\\"ss\\\\word";',
        "kafka.ssl.truststore.type": "PEM",
        "kafka.ssl.truststore.location": "/etc/ca.pem"}
    assert settings.shown() == {"sasl.mechanism": "SCRAM-SHA-512",
                                "sasl.password": "**********", "sasl.username": "alice",
                                "security.protocol": "sasl_ssl",
                                "ssl.ca.location": "/etc/ca.pem"}


def test_plain_the_librdkafka_alias_and_client_certificates(tmp_path: Path) -> None:
    (tmp_path / "client.pem").write_text("CERT")
    (tmp_path / "client.key").write_text("KEY")
    assert options(**{"sasl.mechanisms": "PLAIN", "sasl.username": "u", "sasl.password": "p",
                      "ssl.certificate.location": str(tmp_path / "client.pem"),
                      "ssl.key.location": str(tmp_path / "client.key"),
                      "ssl.key.password": "kp", "ssl.endpoint.identification.algorithm":
                          "none", "client.id": "job"}) == {
        "kafka.sasl.mechanism": "PLAIN",
        "kafka.sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule "
                                  'required username="u" password="p";',
        "kafka.ssl.keystore.type": "PEM", "kafka.ssl.keystore.certificate.chain": "CERT",
        "kafka.ssl.keystore.key": "KEY", "kafka.ssl.key.password": "kp",
        "kafka.ssl.endpoint.identification.algorithm": "", "kafka.client.id": "job"}


@pytest.mark.parametrize(("settings", "message"), [
    ({"enable.ssl.certificate.verification": "false"},
     "Kafka setting enable.ssl.certificate.verification has no mapping to Spark's Kafka "
     "client (docs/streaming.md#secured-kafka lists those that do); remove it"),
    ({"sasl.mechanism": "OAUTHBEARER"},
     "Kafka setting sasl.mechanism=OAUTHBEARER has no mapping to Spark's Kafka client here "
     "(mapped: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)"),
    ({"sasl.mechanism": "PLAIN"},
     "Kafka setting sasl.mechanism=PLAIN needs sasl.username and sasl.password"),
    ({"sasl.username": "u"}, "Kafka settings sasl.username and sasl.password go together: "
                             "set both"),
    ({"sasl.username": "u", "sasl.password": "p"},
     "Kafka settings sasl.username and sasl.password need sasl.mechanism (PLAIN, "
     "SCRAM-SHA-256, SCRAM-SHA-512)"),
    ({"security.protocol": "TLS"},
     "Kafka setting security.protocol=TLS is not one of PLAINTEXT, SSL, SASL_PLAINTEXT, "
     "SASL_SSL"),
    ({"bootstrap.servers": "h:1"},
     "Kafka setting bootstrap.servers is set by the job: pass --bootstrap-servers"),
    ({"isolation.level": "read_uncommitted"},
     "Kafka setting isolation.level is set by the job: the jobs read what transactions "
     "committed (read_committed)"),
    ({"ssl.key.location": "/nonexistent/key.pem"},
     "Kafka setting ssl.key.location: cannot read /nonexistent/key.pem"),
])
def test_a_setting_without_a_mapping_is_refused_naming_it(settings: dict[str, str],
                                                          message: str) -> None:
    with pytest.raises(JobError) as refused:
        options(**settings)
    assert str(refused.value).startswith(message)


def test_the_mapping_table_in_the_docs_lists_every_mapped_setting() -> None:
    docs = (Path(__file__).resolve().parents[2] / "docs" / "streaming.md").read_text()
    section = docs[docs.index("## Secured Kafka"):]
    table = section[:section.index("\n\n", section.index("| librdkafka"))]
    documented = set(re.findall(r"^\| `([a-z.]+)`", table, re.M))
    assert documented == {*MAPPED, *SAME_NAME, "sasl.username", "sasl.password"}


def test_both_jobs_take_kafka_config_and_refuse_a_bad_setting_in_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "kafka.properties"
    config.write_text("security.protocol=SASL_SSL\n")
    monkeypatch.setenv("FLATAVRO_KAFKA_SASL_MECHANISM", "SCRAM-SHA-256")
    monkeypatch.setenv("FLATAVRO_KAFKA_SASL_USERNAME", "u")
    monkeypatch.setenv("FLATAVRO_KAFKA_SASL_PASSWORD", "p")
    stream = parse_stream_args([*STREAM_ARGS, "--kafka-config", str(config)])
    bulk = parse_args([*BULK_ARGS, "--kafka-config", str(config)])
    assert stream.kafka == bulk.kafka
    assert stream.kafka.librdkafka() == {"security.protocol": "SASL_SSL", "sasl.mechanism":
                                         "SCRAM-SHA-256", "sasl.username": "u",
                                         "sasl.password": "p"}
    monkeypatch.setenv("FLATAVRO_KAFKA_SSL_ENGINE_LOCATION", "/x.so")
    for parse, args in ((parse_stream_args, STREAM_ARGS), (parse_args, BULK_ARGS)):
        with pytest.raises(SystemExit) as bad:
            parse(args)
        assert bad.value.code == 2
        lines = capsys.readouterr().err.strip().splitlines()
        assert len(lines) == 1 and "Kafka setting ssl.engine.location has no mapping" in \
            lines[0], lines


def test_redaction_covers_every_secret_option() -> None:
    """Spark redacts a configuration or an option whose name or value matches
    `spark.redaction.regex` (the UI, the event log, plan strings): the session sets it to
    cover the Kafka client's secrets (the end-to-end check reads an event log)."""
    spark_side = options(**{"sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "u",
                            "sasl.password": "p", "ssl.key.pem": "KEY",
                            "ssl.keystore.password": "k", "ssl.key.password": "kp"})
    secret = {"kafka.sasl.jaas.config", "kafka.ssl.keystore.key",
              "kafka.ssl.keystore.password", "kafka.ssl.key.password"}
    assert {name for name in spark_side if re.search(REDACTION_REGEX, name)} == secret


def test_the_api_key_is_the_bearer_token(monkeypatch: pytest.MonkeyPatch) -> None:
    source = JobConfig(topic="t", output="/o", service_url="http://127.0.0.1:9")
    assert registry_settings(source).registry_bearer_token is None
    monkeypatch.setenv("FLATAVRO_API_KEY", "k-1")
    token = registry_settings(source).registry_bearer_token
    assert token is not None and token.get_secret_value() == "k-1"
    monkeypatch.setenv("FLATAVRO_REGISTRY_BEARER_TOKEN", "other")
    with pytest.raises(JobError, match="FLATAVRO_API_KEY and FLATAVRO_REGISTRY_BEARER_TOKEN "
                                       r"\(or FLATAVRO_REGISTRY_USERNAME/_PASSWORD\) are both "
                                       "set: keep one"):
        registry_settings(source)
