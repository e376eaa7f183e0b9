"""Handle-key-only messages made whole from the upstream TiDB (``--upstream-tidb-dsn``, the name
of TiCDC's own consumer's option), read as that consumer reads them
(pkg/sink/codec/common/helper.go ``MustSnapshotQuery``): on one connection
``set @@tidb_snapshot=<ts>`` then ``select * from schema.table where <key column> = <value>
and ...``; the new image at the commit ts, the old one at commit ts - 1
(`service.cdc.handle_key_only`). The columns' types come from information_schema.COLUMNS read
at the same snapshot. PyMySQL (the ``tidb`` extra) is imported only when a DSN is set.

DSN: Go's MySQL form as TiCDC's consumer takes it, ``user:password@tcp(host:port)/`` (a
database and ``?params`` are ignored), or ``mysql://user:password@host:port``. The password is
never shown: a DSN is named by `shown_dsn`.

A row not there at that ts (none with that key, or the snapshot is older than the GC safe
point: TiDB error 8055) is the message's problem (`MessageFormatError`, naming the table, the
key, the commit ts and why). A connection that fails is tried `READ_ATTEMPTS` times, then
`UpstreamTiDBUnavailableError`: no message's fault, so the batch is not converted (the bridge
stops, nothing committed)."""

from __future__ import annotations

import atexit
import re
import threading
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from service.cdc.events import SourceMessage
from service.cdc.handle_key_only import Column, KeyOnly, Row, completed, key_only, lookups
from service.core.errors import InvalidInputError, ServiceError

__all__ = ["READ_ATTEMPTS", "Dsn", "UpstreamTiDBError", "UpstreamTiDBUnavailableError",
           "checked_dsn", "made_whole", "pymysql_module", "shown_dsn"]

READ_ATTEMPTS = 3
_RETRY_SECONDS = 0.5
_CONNECT_SECONDS, _READ_SECONDS = 10, 60
_SNAPSHOT_TOO_OLD = 8055
_GO_DSN = re.compile(r"^(?:(?P<user>[^:@]*)(?::(?P<password>.*))?@)?"
                     r"(?:tcp\((?P<address>[^)]*)\))?/(?P<rest>[^@]*)$")
_HIDDEN = "**********"
_COLUMNS = ("select COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, IS_NULLABLE, COLUMN_KEY, "
            "CHARACTER_SET_NAME from information_schema.COLUMNS where TABLE_SCHEMA = %s and "
            "TABLE_NAME = %s order by ORDINAL_POSITION")


class UpstreamTiDBError(InvalidInputError):
    """An ``--upstream-tidb-dsn`` flatavro cannot use."""

    code = "invalid_upstream_tidb_dsn"


class UpstreamTiDBUnavailableError(ServiceError):
    """The upstream TiDB refuses or does not answer (after `READ_ATTEMPTS` tries): no message
    of the batch is at fault."""

    code = "upstream_tidb_unavailable"


@dataclass(frozen=True, slots=True, repr=False)
class Dsn:
    """Where the upstream TiDB is and who to connect as (shown without the password)."""

    text: str
    host: str
    port: int
    user: str
    password: str

    def __repr__(self) -> str:
        return f"Dsn({shown_dsn(self.text)!r})"


def shown_dsn(dsn: str) -> str:
    """`dsn` with its password hidden (Go's form: what lies between the first ``:`` and the
    last ``@`` before the last ``/``; a URL's password)."""
    if "://" in dsn:
        parts = urlsplit(dsn)
        if parts.password is None:
            return dsn
        at = parts.netloc.rindex("@")
        user = parts.netloc[:at].split(":", 1)[0]
        return dsn.replace(parts.netloc, f"{user}:{_HIDDEN}@{parts.netloc[at + 1:]}", 1)
    head = dsn[:dsn.rfind("/")] if "/" in dsn else dsn
    at = head.rfind("@")
    if at < 0 or ":" not in head[:at]:
        return dsn
    return f"{head[:at].split(':', 1)[0]}:{_HIDDEN}{dsn[at:]}"


def checked_dsn(dsn: str) -> Dsn:
    """`dsn` parsed.

    Raises:
        UpstreamTiDBError: a DSN that is neither form (shown without its password).
    """
    if dsn.startswith("mysql://"):
        parts = urlsplit(dsn)
        try:
            port = parts.port or 4000
        except ValueError:
            port = -1
        if parts.hostname and port > 0:
            return Dsn(dsn, parts.hostname, port, unquote(parts.username or "root"),
                       unquote(parts.password or ""))
    found = _GO_DSN.match(dsn)
    if found:
        host, _, port_text = (found.group("address") or "127.0.0.1:3306").rpartition(":")
        if host and port_text.isdigit():
            return Dsn(dsn, host, int(port_text), found.group("user") or "root",
                       found.group("password") or "")
    raise UpstreamTiDBError(
        f"upstream-tidb-dsn {shown_dsn(dsn)!r}: expected user:password@tcp(host:port)/ (as "
        f"TiCDC's consumer takes it) or mysql://user:password@host:port",
        dsn=shown_dsn(dsn))


