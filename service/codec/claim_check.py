"""A message of a changefeed with large-message handling, made whole before it is decoded:
its value decompressed (``large-message-handle-compression``) and, when it carries a
claim-check location, replaced by the whole message read from the claim-check storage
(`service.cdc.large_message` says what TiCDC writes).

Storages (the changefeed's ``claim-check-storage-uri``, as TiCDC's consumer reads it):

* ``file:///DIR``: a directory the consumer reads (a mount of the changefeed's storage);
* ``s3://BUCKET/PREFIX?...``: the object ``PREFIX/<base name of the location>`` in BUCKET, read
  with boto3 (the ``aws`` extra, imported only for ``s3://``). The URI's query takes TiDB's
  external-storage options (br/pkg/storage: names case-insensitive, ``_`` for ``-``; a ``+``
  is a plus, not a space): ``endpoint``, ``region``, ``access-key``, ``secret-access-key``,
  ``session-token``, ``force-path-style``, ``profile``, ``provider``,
  ``use-accelerate-endpoint``; the write-only ones (``storage-class``, ``sse``, ``acl``, ...)
  are ignored, ``role-arn`` is refused. What the URI does not give comes from boto3's
  standard chain (``AWS_*`` variables such as ``AWS_ENDPOINT_URL``, a profile, an instance
  role). Path-style addressing unless the URI says otherwise, the endpoint is AWS's own or none
  is set (TiDB's default). One client per storage URI, kept for the process. `prefetch` (the
  bridge calls it per batch) reads a batch's objects ahead in background threads, so that
  `whole` takes them read instead of waiting one round trip per object.

A read that fails for a reason that may pass (a file read's OS error; S3: no connection, a
timeout, a 5xx, throttling) is tried `READ_ATTEMPTS` times. A missing object fails at once as
the message's problem (`MessageFormatError`, naming the location and, on S3, the bucket and
key). What fails every read of the storage (S3 refusing the credentials, no credentials, no
such bucket, the endpoint unreachable after the attempts) is `ClaimCheckStorageUnavailableError`:
not one message's fault, so a batch is not converted (the bridge stops, nothing committed)
rather than its messages set aside. The URI's secrets (``access-key``, ``secret-access-key``,
``session-token``) never appear in a message: storages are named by `shown_uri`."""

from __future__ import annotations

import os
import queue
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable
from concurrent.futures import CancelledError, Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlsplit, urlunsplit

from service.cdc.errors import MessageFormatError
from service.cdc.events import SourceMessage
from service.cdc.large_message import (
    Compression,
    LargeMessages,
    claim_check_location,
    decompressed_value,
    object_name,
    unwrapped,
)
from service.core.errors import InvalidInputError, ServiceError

__all__ = ["READ_ATTEMPTS", "ClaimCheckStorageError", "ClaimCheckStorageUnavailableError",
           "S3Storage", "checked_storage", "prefetch", "shown_uri", "storage_directory",
           "whole"]

READ_ATTEMPTS = 3
_RETRY_SECONDS = 0.2


def _pause(seconds: float) -> None:
    """Wait between read attempts (this module's own name for it: tests replace it without
    touching every other thread's ``time.sleep``)."""
    time.sleep(seconds)


_SECRET_OPTIONS = frozenset({"access-key", "secret-access-key", "session-token"})
_HIDDEN = "**********"
# Providers TiDB addresses virtual-hosted style (br/pkg/storage SetForcePathStyle).
_VIRTUAL_HOST_PROVIDERS = frozenset({"alibaba", "netease", "tencent"})
_AWS_DOMAIN = "amazonaws.com"
_CONNECT_SECONDS, _READ_SECONDS = 10.0, 60.0
_READERS = 8  # threads reading objects ahead (`prefetch`)
_AHEAD_LIMIT = 64  # objects read ahead and not yet taken: the oldest beyond are dropped
_THROTTLED = frozenset({"SlowDown", "Throttling", "ThrottlingException", "RequestLimitExceeded",
                        "TooManyRequestsException", "RequestThrottled", "RequestTimeout",
                        "InternalError", "ServiceUnavailable"})
_DENIED = frozenset({"AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch",
                     "ExpiredToken", "InvalidToken", "TokenRefreshRequired", "AllAccessDisabled",
                     "AccountProblem", "InvalidSecurity"})


class ClaimCheckStorageError(InvalidInputError):
    """A ``claim-check-storage-uri`` flatavro cannot read from."""

    code = "invalid_claim_check_storage"


