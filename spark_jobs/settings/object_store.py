"""S3-compatible object storage for ``s3a://`` paths: hadoop-aws's jars, S3A's settings from
the standard AWS environment, and a probe that names what is wrong in one line.

Credentials never pass through the job's arguments: S3A asks the AWS SDK's default chain,
which reads ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY`` (and ``AWS_SESSION_TOKEN``), a web
identity token (EKS), a profile (``AWS_PROFILE``, ``~/.aws/credentials`` and ``config``) or the
machine's role; on a cluster the driver's credential variables reach the executors as
``spark.executorEnv.*`` (redacted in Spark's UI and event log). ``AWS_ENDPOINT_URL_S3`` (else
``AWS_ENDPOINT_URL``) points at an S3-compatible server (path-style requests), ``AWS_REGION``
(else ``AWS_DEFAULT_REGION``) names the region.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from spark_jobs.errors import JobError, one_line

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["SCHEME", "s3a_paths", "hadoop_aws_jars", "check_environment", "spark_settings",
           "check_paths"]

SCHEME = "s3a://"
_ROOT = Path(__file__).resolve().parents[2]
_PROVIDER = "software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider"
_CUSTOM_ENDPOINT_REGION = "us-east-1"  # S3-compatible servers ignore it; SigV4 needs one
_CREDENTIALS_FIX = ("set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE "
                    "(~/.aws/credentials)")
# What executors on other machines need to find the same credentials (spark.executorEnv.*;
# Spark's redaction hides the secret and the token in its UI and event log).
_EXECUTOR_VARIABLES = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                       "AWS_PROFILE", "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE")
# The probe's file system gives up at the first failure (the jobs keep S3A's retries).
_PROBE_SETTINGS = {"fs.s3a.retry.limit": "0", "fs.s3a.attempts.maximum": "0",
                   "fs.s3a.connection.establish.timeout": "5s", "fs.s3a.bucket.probe": "2"}


def s3a_paths(paths: Iterable[str | None]) -> list[str]:
    """The ``s3a://`` paths among `paths` (None and other schemes left out)."""
    return [p for p in paths if p and p.startswith(SCHEME)]


def hadoop_aws_jars() -> list[str]:
    """hadoop-aws and the AWS SDK modules deploy/jvm/fetch.sh put in the cache
    (``FLATAVRO_JVM_CACHE`` or .cache/jvm, folder ``hadoop-aws``).

    Raises:
        JobError: the cache lacks hadoop-aws (run ``make setup``).
    """
    cache = Path(os.environ.get("FLATAVRO_JVM_CACHE", _ROOT / ".cache" / "jvm")) / "hadoop-aws"
    jars = sorted(str(p) for p in cache.glob("*.jar"))
    if not any(Path(j).name.startswith("hadoop-aws-") for j in jars):
        raise JobError(f"hadoop-aws (for s3a:// paths) is not in {cache}: run `make setup` "
                       f"(deploy/jvm/fetch.sh hadoop-aws)")
    return jars


def _endpoint(environ: Mapping[str, str]) -> tuple[str, str] | None:
    """The custom endpoint and the variable that set it (None: AWS's own S3)."""
    for name in ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"):
        if environ.get(name):
            return environ[name], name
    return None


def check_environment(environ: Mapping[str, str]) -> None:
    """Refuse AWS settings that cannot work, before a JVM starts.

    Raises:
        JobError: a key id without its secret (or the reverse), an endpoint that is not an
            http(s) URL.
    """
    key, secret = environ.get("AWS_ACCESS_KEY_ID"), environ.get("AWS_SECRET_ACCESS_KEY")
    if bool(key) != bool(secret):
        have, lack = (("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY") if key
                      else ("AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID"))
        raise JobError(f"{have} is set but {lack} is not: set both, or neither to use "
                       f"AWS_PROFILE (~/.aws/credentials)")
    endpoint = _endpoint(environ)
    if endpoint is not None:
        url, name = endpoint
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise JobError(f"{name}={url} is not an http(s) URL: set it like "
                           f"https://s3.example.com or http://127.0.0.1:8333")