def made_whole(message: SourceMessage, dsn: str, *, framed: bool) -> SourceMessage:
    """`message` as the changefeed would have sent it whole when it is handle-key-only, read
    from the upstream TiDB `dsn`; any other message as it is.

    Raises:
        MessageFormatError: the row is not there at that ts (naming table, key, commit ts and
            why), or a column type whose encoding is not built.
        UpstreamTiDBError: a DSN flatavro cannot use.
        UpstreamTiDBUnavailableError: TiDB refuses the connection or does not answer.
    """
    found = key_only(message, framed=framed)
    if found is None:
        return message
    parsed = checked_dsn(dsn)
    failures = (pymysql_module().err.Error, OSError)
    for attempt in range(1, READ_ATTEMPTS + 1):
        try:
            columns, rows = _read(parsed, found)
            break
        except failures as exc:  # a connection's: tried again, then the TiDB is down
            if not _transient(exc):
                raise _problem(found, exc, dsn=shown_dsn(dsn)) from None
            if attempt == READ_ATTEMPTS:
                raise UpstreamTiDBUnavailableError(
                    f"upstream TiDB {shown_dsn(dsn)!r} did not answer after {READ_ATTEMPTS} "
                    f"attempts ({_scrubbed(str(exc), parsed)}); reading table "
                    f"`{found.schema}`.`{found.table}` at commit ts {found.commit_ts}",
                    dsn=shown_dsn(dsn)) from None
            _forget(parsed.text)
            time.sleep(_RETRY_SECONDS * attempt)
    key, value = completed(found, columns=columns, rows=rows)
    return SourceMessage(message.index, key, value)


_CONNECTIONS: dict[str, Any] = {}
_LOCK = threading.Lock()


@atexit.register
def _close_all() -> None:
    """Close the kept connections before the interpreter tears PyMySQL down (its finalizer
    then prints a traceback)."""
    for dsn in list(_CONNECTIONS):
        _forget(dsn)


def pymysql_module() -> Any:
    """PyMySQL, imported.

    Raises:
        UpstreamTiDBError: not installed (naming the extra that installs it).
    """
    try:
        import pymysql
    except ImportError:
        raise UpstreamTiDBError(
            "reading handle-key-only rows from the upstream TiDB needs PyMySQL: "
            "pip install 'flatavro[tidb]'") from None
    return pymysql


def _connection(dsn: Dsn) -> Any:
    with _LOCK:
        connection = _CONNECTIONS.get(dsn.text)
        if connection is None:
            pymysql = pymysql_module()
            # PyMySQL's encoders, no decoders: values as MySQL's text protocol gives them
            # (bytes when binary).
            encoders = {k: v for k, v in pymysql.converters.conversions.items()
                        if not isinstance(k, int)}
            connection = pymysql.connect(
                host=dsn.host, port=dsn.port, user=dsn.user, password=dsn.password,
                autocommit=True, charset="utf8mb4", conv=encoders,
                connect_timeout=_CONNECT_SECONDS, read_timeout=_READ_SECONDS,
                write_timeout=_READ_SECONDS)
            _CONNECTIONS[dsn.text] = connection
        return connection


def _forget(dsn: str) -> None:
    with _LOCK:
        connection = _CONNECTIONS.pop(dsn, None)
    if connection is not None:
        try:
            connection.close()
        except Exception:  # noqa: BLE001 - already broken
            pass


def _read(dsn: Dsn, message: KeyOnly) -> tuple[list[Column], list[Row]]:
    connection = _connection(dsn)
    columns: list[Column] = []
    rows: list[Row] = []
    with _LOCK, connection.cursor() as cursor:
        try:
            for lookup in lookups(message):
                # TiCDC's statements: one snapshot per read, then the row by its key.
                cursor.execute(f"set @@tidb_snapshot={int(lookup.ts)}")
                if not columns:
                    cursor.execute(_COLUMNS, (lookup.schema, lookup.table))
                    columns = [Column(_text(n), _text(d).lower(), _text(t).lower(),
                                      _text(x) == "YES", _text(k),
                                      None if c is None else _text(c))
                               for n, d, t, x, k, c in cursor.fetchall()]
                    if not columns:
                        raise message.refusal(
                            f"no table `{lookup.schema}`.`{lookup.table}` at ts {lookup.ts}")
                where = " and ".join(f"{_quoted(name)} = %s" for name in lookup.key)
                if not where:
                    raise message.refusal("the message names no key column")
                cursor.execute(f"select * from {_quoted(lookup.schema)}."
                               f"{_quoted(lookup.table)} where {where}",
                               tuple(_parameter(v) for v in lookup.key.values()))
                found = cursor.fetchall()
                if not found:
                    raise message.refusal(f"no row with that key at ts {lookup.ts}",
                                          read_ts=lookup.ts)
                names = [d[0] for d in cursor.description]
                rows.append(dict(zip(names, found[0], strict=True)))
        finally:
            try:
                cursor.execute("set @@tidb_snapshot=''")
            except Exception:  # noqa: BLE001 - the connection is dropped by the caller
                pass
    return columns, rows


def _transient(exc: Exception) -> bool:
    """A connection failure (worth another try), not TiDB refusing the statement."""
    pymysql = pymysql_module()
    if isinstance(exc, pymysql.err.OperationalError | pymysql.err.InterfaceError):
        code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else 0
        return code == 0 or 2000 <= code < 3000  # client errors: no connection, lost, timeout
    return isinstance(exc, OSError)


def _problem(message: KeyOnly, exc: Exception, *, dsn: str) -> Exception:
    code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else None
    text = str(exc.args[1]) if len(exc.args) > 1 else str(exc)
    if code == _SNAPSHOT_TOO_OLD:
        return message.refusal(f"the snapshot is older than the GC safe point (TiDB error "
                               f"8055: {text})", tidb_error=code)
    if code in (1049, 1146, 1054):  # no such database, table, column
        return message.refusal(f"TiDB error {code}: {text}", tidb_error=code)
    return UpstreamTiDBUnavailableError(f"upstream TiDB {dsn!r} refused the read (error "
                                        f"{code}: {text})", dsn=dsn)


def _scrubbed(text: str, dsn: Dsn) -> str:
    return text.replace(dsn.password, _HIDDEN) if dsn.password else text


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _parameter(value: Any) -> Any:
    return value if isinstance(value, str | bytes | int | float) or value is None \
        else str(value)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
