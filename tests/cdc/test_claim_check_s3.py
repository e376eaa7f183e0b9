"""Claim-check objects on S3 (``claim-check-storage-uri=s3://bucket/prefix?...``): TiCDC's own
claim-check objects (golden/large_message/v9.0.0-beta.2.pre) uploaded to a real SeaweedFS
under a prefix convert to the rows the same objects give from file://, with the endpoint and
credentials in TiDB's URI options or in the AWS variables; a missing object, refused
credentials, a missing bucket and an endpoint that does not answer are refused naming what
and why, never the URI's secrets. The URI parsing, redaction and refusals that need no store
run in the fast tier."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from service.cdc.errors import MessageFormatError
from service.cdc.events import SourceMessage
from service.cdc.large_message import Compression, LargeMessages
from service.codec import claim_check
from service.codec.claim_check import (
    READ_ATTEMPTS,
    ClaimCheckStorageError,
    ClaimCheckStorageUnavailableError,
    S3Storage,
    checked_storage,
    prefetch,
    shown_uri,
    whole,
)
from tests.cdc.test_large_messages import (
    GOLDEN,
    _bytes,
    _claim_checks,
    _convert,
    _message,
    _settings,
    _vectors,
)
from tests.support.cdc import Harness
from tests.support.harness import free_port
from tests.support.object_store import _AWS_VARIABLES, ObjectStore

BUCKET, PREFIX = "claims", "ticdc/v9.0.0-beta.2.pre"
SECRET = "s3cr3t/+key-93be"  # ObjectStore's: '/' and '+' as AWS secrets may have


@pytest.fixture(scope="module")
def uploaded(object_store: ObjectStore) -> ObjectStore:
    """Every recorded claim-check object in the bucket, under PREFIX/<label>/."""
    object_store.bucket(BUCKET)
    client = _client(object_store)
    for stored in sorted((GOLDEN / "claim_check_storage").glob("*/*")):
        client.put_object(Bucket=BUCKET, Key=f"{PREFIX}/{stored.parent.name}/{stored.name}",
                          Body=stored.read_bytes())
    return object_store


@pytest.fixture
def no_aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """None of the machine's AWS settings: what a test gives is all there is."""
    for name in _AWS_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    yield


def _uri(store: ObjectStore, label: str, *, secret: str = SECRET, **more: str) -> str:
    """The storage's URI with endpoint and credentials in TiDB's options (the secret as
    written, '+' and '/' unescaped, as TiCDC's users write it)."""
    query = "&".join([f"endpoint={store.endpoint}", f"access-key={store.access_key}",
                      f"secret-access-key={secret}", *(f"{k}={v}" for k, v in more.items())])
    return f"s3://{BUCKET}/{PREFIX}/{label}?{query}"


def _s3_settings(label: str, uri: str) -> LargeMessages:
    return LargeMessages(Compression(label.split("_")[2]), uri, label.endswith("raw-true"))