def spark_settings(environ: Mapping[str, str], *, executors: bool) -> dict[str, str]:
    """S3A's Spark settings (``spark.hadoop.fs.s3a.*``) for `environ`: the SDK's default
    credential chain; with a custom endpoint, that endpoint, path-style requests and TLS only
    for https; the region when one is set (a custom endpoint gets us-east-1 otherwise). With
    `executors` (a cluster: they do not share the driver's environment), the AWS credential
    variables that are set, as the executors' environment."""
    settings = {"spark.hadoop.fs.s3a.aws.credentials.provider": _PROVIDER}
    if executors:
        settings |= {f"spark.executorEnv.{name}": environ[name]
                     for name in _EXECUTOR_VARIABLES if environ.get(name)}
    region = environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION")
    endpoint = _endpoint(environ)
    if endpoint is not None:
        url = endpoint[0]
        settings |= {"spark.hadoop.fs.s3a.endpoint": url,
                     "spark.hadoop.fs.s3a.path.style.access": "true",
                     "spark.hadoop.fs.s3a.connection.ssl.enabled":
                         str(url.startswith("https://")).lower()}
        region = region or _CUSTOM_ENDPOINT_REGION
    if region:
        settings["spark.hadoop.fs.s3a.endpoint.region"] = region
    return settings


def check_paths(spark: SparkSession, paths: Iterable[str]) -> None:
    """Reach the bucket of each ``s3a://`` path once, without S3A's retries.

    Raises:
        JobError: hadoop-aws not on the classpath, no credentials, credentials refused, no
            such bucket, or an endpoint that does not answer: one line naming it and the fix.
    """
    from py4j.protocol import Py4JJavaError

    context = spark.sparkContext
    jvm, jsc = context._jvm, context._jsc
    if jvm is None or jsc is None:
        raise JobError("the Spark session is stopped")
    for bucket in dict.fromkeys(urlsplit(p).netloc for p in paths):
        conf = jvm.org.apache.hadoop.conf.Configuration(jsc.hadoopConfiguration())
        for name, value in _PROBE_SETTINGS.items():
            conf.set(name, value)
        try:
            fs = jvm.org.apache.hadoop.fs.FileSystem.newInstance(
                jvm.java.net.URI.create(f"{SCHEME}{bucket}/"), conf)
            try:
                fs.listStatus(jvm.org.apache.hadoop.fs.Path(f"{SCHEME}{bucket}/"))
            finally:
                fs.close()
        except Py4JJavaError as exc:
            endpoint = conf.get("fs.s3a.endpoint") or "AWS S3"
            raise JobError(_reason(_java_chain(exc.java_exception), bucket=bucket,
                                   endpoint=str(endpoint))) from exc


def _java_chain(throwable: Any) -> str:
    """Every class name and message of a Java exception and its causes, on one line."""
    parts: list[str] = []
    while throwable is not None and len(parts) < 10:
        parts.append(f"{throwable.getClass().getName()}: {throwable.getMessage()}")
        throwable = throwable.getCause()
    return " | ".join(parts)


def _reason(chain: str, *, bucket: str, endpoint: str) -> str:
    """The one line for a failed probe of `bucket` at `endpoint`, from the Java `chain`."""
    where = f"s3a://{bucket} at {endpoint}"
    if "S3AFileSystem not found" in chain:
        return ("hadoop-aws is not on Spark's classpath: run the job with the jars of "
                "deploy/jvm/fetch.sh hadoop-aws (deploy/spark/submit.sh adds them)")
    if "NoAuthWithAWSException" in chain or "Unable to load credentials" in chain:
        return f"no AWS credentials for {where}: {_CREDENTIALS_FIX}"
    if any(s in chain for s in ("UnknownStoreException", "NoSuchBucket")):
        return f"the bucket {bucket} does not exist at {endpoint}: create it, or fix the path"
    if status := re.search(r"Status Code: (\d+)[^)]*\):?\s*(\w*)", chain):
        if status[1] in ("401", "403"):
            return (f"{where} refused the credentials (HTTP {status[1]} {status[2]}): "
                    f"{_CREDENTIALS_FIX}")
        return f"cannot reach {where}: HTTP {status[1]} {status[2]}"
    if unreachable := re.search(r"(UnknownHostException|ConnectException|Connection refused"
                                r"|connect timed out|Unable to execute HTTP request)", chain):
        cause = re.search(r"failed: ([^:|]+)", chain)
        return (f"the object store {endpoint} does not answer "
                f"({cause[1].strip() if cause else unreachable[1]}): start it, or fix "
                f"AWS_ENDPOINT_URL")
    return f"cannot reach {where}: {one_line(Exception(chain.split(' | ')[0]))}"