class ClaimCheckStorageUnavailableError(ServiceError):
    """The claim-check storage refuses or does not answer reads of any object (credentials,
    bucket, endpoint): no message of the batch is at fault."""

    code = "claim_check_storage_unavailable"


@dataclass(frozen=True, slots=True, repr=False)
class S3Storage:
    """An ``s3://`` claim-check storage: where its objects are and how to reach them (shown
    by its URI with the secrets hidden)."""

    uri: str
    bucket: str
    prefix: str
    endpoint: str | None = None
    region: str | None = None
    access_key: str | None = None
    secret_access_key: str | None = None
    session_token: str | None = None
    force_path_style: bool | None = None
    profile: str | None = None
    accelerate: bool = False
    provider: str | None = None

    def __repr__(self) -> str:
        return f"S3Storage({shown_uri(self.uri)!r})"

    def key(self, name: str) -> str:
        """The key of the object `name`."""
        return f"{self.prefix}/{name}" if self.prefix else name

    def addressing_style(self) -> str:
        """boto3's ``addressing_style``: as the URI says, else TiDB's path style unless the
        provider or acceleration wants virtual hosts or the endpoint is AWS's own (none set
        in the URI or ``AWS_ENDPOINT_URL[_S3]``: AWS, where boto3 chooses)."""
        if self.force_path_style is not None:
            return "path" if self.force_path_style else "virtual"
        if self.accelerate or self.provider in _VIRTUAL_HOST_PROVIDERS or \
                self.provider == "aws":
            return "virtual"
        endpoint = self.endpoint or os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get(
            "AWS_ENDPOINT_URL")
        return "path" if endpoint and _AWS_DOMAIN not in endpoint else "auto"

    def secrets(self) -> list[str]:
        """The secret option values the URI gives (kept out of every message)."""
        return [s for s in (self.access_key, self.secret_access_key, self.session_token) if s]


def shown_uri(uri: str) -> str:
    """`uri` with the values of its secret options (``access-key``, ``secret-access-key``,
    ``session-token``) and any password written into it shown as ``**********``."""
    parts = urlsplit(uri)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{_HIDDEN}@{netloc.rsplit('@', 1)[1]}"
    if not parts.query:
        return urlunsplit(parts._replace(netloc=netloc))
    query = "&".join(
        f"{name}={_HIDDEN}" if _option_name(unquote(name)) in _SECRET_OPTIONS else
        (f"{name}={value}" if eq else name)
        for name, eq, value in (item.partition("=") for item in parts.query.split("&")))
    return urlunsplit(parts._replace(netloc=netloc, query=query))


def storage_directory(uri: str) -> Path:
    """The directory a ``file://`` claim-check storage URI names.

    Raises:
        ClaimCheckStorageError: another scheme, or a URI with a host.
    """
    parts = urlsplit(uri)
    if parts.scheme != "file" or parts.netloc not in ("", "localhost"):
        raise ClaimCheckStorageError(
            f"claim-check-storage-uri {shown_uri(uri)!r}: not a file:///path directory",
            uri=shown_uri(uri))
    return Path(unquote(parts.path))


def checked_storage(uri: str) -> Path | S3Storage:
    """The storage `uri` names: a ``file://`` directory or an `S3Storage` (its options checked
    and boto3 importable; nothing is read).

    Raises:
        ClaimCheckStorageError: a scheme flatavro does not read, options that do not go
            together, or ``s3://`` without boto3.
    """
    scheme = urlsplit(uri).scheme
    if scheme == "file":
        return storage_directory(uri)
    if scheme == "s3":
        storage = _s3_storage(uri)
        _boto3(storage)
        return storage
    raise ClaimCheckStorageError(
        f"claim-check-storage-uri {shown_uri(uri)!r}: flatavro reads claim-check objects from "
        f"file:///path (a mount of the changefeed's storage) or s3://bucket/prefix; "
        f"{scheme or 'a relative path'} is not supported", uri=shown_uri(uri))