@pytest.mark.parametrize("credentials", ["uri", "env"])
@pytest.mark.parametrize("label", _claim_checks())
def test_claim_checks_on_s3_convert_as_from_a_directory(
        label: str, credentials: str, uploaded: ObjectStore, no_aws: None,
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    if credentials == "uri":
        uri = _uri(uploaded, label)
    else:  # the standard chain: AWS_ENDPOINT_URL and the key pair in the environment
        for name, value in uploaded.env().items():
            if name.startswith("AWS_"):
                monkeypatch.setenv(name, value)
        uri = f"s3://{BUCKET}/{PREFIX}/{label}/"
    rows = _convert(Harness(tmp_path / "s3.db"), label, _s3_settings(label, uri))
    assert rows == _convert(Harness(tmp_path / "file.db"), label,
                            _settings(label, GOLDEN / "claim_check_storage"))
    assert len(rows) == 4 and len(rows[1]["value"]["big"]) == 8000


def test_a_missing_object_names_the_location_bucket_and_key(uploaded: ObjectStore,
                                                           no_aws: None) -> None:
    label = "canal-json_claim-check_none_raw-false"
    uri = _uri(uploaded, "elsewhere")  # a prefix with no objects
    message = _message(label, 1)
    with pytest.raises(MessageFormatError) as caught:
        whole(message, _s3_settings(label, uri), framed=False)
    location = caught.value.details["location"]
    name = location.rsplit("/", 1)[1]
    text = str(caught.value)
    assert f"claim-check object {location!r} is not in the storage" in text
    assert f"bucket {BUCKET}, key {PREFIX}/elsewhere/{name} does not exist" in text
    assert caught.value.details["key"] == f"{PREFIX}/elsewhere/{name}"
    assert caught.value.details["bucket"] == BUCKET


def test_refused_credentials_say_access_denied_without_the_secret(uploaded: ObjectStore,
                                                                 no_aws: None) -> None:
    label = "canal-json_claim-check_none_raw-false"
    wrong = "wr0ng/+secret-4f1c"
    token = "t0ken-that-must-not-show"
    uri = _uri(uploaded, label, secret=wrong, session_token=token)
    with pytest.raises(ClaimCheckStorageUnavailableError) as caught:
        whole(_message(label, 1), _s3_settings(label, uri), framed=False)
    shown = f"{caught.value} {caught.value.to_dict()}"
    assert "access denied to s3://claims/" in shown and f"bucket {BUCKET}" in shown
    for secret in (wrong, quote(wrong, safe=""), token, uploaded.access_key, SECRET):
        assert secret not in shown


def test_a_missing_bucket_is_named(uploaded: ObjectStore, no_aws: None) -> None:
    label = "canal-json_claim-check_none_raw-false"
    uri = _uri(uploaded, label).replace(f"s3://{BUCKET}/", "s3://no-such-bucket/")
    with pytest.raises(ClaimCheckStorageUnavailableError,
                       match="the bucket no-such-bucket does not exist at http://127.0.0.1:"):
        whole(_message(label, 1), _s3_settings(label, uri), framed=False)


def test_an_endpoint_that_does_not_answer_is_retried_then_named(
        object_store: ObjectStore, no_aws: None, monkeypatch: pytest.MonkeyPatch) -> None:
    label = "canal-json_claim-check_none_raw-false"
    down = f"http://127.0.0.1:{free_port()}"
    uri = f"s3://{BUCKET}/x?endpoint={down}&access-key=a&secret-access-key={SECRET}"
    pauses: list[float] = []
    monkeypatch.setattr(claim_check, "_pause", pauses.append)
    with pytest.raises(ClaimCheckStorageUnavailableError) as caught:
        whole(_message(label, 1), _s3_settings(label, uri), framed=False)
    assert [p > 0 for p in pauses] == [True] * (READ_ATTEMPTS - 1) + [False]
    text = str(caught.value)
    assert f"cannot be read from s3://{BUCKET}/x/" in text
    assert f"at {down} after {READ_ATTEMPTS} attempts: Could not connect to the endpoint" in text
    assert SECRET not in text


def test_objects_read_ahead_are_what_whole_takes(uploaded: ObjectStore, no_aws: None) -> None:
    """The bridge's read-ahead: `prefetch` reads a batch's objects in the background; `whole`
    takes each once (here after the objects are gone from the bucket), then reads again."""
    label = "canal-json_claim-check_lz4_raw-false"
    client = _client(uploaded)
    keys = []
    for stored in sorted((GOLDEN / "claim_check_storage" / label).iterdir()):
        keys.append(f"{PREFIX}/ahead/{stored.name}")
        client.put_object(Bucket=BUCKET, Key=keys[-1], Body=stored.read_bytes())
    settings = _s3_settings(label, _uri(uploaded, "ahead"))
    messages = [(_bytes(m, "key"), _bytes(m, "value")) for m in _vectors()
                if m["label"] == label]
    assert prefetch(messages, settings, framed=False) == len(keys) == 3
    assert prefetch(messages, settings, framed=False) == 0  # already on their way
    for future in list(claim_check._ahead.values()):
        future.result()
    for key in keys:
        client.delete_object(Bucket=BUCKET, Key=key)
    made = [whole(SourceMessage(n, k, v), settings, framed=False)
            for n, (k, v) in enumerate(messages)]
    assert [b'"big"' in (m.value or b"") and b"claimCheckLocation" not in (m.value or b"")
            for m in made] == [True] * 4
    with pytest.raises(MessageFormatError, match="is not in the storage"):
        whole(SourceMessage(1, *messages[1]), settings, framed=False)


def _client(store: ObjectStore) -> Any:
    import boto3

    return boto3.session.Session().client(
        "s3", endpoint_url=store.endpoint, region_name="us-east-1",
        aws_access_key_id=store.access_key, aws_secret_access_key=store.secret_key)


# --- no store needed -----------------------------------------------------------------------

def test_tidb_s3_options_are_read_as_tidb_reads_them() -> None:
    storage = checked_storage(
        "s3://bkt/a/b/?Endpoint=http://minio:9000/&REGION=eu-west-1&access_key=AK"
        "&secret-access-key=s/+k&session-token=T&force-path-style=false&sse=aws:kms"
        "&region=ignored")
    assert isinstance(storage, S3Storage)
    assert (storage.bucket, storage.prefix, storage.key("o.json")) == ("bkt", "a/b",
                                                                       "a/b/o.json")
    assert (storage.endpoint, storage.region) == ("http://minio:9000", "eu-west-1")
    assert (storage.access_key, storage.secret_access_key, storage.session_token) == (
        "AK", "s/+k", "T")
    assert storage.addressing_style() == "virtual"
    assert "s/+k" not in repr(storage) and "AK" not in repr(storage)
    assert checked_storage("s3://bkt?endpoint=http://minio:9000").addressing_style() == "path"
    assert checked_storage("s3://bkt/p").key("o") == "p/o"


def test_secrets_are_hidden_wherever_the_uri_is_shown() -> None:
    uri = ("s3://bkt/p?endpoint=http://minio:9000&access-key=AKIAXYZ&Secret_Access_Key=s/+k"
           "&session-token=TOK&region=r")
    assert shown_uri(uri) == ("s3://bkt/p?endpoint=http://minio:9000&access-key=**********"
                              "&Secret_Access_Key=**********&session-token=**********"
                              "&region=r")
    assert shown_uri("file:///mnt/claims") == "file:///mnt/claims"
    with pytest.raises(ClaimCheckStorageError) as caught:
        checked_storage(uri.replace("endpoint=http://minio:9000", "endpoint=minio"))
    assert "the endpoint must be a URL with a scheme and a host" in str(caught.value)
    assert "AKIAXYZ" not in f"{caught.value} {caught.value.to_dict()}"


@pytest.mark.parametrize(("uri", "text"), [
    ("gs://bucket/claims", "gs is not supported"),
    ("s3:///claims", "name the bucket as s3://bucket/prefix"),
    ("s3://bkt/p?access-key=AK", "give access-key and secret-access-key together"),
    ("s3://bkt/p?role-arn=arn:aws:iam::1:role/r", "flatavro does not assume roles"),
    ("file://host/claims", "not a file:///path directory"),
])
def test_storages_flatavro_cannot_read_are_refused(uri: str, text: str) -> None:
    with pytest.raises(ClaimCheckStorageError, match=text):
        checked_storage(uri)


def test_s3_without_boto3_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "boto3", None)  # import boto3 raises ImportError
    with pytest.raises(ClaimCheckStorageError, match=r"pip install 'flatavro\[aws\]'"):
        checked_storage("s3://bkt/p?secret-access-key=S&access-key=A")

