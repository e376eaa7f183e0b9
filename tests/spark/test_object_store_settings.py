"""S3A's settings from the AWS environment and the refusals before a JVM starts (pure: no
JVM, no server; the jobs on a real S3 server are in test_object_store.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from spark_jobs.errors import JobError
from spark_jobs.settings import object_store

PROVIDER = "software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider"
KEYS = {"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "wJalr/K7+EXAMPLE"}


def test_only_s3a_paths_count() -> None:
    assert object_store.s3a_paths(["s3a://lake/t", None, "/tmp/t", "s3://lake/t", "",
                                   "s3a://lake/c"]) == ["s3a://lake/t", "s3a://lake/c"]


def test_a_custom_endpoint_is_path_style_and_plain_http_without_tls() -> None:
    env = {**KEYS, "AWS_ENDPOINT_URL": "http://127.0.0.1:8333"}
    assert object_store.spark_settings(env, executors=False) == {
        "spark.hadoop.fs.s3a.aws.credentials.provider": PROVIDER,
        "spark.hadoop.fs.s3a.endpoint": "http://127.0.0.1:8333",
        "spark.hadoop.fs.s3a.path.style.access": "true",
        "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
        "spark.hadoop.fs.s3a.endpoint.region": "us-east-1"}


def test_the_s3_endpoint_variable_wins_and_the_region_is_kept() -> None:
    env = {"AWS_ENDPOINT_URL": "http://other:9000", "AWS_ENDPOINT_URL_S3": "https://s3.example",
           "AWS_DEFAULT_REGION": "eu-west-1"}
    settings = object_store.spark_settings(env, executors=False)
    assert settings["spark.hadoop.fs.s3a.endpoint"] == "https://s3.example"
    assert settings["spark.hadoop.fs.s3a.connection.ssl.enabled"] == "true"
    assert settings["spark.hadoop.fs.s3a.endpoint.region"] == "eu-west-1"


def test_aws_itself_needs_no_endpoint_and_no_secret_in_the_settings() -> None:
    settings = object_store.spark_settings({**KEYS, "AWS_REGION": "us-west-2"}, executors=False)
    assert settings == {"spark.hadoop.fs.s3a.aws.credentials.provider": PROVIDER,
                        "spark.hadoop.fs.s3a.endpoint.region": "us-west-2"}


def test_executors_of_a_cluster_get_the_credential_variables_that_are_set() -> None:
    env = {**KEYS, "AWS_PROFILE": "", "AWS_REGION": "us-west-2", "HOME": "/root"}
    settings = object_store.spark_settings(env, executors=True)
    assert {k: v for k, v in settings.items() if k.startswith("spark.executorEnv.")} == {
        "spark.executorEnv.AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
        "spark.executorEnv.AWS_SECRET_ACCESS_KEY": "wJalr/K7+EXAMPLE"}


@pytest.mark.parametrize(("env", "message"), [
    ({"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE"},
     "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not"),
    ({"AWS_SECRET_ACCESS_KEY": "x"}, "AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not"),
    ({"AWS_ENDPOINT_URL": "127.0.0.1:8333"},
     "AWS_ENDPOINT_URL=127.0.0.1:8333 is not an http.s. URL"),
    ({"AWS_ENDPOINT_URL_S3": "ftp://store"}, "AWS_ENDPOINT_URL_S3=ftp://store is not an http"),
])
def test_settings_that_cannot_work_are_refused(env: dict[str, str], message: str) -> None:
    with pytest.raises(JobError, match=message):
        object_store.check_environment(env)


def test_usable_settings_pass() -> None:
    object_store.check_environment({})  # the SDK's chain: a profile or the machine's role
    object_store.check_environment({**KEYS, "AWS_ENDPOINT_URL": "https://s3.example:443"})


def test_missing_hadoop_aws_names_make_setup(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLATAVRO_JVM_CACHE", str(tmp_path))
    with pytest.raises(JobError, match=r"hadoop-aws .* is not in .*: run `make setup`"):
        object_store.hadoop_aws_jars()
    (tmp_path / "hadoop-aws").mkdir()
    (tmp_path / "hadoop-aws" / "hadoop-aws-3.4.1.jar").write_bytes(b"")
    assert object_store.hadoop_aws_jars() == [str(tmp_path / "hadoop-aws" / "hadoop-aws-3.4.1.jar")]