def whole(message: SourceMessage, settings: LargeMessages, *, framed: bool) -> SourceMessage:
    """`message` as the changefeed would have written it without large-message handling
    (`framed`: values in the Open Protocol's framing): decompressed, a claim-check message
    replaced by its object, and with `settings.upstream_tidb_dsn` a handle-key-only message
    made whole from the upstream TiDB's rows at its commit ts.

    Raises:
        MessageFormatError: a value that does not decompress, a claim-check location without
            a configured storage, an object that is missing, unreadable or not what the
            settings say (each naming the location and why).
        ClaimCheckStorageError: a storage URI flatavro does not read.
        ClaimCheckStorageUnavailableError: a storage that refuses or does not answer reads.
        UpstreamTiDBUnavailableError: with `settings.upstream_tidb_dsn`, a handle-key-only
            message whose row cannot be read because TiDB does not answer
            (`service.codec.upstream`; a row not there is a `MessageFormatError`).
    """
    value = message.value
    if value is not None and settings.compression is not Compression.NONE:
        value = decompressed_value(value, settings.compression, framed=framed)
        message = SourceMessage(message.index, message.key, value)
    location = claim_check_location(message)
    if location is None:
        if settings.upstream_tidb_dsn:  # a handle-key-only message: its row from TiDB
            from service.codec.upstream import made_whole

            return made_whole(message, settings.upstream_tidb_dsn, framed=framed)
        return message
    if not settings.claim_check_storage_uri:
        raise MessageFormatError(
            f"the message carries the claim-check location {location!r} but no "
            f"claim-check-storage-uri is set: the row is in that object, not in the message",
            field="claimCheckLocation", location=location)
    name = object_name(location)
    storage = _storage(settings.claim_check_storage_uri)
    if isinstance(storage, S3Storage):
        stored = _taken(settings.claim_check_storage_uri, name)
        if stored is None:
            stored = _read_s3(storage, name, location=location)
    else:
        stored = _read(storage / name, location=location)
    key, full = unwrapped(stored, settings, location=location, framed=framed)
    return SourceMessage(message.index, message.key if key is None else key, full)


def _read(path: Path, *, location: str) -> bytes:
    for attempt in range(1, READ_ATTEMPTS + 1):
        try:
            return path.read_bytes()
        except FileNotFoundError:
            raise MessageFormatError(
                f"claim-check object {location!r} is not in the storage ({path} does not "
                f"exist)", field="claimCheckLocation", location=location) from None
        except OSError as exc:
            failure = exc
            _pause(_RETRY_SECONDS * attempt if attempt < READ_ATTEMPTS else 0)
    raise MessageFormatError(
        f"claim-check object {location!r} cannot be read from {path} after {READ_ATTEMPTS} "
        f"attempts: {failure.strerror or failure}", field="claimCheckLocation",
        location=location)


# --- s3:// ---------------------------------------------------------------------------------

_STORAGES: dict[str, Path | S3Storage] = {}
_CLIENTS: dict[str, Any] = {}
_LOCK = threading.Lock()


def _storage(uri: str) -> Path | S3Storage:
    found = _STORAGES.get(uri)
    if found is None:
        found = _STORAGES[uri] = checked_storage(uri)
    return found


def _option_name(name: str) -> str:
    """A query option's name as TiDB matches it (br/pkg/storage ExtractQueryParameters)."""
    return name.lower().replace("_", "-")


def _flag(value: str) -> bool | None:
    """Go's strconv.ParseBool; None for anything else (TiDB then keeps the default)."""
    if value in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if value in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    return None


def _s3_storage(uri: str) -> S3Storage:
    shown = shown_uri(uri)
    # TiDB's ParseRawURL: a secret key may hold '+', which stays a '+' (not a space).
    parts = urlsplit(uri.replace("+", "%2B"))
    if not parts.netloc or "@" in parts.netloc:
        raise ClaimCheckStorageError(
            f"claim-check-storage-uri {shown!r}: name the bucket as s3://bucket/prefix",
            uri=shown)
    options: dict[str, str] = {}
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        options.setdefault(_option_name(name), value)  # the first one, as TiDB takes
    for unsupported in ("role-arn", "external-id"):
        if options.get(unsupported):
            raise ClaimCheckStorageError(
                f"claim-check-storage-uri {shown!r}: flatavro does not assume roles "
                f"({unsupported}); give the role's credentials through the AWS variables or a "
                f"profile", uri=shown)
    endpoint = options.get("endpoint") or None
    if endpoint is not None:
        endpoint = endpoint.rstrip("/")
        where = urlsplit(endpoint)
        if not where.scheme or not where.netloc:
            raise ClaimCheckStorageError(
                f"claim-check-storage-uri {shown!r}: the endpoint must be a URL with a scheme "
                f"and a host, such as http://minio:9000", uri=shown)
    access, secret = options.get("access-key") or None, options.get("secret-access-key") or None
    if (access is None) != (secret is None) and not options.get("profile"):
        raise ClaimCheckStorageError(
            f"claim-check-storage-uri {shown!r}: give access-key and secret-access-key "
            f"together", uri=shown)
    return S3Storage(
        uri=uri, bucket=unquote(parts.netloc), prefix=unquote(parts.path).strip("/"),
        endpoint=endpoint, region=options.get("region") or None, access_key=access,
        secret_access_key=secret, session_token=options.get("session-token") or None,
        force_path_style=_flag(options.get("force-path-style", "")),
        profile=options.get("profile") or None,
        accelerate=bool(_flag(options.get("use-accelerate-endpoint", ""))),
        provider=(options.get("provider") or "").lower() or None)


def _boto3(storage: S3Storage) -> Any:
    try:
        import boto3
        from botocore.config import Config
    except ImportError:
        raise ClaimCheckStorageError(
            f"claim-check-storage-uri {shown_uri(storage.uri)!r}: reading claim-check objects "
            f"from S3 needs boto3: pip install 'flatavro[aws]'",
            uri=shown_uri(storage.uri)) from None
    return boto3, Config


def _client(storage: S3Storage) -> Any:
    """The storage's S3 client (made once per URI; boto3 clients are thread-safe, their
    making is not). botocore retries nothing: `_read_s3` does."""
    client = _CLIENTS.get(storage.uri)
    if client is not None:
        return client
    with _LOCK:
        client = _CLIENTS.get(storage.uri)
        if client is None:
            boto3, config = _boto3(storage)
            from botocore.exceptions import BotoCoreError

            s3: dict[str, Any] = {"addressing_style": storage.addressing_style()}
            if storage.accelerate:
                s3["use_accelerate_endpoint"] = True
            try:
                session = boto3.session.Session(profile_name=storage.profile)
                client = session.client(
                    "s3", endpoint_url=storage.endpoint, region_name=storage.region,
                    aws_access_key_id=storage.access_key,
                    aws_secret_access_key=storage.secret_access_key,
                    aws_session_token=storage.session_token,
                    config=config(retries={"total_max_attempts": 1}, s3=s3,
                                  connect_timeout=_CONNECT_SECONDS,
                                  read_timeout=_READ_SECONDS, max_pool_connections=16))
            except BotoCoreError as exc:  # no such profile, a bad region name, ...
                shown = shown_uri(storage.uri)
                raise ClaimCheckStorageError(
                    f"claim-check-storage-uri {shown!r}: {_scrubbed(str(exc), storage)}",
                    uri=shown) from None
            _CLIENTS[storage.uri] = client
    return client


def _scrubbed(text: str, storage: S3Storage) -> str:
    """`text` (botocore's words) without the URI's secrets, should it ever hold one (a value
    of a few characters is no real secret, and replacing it would garble the text)."""
    for secret in (s for s in storage.secrets() if len(s) >= 4):
        text = text.replace(secret, _HIDDEN).replace(quote(secret, safe=""), _HIDDEN)
    return text


def _read_s3(storage: S3Storage, name: str, *, location: str) -> bytes:
    from botocore.exceptions import (
        BotoCoreError,
        ClientError,
        ConnectionError,
        HTTPClientError,
        IncompleteReadError,
        NoCredentialsError,
        PartialCredentialsError,
    )

    client, key = _client(storage), storage.key(name)
    where = f"s3://{storage.bucket}/{key}"
    facts: dict[str, Any] = {"field": "claimCheckLocation", "location": location,
                             "bucket": storage.bucket, "key": key}
    endpoint = storage.endpoint or client.meta.endpoint_url
    failure = ""
    for attempt in range(1, READ_ATTEMPTS + 1):
        try:
            return bytes(client.get_object(Bucket=storage.bucket, Key=key)["Body"].read())
        except ClientError as exc:
            error = exc.response.get("Error", {})
            code, text = str(error.get("Code", "")), str(error.get("Message", "") or "")
            status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0))
            said = _scrubbed(f"{code or status}: {text}".rstrip(": "), storage)
            if code == "NoSuchBucket":
                raise ClaimCheckStorageUnavailableError(
                    f"claim-check object {location!r}: the bucket {storage.bucket} does not "
                    f"exist at {endpoint} ({where}; {said})", **facts) from None
            if code in ("NoSuchKey", "NotFound") or status == 404:
                raise MessageFormatError(
                    f"claim-check object {location!r} is not in the storage ({where}: bucket "
                    f"{storage.bucket}, key {key} does not exist)", **facts) from None
            if code in _DENIED or status in (401, 403):
                raise ClaimCheckStorageUnavailableError(
                    f"claim-check object {location!r}: access denied to {where} (bucket "
                    f"{storage.bucket}, key {key}) at {endpoint}: {said}; do the credentials "
                    f"allow s3:GetObject there? (without s3:ListBucket a missing object is "
                    f"denied too)", **facts) from None
            if status < 500 and code not in _THROTTLED and status != 429:
                raise MessageFormatError(
                    f"claim-check object {location!r} cannot be read from {where}: {said}",
                    **facts) from None
            failure = said
        except (NoCredentialsError, PartialCredentialsError) as exc:
            raise ClaimCheckStorageUnavailableError(
                f"claim-check object {location!r}: no AWS credentials to read {where} "
                f"({_scrubbed(str(exc), storage)}): give access-key and secret-access-key in "
                f"the claim-check-storage-uri, or the AWS variables or a profile",
                **facts) from None
        except (ConnectionError, HTTPClientError, IncompleteReadError, OSError) as exc:
            failure = _scrubbed(str(exc) or type(exc).__name__, storage)
        except BotoCoreError as exc:
            raise ClaimCheckStorageUnavailableError(
                f"claim-check object {location!r} cannot be read from {where}: "
                f"{_scrubbed(str(exc), storage)}", **facts) from None
        _pause(_RETRY_SECONDS * attempt if attempt < READ_ATTEMPTS else 0)
    raise ClaimCheckStorageUnavailableError(
        f"claim-check object {location!r} cannot be read from {where} at {endpoint} after "
        f"{READ_ATTEMPTS} attempts: {failure}", **facts)


# --- reading ahead ---------------------------------------------------------------------------

_ahead: OrderedDict[tuple[str, str], Future[bytes]] = OrderedDict()
_jobs: queue.SimpleQueue[tuple[Future[bytes], S3Storage, str, str]] | None = None


def prefetch(messages: Iterable[tuple[bytes | None, bytes | None]], settings: LargeMessages,
             *, framed: bool) -> int:
    """Start reading the ``s3://`` claim-check objects `messages` (key, value as consumed)
    name, `_READERS` at a time in background threads, so that `whole` finds them read: a
    batch's objects then arrive while its other messages convert, instead of one round trip
    after another. A message that does not decompress or names no object is left to `whole`,
    which says why; a read's failure is `whole`'s too. At most `_AHEAD_LIMIT` objects wait to
    be taken (the oldest beyond are dropped and read again if asked). Returns the number of
    reads started (none for other storages: a file read is quick)."""
    uri = settings.claim_check_storage_uri
    if not uri or urlsplit(uri).scheme != "s3":
        return 0
    try:
        storage = _storage(uri)
    except ServiceError:
        return 0  # whole() refuses the storage, naming why
    if not isinstance(storage, S3Storage):
        return 0
    started = 0
    for index, (key, value) in enumerate(messages):
        try:
            if value is not None and settings.compression is not Compression.NONE:
                value = decompressed_value(value, settings.compression, framed=framed)
            location = claim_check_location(SourceMessage(index, key, value))
            if location is None:
                continue
            name = object_name(location)
        except MessageFormatError:
            continue
        with _LOCK:
            if (uri, name) in _ahead:
                continue
            _ahead[uri, name] = _submitted(storage, name, location=location)
            while len(_ahead) > _AHEAD_LIMIT:
                _ahead.popitem(last=False)[1].cancel()
        started += 1
    return started


def _taken(uri: str, name: str) -> bytes | None:
    """The object `prefetch` read (or is reading) for `whole`, else None; its read's failure
    raised."""
    with _LOCK:
        future = _ahead.pop((uri, name), None)
    if future is None:
        return None
    try:
        return future.result()
    except CancelledError:
        return None


def _submitted(storage: S3Storage, name: str, *, location: str) -> Future[bytes]:
    """A read of the object `name` queued for the reader threads (started on first use,
    daemons: a process that ends does not wait for reads nobody will take). Under `_LOCK`."""
    global _jobs
    if _jobs is None:
        _jobs = queue.SimpleQueue()
        for number in range(_READERS):
            threading.Thread(target=_reader, args=(_jobs,), daemon=True,
                             name=f"flatavro-claim-check-{number}").start()
    future: Future[bytes] = Future()
    _jobs.put((future, storage, name, location))
    return future


def _reader(jobs: queue.SimpleQueue[tuple[Future[bytes], S3Storage, str, str]]) -> None:
    while True:
        future, storage, name, location = jobs.get()
        if not future.set_running_or_notify_cancel():
            continue
        try:
            future.set_result(_read_s3(storage, name, location=location))
        except BaseException as exc:  # noqa: BLE001  handed to whole(), which raises it
            future.set_exception(exc)
