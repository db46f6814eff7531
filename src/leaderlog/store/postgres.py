"""The scale-out store: PostgreSQL through asyncpg.

URL: ``postgresql://user[:password]@host[:port]/database[?schema=name]`` (``postgres://`` works too;
other query parameters are passed to the server as settings, e.g. ``application_name``).
``schema`` keeps a log in its own PostgreSQL schema: it is created when missing and is the only
entry of ``search_path`` on every connection, so several logs (or test runs) can share one
database without seeing each other. Without it, the log is the one the server's default
``search_path`` finds (or a new one where it creates tables), and every connection keeps to
that schema: a ``?schema=`` log made later under the role's name does not take its place.
Events tables in two schemas on that path are an error asking which one (``?schema=``).

Writers take turns: every append transaction first takes a transaction-scoped advisory lock
keyed on the events table, then reads the head. A position is therefore only handed out after
the previous one is committed, so positions follow commit order and a reader that has seen
position N never later finds a new event at or below N.

After each commit the writer sends ``NOTIFY leaderlog_events, '<schema>:<head position>'``.
Followers listen on a dedicated connection; when it is lost they fall back to polling and
listen again on their next wait.
"""

from __future__ import annotations

import asyncio
import configparser
import contextlib
import errno
import functools
import logging
import os
import re
import socket
import uuid
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple, TypeVar
from urllib.parse import (
    SplitResult,
    parse_qsl,
    quote,
    unquote,
    unquote_plus,
    urlencode,
    urlsplit,
    urlunsplit,
)

import asyncpg

from leaderlog.errors import (
    LogRemoved,
    ProjectionError,
    StoreBusy,
    StoreError,
    StoreReadOnly,
    StoreUnavailable,
    StoreUnreachable,
)
from leaderlog.events import RecordedEvent
from leaderlog.store import without_password
from leaderlog.store._postgres_confinement import overreach, take_snapshot
from leaderlog.store.base import (
    CLOSED,
    GENESIS_HASH,
    AppendResult,
    EventStore,
    PendingBatch,
    PlannedRow,
    ProjectionTransaction,
    StoredText,
    WriteProgress,
    WriteProgressReporter,
    batch_streams,
    event_from_row,
    plan_rows,
    storable,
)

__all__ = [
    "CHANNEL",
    "LOCK_TIMEOUT",
    "SCHEMA",
    "PostgresStore",
    "check_url",
    "translate_placeholders",
]

CHANNEL = "leaderlog_events"

# Seconds a statement waits for a lock another transaction holds before "busy" (read at
# open, so a test can shorten it); ``?lock_timeout=`` in the URL overrides it.
LOCK_TIMEOUT = 10.0

# Advisory lock keys share a high half ("llog") so they do not collide with other users of the
# database; the low half is the events table's oid for appends. Schema changes take keys of
# their own high half ("lloh"), one per schema: logs in other schemas of the database need
# not wait for a log's rebuild, which holds it for its whole replay.
_LOCK_SPACE = 0x6C6C6F67 << 32
_SCHEMA_LOCK_SPACE = 0x6C6C6F68 << 32


def _schema_lock_key(schema: str | None) -> int:
    """The advisory lock tables are created or dropped in ``schema`` under (None: no schema
    on the path exists yet, so the database's). Two schemas whose names share a CRC only
    wait for each other."""
    if schema is None:
        return _SCHEMA_LOCK_SPACE
    return _SCHEMA_LOCK_SPACE | (zlib.crc32(schema.encode()) or 1)


# Data and meta are kept as canonical JSON text and recorded_at as the formatted time, so the
# bytes the hash chain covers are exactly the bytes stored.
SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    position       BIGINT PRIMARY KEY,
    event_id       UUID NOT NULL UNIQUE,
    stream         TEXT NOT NULL,
    version        BIGINT NOT NULL,
    type           TEXT NOT NULL,
    schema_version INTEGER NOT NULL,
    data           TEXT NOT NULL,
    recorded_at    TEXT NOT NULL,
    actor          TEXT NOT NULL,
    meta           TEXT NOT NULL,
    hash           TEXT NOT NULL,
    UNIQUE (stream, version)
);
CREATE OR REPLACE FUNCTION leaderlog_events_are_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'events are append-only';
END
$$;
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = 'events'::regclass
                   AND tgname = 'events_are_append_only_update') THEN
        CREATE TRIGGER events_are_append_only_update BEFORE UPDATE ON events
        FOR EACH ROW EXECUTE FUNCTION leaderlog_events_are_append_only();
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = 'events'::regclass
                   AND tgname = 'events_are_append_only_delete') THEN
        CREATE TRIGGER events_are_append_only_delete BEFORE DELETE ON events
        FOR EACH ROW EXECUTE FUNCTION leaderlog_events_are_append_only();
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = 'events'::regclass
                   AND tgname = 'events_are_append_only_truncate') THEN
        CREATE TRIGGER events_are_append_only_truncate BEFORE TRUNCATE ON events
        FOR EACH STATEMENT EXECUTE FUNCTION leaderlog_events_are_append_only();
    END IF;
END
$$;
"""

_COLUMNS = (
    "position, event_id, stream, version, type, schema_version, "
    "data, recorded_at, actor, meta, hash"
)
_COLUMN_NAMES = tuple(_COLUMNS.split(", "))
# One statement, one round trip, however many rows.
_INSERT = (
    f"INSERT INTO events ({_COLUMNS}) SELECT * FROM unnest("
    "$1::bigint[], $2::uuid[], $3::text[], $4::bigint[], $5::text[], $6::integer[], "
    "$7::text[], $8::text[], $9::text[], $10::text[], $11::text[])"
)
# Keeps each message to the server a few megabytes even when importing a whole log at once.
_INSERT_CHUNK = 10_000
_HEAD = "SELECT position, hash FROM events ORDER BY position DESC LIMIT 1"
# The head, the database's clock and the events table's oid in one round trip (an append's
# hot path).
_HEAD_AND_CLOCK = (
    "SELECT head.position, head.hash, head.recorded_at, clock_timestamp(), "
    "to_regclass('events')::oid::bigint FROM (SELECT 1) one "
    "LEFT JOIN (SELECT position, hash, recorded_at FROM events ORDER BY position DESC LIMIT 1) "
    "head ON true"
)
_EVENTS_TABLE = (
    "SELECT n.nspname, c.oid::bigint FROM pg_class c "
    "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = 'events'::regclass"
)
_EVENTS_COLUMNS = (
    "SELECT attname FROM pg_attribute WHERE attrelid = 'events'::regclass "
    "AND attnum > 0 AND NOT attisdropped ORDER BY attnum"
)

_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")
# PostgreSQL's own schemas: it refuses to create pg_* ones, and lets a superuser put tables in
# information_schema, beside the catalog views every client reads.
_SYSTEM_SCHEMA = re.compile(r"pg_.*|information_schema")
_POOL_MIN, _POOL_MAX = 1, 10


def _in_one_line(record: logging.LogRecord) -> bool:
    """asyncpg's pool logs each failed reconnection with a traceback: during an outage a
    server's log filled with them. The error's own words say what a reader needs."""
    if record.exc_info and record.exc_info[1] is not None:
        error = record.exc_info[1]
        record.msg = f"{record.getMessage()}: {type(error).__name__}: {error}"
        record.args = None
        record.exc_info = None
        record.exc_text = None
    return True


logging.getLogger("asyncpg.pool").addFilter(_in_one_line)
_CONNECT_TIMEOUT = 10.0
_LISTEN_RETRY_DELAY = 2.0

# What a lost or refused connection looks like; anything else is a real error in a query.
_CONNECTION_ERRORS: tuple[type[BaseException], ...] = (
    OSError,
    TimeoutError,
    asyncpg.InterfaceError,
    asyncpg.PostgresConnectionError,
    asyncpg.AdminShutdownError,
    asyncpg.CrashShutdownError,
    asyncpg.CannotConnectNowError,
    asyncpg.TooManyConnectionsError,
    # What a connection the server just terminated can raise on its next use ("cannot
    # switch to state ...; another operation is in progress").
    asyncpg.InternalClientError,
)
# Those a server restarting (or not started yet) gives: trying again may get through.
_UNREACHABLE: tuple[type[BaseException], ...] = (
    ConnectionError,
    TimeoutError,
    asyncpg.CannotConnectNowError,
    asyncpg.AdminShutdownError,
    asyncpg.CrashShutdownError,
)
# The same from the network, while a database's host or its name comes up (a container's).
_UNREACHABLE_ERRNOS = {errno.EHOSTUNREACH, errno.ENETUNREACH, errno.EHOSTDOWN}


def _unreachable(error: BaseException) -> type[StoreUnavailable]:
    """The error to raise for ``error`` at open: StoreUnreachable when trying again may do."""
    if type(error) is ConnectionError and "SSL" in str(error):
        # The server refuses the TLS the URL asks for (sslmode=require): a setting that
        # will not change on its own, unlike a refused or reset connection.
        return StoreUnavailable
    if isinstance(error, _UNREACHABLE):
        return StoreUnreachable
    if isinstance(error, socket.gaierror):
        return StoreUnreachable if error.errno == socket.EAI_AGAIN else StoreUnavailable
    if isinstance(error, OSError) and error.errno in _UNREACHABLE_ERRNOS:
        return StoreUnreachable
    return StoreUnavailable


# What a new connection meets when the role, its password or the database is refused.
_LOGIN_REFUSED = (asyncpg.InvalidAuthorizationSpecificationError, asyncpg.InvalidCatalogNameError)
# At open time a wrong database name or credentials also mean "cannot be reached".
_OPEN_ERRORS: tuple[type[BaseException], ...] = (
    *_CONNECTION_ERRORS,
    *_LOGIN_REFUSED,
    asyncpg.InsufficientPrivilegeError,
)
# What a URL can get wrong that asyncpg only finds when it connects: a port that is not a
# number or out of range, a bad option value, a server setting the server does not know.
_OPEN_OR_URL_ERRORS: tuple[type[BaseException], ...] = (
    *_OPEN_ERRORS,
    asyncpg.PostgresError,
    asyncpg.InterfaceError,
    ValueError,
    OverflowError,
)
# Anything the server can answer with once connected.
_SERVER_ERRORS: tuple[type[BaseException], ...] = (*_OPEN_ERRORS, asyncpg.PostgresError)
# Listening is optional: any failure to start it just leaves the follower polling.
_LISTEN_ERRORS = _SERVER_ERRORS

_PLACEHOLDER_OR_QUOTED = re.compile(
    r"'(?:[^']|'')*'"  # string literal ('' is an escaped quote)
    r'|"(?:[^"]|"")*"'  # quoted identifier
    r"|--[^\n]*"  # line comment
    r"|/\*.*?\*/"  # block comment
    r"|\?",
    re.DOTALL,
)


@functools.lru_cache(maxsize=1024)
def translate_placeholders(sql: str) -> str:
    """Turn portable ``?`` placeholders into ``$1..$n``, leaving quoted text and comments alone."""
    count = 0

    def replace(match: re.Match[str]) -> str:
        nonlocal count
        if match.group() != "?":
            return match.group()
        count += 1
        return f"${count}"

    return _PLACEHOLDER_OR_QUOTED.sub(replace, sql)


# What the server answers when the trouble is the moment, not the request: another
# transaction holds a lock too long (lock_timeout) or deadlocked with this one, a statement
# was cancelled, the disk or memory ran out. Like a lost connection, a retry may succeed.
_TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (
    asyncpg.DeadlockDetectedError,
    asyncpg.LockNotAvailableError,
    asyncpg.QueryCanceledError,
    asyncpg.SerializationError,
    asyncpg.InsufficientResourcesError,
)


def _first_loss(error: BaseException) -> BaseException:
    """The error that lost the connection: rolling back or releasing on a connection already
    lost fails too, and asyncpg's words for that ("cannot call Transaction.__aexit__(): the
    underlying connection is closed") would hide the server's reason."""
    first = error
    earlier = error.__context__
    while earlier is not None and isinstance(earlier, (*_CONNECTION_ERRORS, StoreUnavailable)):
        if isinstance(earlier, _CONNECTION_ERRORS):
            first = earlier
        earlier = earlier.__context__
    return first


def _statement_timeout_hint(error: BaseException) -> str:
    """What follows the reason of a statement cut by a statement_timeout: set by an
    administrator for the role or database, not by leaderlog (which sets only lock_timeout),
    a retry meets it again whenever the statement is as long."""
    if "statement timeout" not in str(error):
        return ""
    return (
        " (a statement_timeout set for this role or database cuts leaderlog's "
        "statements too: raise it, or unset it for the role leaderlog connects as)"
    )


# What a role is told when PostgreSQL refuses it a right: a role that may only read can
# verify, list and export the log; the other commands create and alter tables (their own,
# and the log's trigger function), which PostgreSQL lets only their owner do.
_RIGHTS_NEEDED = (
    "verify, events, export and projections need USAGE on the log's schema and SELECT on its "
    "tables; the other commands need to create tables in it and to own the log's tables"
)


async def _release(
    pool: asyncpg.Pool[asyncpg.Record], connection: asyncpg.pool.PoolConnectionProxy[asyncpg.Record]
) -> None:
    """Give ``connection`` back to ``pool``. One the server has lost meanwhile (terminated by
    an administrator, say) cannot be reset: the pool closes it and opens another when one
    is needed. What was committed on it stands, and what failed on it was said already, so
    the release's own failure ("cannot switch to state 15; another operation is in
    progress") must neither replace that nor undo that."""
    with contextlib.suppress(Exception):
        await pool.release(connection)


def _read_only(refused: str) -> StoreReadOnly:
    """What a connection that may only read is told when it writes, ``refused`` first."""
    return StoreReadOnly(
        f"{refused}; this connection may only read (a hot standby, or "
        "default_transaction_read_only): appending, creating the log's or the tokens' tables "
        "and keeping projections up to date need a server and settings that allow writing "
        "(verify, events, export, projections and token list only read)",
        public="the database cannot be written to: it is read-only here; nothing was written",
    )


@contextlib.contextmanager
def _unavailable_on_disconnect() -> Iterator[None]:
    try:
        yield
    except _CONNECTION_ERRORS as error:
        if isinstance(error, asyncpg.InterfaceError) and str(error).startswith("pool is clos"):
            # This store was closed (or is closing): not an outage that waiting would end.
            raise StoreUnavailable(CLOSED) from error
        reason = _reason(_first_loss(error))
        raise StoreUnavailable(f"PostgreSQL is unavailable: {reason}") from error
    except _TRANSIENT_ERRORS as error:
        # Worded as SQLite's: scripts and users meet one message for one situation.
        said = f"database is busy: {_reason(error)}"
        said += _statement_timeout_hint(error)
        raise StoreBusy(said) from error
    except _LOGIN_REFUSED as error:
        # A new connection of the pool refused after the store opened: the role's login or
        # password, pg_hba.conf, or the database changed meanwhile. Served again once they
        # allow it, with no restart.
        raise StoreUnavailable(
            f"PostgreSQL refuses this server's new connections: {_reason(error)} (its role, "
            "password, pg_hba.conf or database changed after it connected); it goes on once "
            "they allow it again"
        ) from error
    except asyncpg.ReadOnlySQLTransactionError as error:
        # As SQLite's read-only file: a 503 with no Retry-After, and a projection held back
        # by the database, which health says, rather than a fault of the server's own.
        raise _read_only(f"PostgreSQL refused: {_reason(error)}") from error
    except (asyncpg.InvalidSQLStatementNameError, asyncpg.DuplicatePreparedStatementError) as error:
        # A pooler in transaction mode handing each transaction a server connection that
        # does not know the statements asyncpg prepared on another: the setup, not leaderlog.
        raise StoreUnavailable(
            f"PostgreSQL refused: {_reason(error)}",
            public="the database's connection pooler cannot run this server's statements; "
            "its operator must change its mode (see the server's log)",
        ) from error
    except asyncpg.InsufficientPrivilegeError as error:
        # Not worth retrying: the role lacks a right. Which one depends on the command, and
        # a refused read (verify as a role that may not select) must not be told to create.
        raise StoreError(f"PostgreSQL refused: {_reason(error)}; {_RIGHTS_NEEDED}") from error


_T = TypeVar("_T")

# What a statement meets when the log's table, or its whole schema, was dropped under it.
_MISSING_RELATION = (asyncpg.UndefinedTableError, asyncpg.InvalidSchemaNameError)


def _log_removed(reason: str) -> LogRemoved:
    return LogRemoved(
        f"the log is gone ({reason}): its events table or schema was dropped while "
        "leaderlog had it open, by another command whose first import into a new log was "
        "refused (nothing was written: try again), or by hand (restore it from a backup or "
        "an export, then restart)",
        public="the log was removed from the database while this server had it open",
    )


@contextlib.contextmanager
def _log_still_there() -> Iterator[None]:
    """Around the log's own statements (not projections', whose tables are their own)."""
    try:
        yield
    except _MISSING_RELATION as error:
        raise _log_removed(_reason(error)) from error


# SQL_ASCII stores the bytes it is given, as UTF8 does once it has checked them; any other
# encoding cannot hold most of the text a log holds (names, quotes, labels in nine scripts).
_ENCODINGS = {"UTF8", "SQL_ASCII"}


# Transaction ids of 64 bits (pg_current_xact_id, pg_xact_status), which a user projection's
# confinement reads, came with PostgreSQL 13.
_OLDEST_SERVER = 13


def _check_version(version: tuple[int, ...], shown: str) -> None:
    """``version`` as asyncpg reads it from the connection's start (major, minor, ...)."""
    if version[0] < _OLDEST_SERVER:
        raise StoreError(
            f"the PostgreSQL server of {shown} is version {version[0]}: leaderlog needs "
            f"PostgreSQL {_OLDEST_SERVER} or later"
        )


# Where a setting comes from when an ALTER ROLE or ALTER DATABASE set it (pg_settings).
_SET_FOR_THE_ROLE = frozenset({"user", "database", "database user"})


async def _check_settings_arrived(
    connection: asyncpg.pool.PoolConnectionProxy[asyncpg.Record],
    settings: Mapping[str, str],
    schema: str | None,
    shown: str,
) -> None:
    """Refuse a connection without the ``?schema=`` search_path or the lock_timeout it was
    opened with (a connection pooler ignoring startup parameters): the log would be looked
    for, and created, in another schema, and a held lock waited on for ever or for longer
    than asked. A setting the server took from the connection's start has source
    ``client``; one of the role's or the server's own does not."""
    found = {
        str(row[0]): (str(row[1]), str(row[2]))
        for row in await connection.fetch(
            "SELECT name, setting, source FROM pg_settings "
            "WHERE name IN ('search_path', 'lock_timeout')"
        )
    }
    dropped: list[str] = []
    on_the_role: list[str] = []
    path, path_source = found["search_path"]
    first_on_path = path.split(",")[0].strip().strip('"')
    if schema is not None and path_source != "client" and first_on_path != schema:
        dropped.append(f"has search_path {path}, not {schema} as ?schema= asks")
        on_the_role.append(f"SET search_path = {schema}")
    lock_timeout, lock_timeout_source = found["lock_timeout"]
    if "lock_timeout" not in settings and lock_timeout_source != "client":
        dropped.append("did not get the lock_timeout its URL gives")
        on_the_role.append("SET lock_timeout = ...")
    elif lock_timeout == "0" and lock_timeout_source not in _SET_FOR_THE_ROLE:
        # Not the 10 s leaderlog asked for, nor a 0 an operator chose for the role.
        dropped.append("has no lock_timeout, though leaderlog asked for one")
        on_the_role.append(f"SET lock_timeout = '{int(LOCK_TIMEOUT)}s'")
    if dropped:
        raise StoreUnavailable(
            f"the PostgreSQL connection to {shown} {' and '.join(dropped)}: something "
            "between (a connection pooler ignoring startup parameters?) dropped what the "
            "connection was opened with, so the log would be looked for in another schema "
            "or a held lock waited on for ever; set it on the role ("
            + "; ".join(f"ALTER ROLE ... {setting}" for setting in on_the_role)
            + ") and leave it out of the URL, then have the pooler open new server "
            "connections (PgBouncer: RECONNECT), as a role's settings reach only those"
        )


def _check_encoding(encoding: object, shown: str) -> None:
    if str(encoding).upper() not in _ENCODINGS:
        raise StoreError(
            f"the PostgreSQL database {shown} is encoded in {encoding}: leaderlog "
            "keeps text in any script and needs a UTF8 database (createdb --encoding=UTF8 "
            "--template=template0 NAME)"
        )


# What a connection pooler (PgBouncer) answers with where leaderlog's connections are not
# what it takes, and what to change.
_POOLER_ADVICE = (
    (
        "statement pooling mode",
        "leaderlog needs a connection pooler's session or transaction mode, not statement mode",
    ),
    (
        "prepared statement",
        "a connection pooler in transaction mode must keep prepared statements (PgBouncer 1.21 "
        "or later with max_prepared_statements above 0), or run in session mode",
    ),
    (
        "query_wait_timeout",
        f"the connection pooler's pool is full: each leaderlog process keeps up to "
        f"{_POOL_MAX + 1} connections; raise the pooler's pool size",
    ),
)


# PgBouncer's refusal of a parameter a connection starts with, naming it.
_UNSUPPORTED_PARAMETER = re.compile(r"unsupported startup parameter: (\w+)")


def _reason(error: BaseException) -> str:
    said = _said(error)
    advice = _pooler_advice(said)
    # A hint asyncpg adds names settings of its own, which leaderlog users cannot set.
    return f"{said.split(' HINT:')[0]} ({advice})" if advice else said


def _pooler_advice(said: str) -> str | None:
    """What to change, when ``said`` is a connection pooler's answer leaderlog cannot work
    with; None otherwise."""
    refused = _UNSUPPORTED_PARAMETER.search(said)
    if refused is not None and refused[1] in ("lock_timeout", "search_path"):
        return (
            "a connection pooler refuses the settings leaderlog opens connections with: let it "
            "ignore them (PgBouncer: ignore_startup_parameters = lock_timeout, search_path) "
            "and set search_path and lock_timeout on the role instead, leaving ?schema= out; "
            "see the README on running behind PgBouncer"
        )
    if refused is not None:
        # One the URL gives: the advice for leaderlog's own two would change nothing.
        return (
            f"a connection pooler refuses the setting {refused[1]} the URL gives: leave "
            f"?{refused[1]}= out of it, and set it on the role if it is needed"
        )
    return next((advice for sign, advice in _POOLER_ADVICE if sign in said), None)


def _said(error: BaseException) -> str:
    if isinstance(error, ConnectionRefusedError):
        # Its text is the socket's ("[Errno 111] Connect call failed (...)").
        return (
            "nothing answers there (connection refused): is PostgreSQL running on that host "
            "and port?"
        )
    if isinstance(error, socket.gaierror):
        # Its text leads with the resolver's error number ("[Errno -2] Name or ...").
        return f"its host name cannot be looked up ({error.strerror})"
    # A timeout's text is empty; say what it was. The server's own puts its DETAIL and HINT
    # on lines of their own, which a one-line error would show as "\n".
    return " ".join((str(error) or type(error).__name__).split())


# The parameters whose values are secrets: the password, and the passphrase of the client
# key (asyncpg takes both from the URL).
_SECRET_PARAMETERS = ("password", "sslpassword")


def _redacted(dsn: str) -> str:
    """The URL with its secrets, the password in the user part or as ``?password=`` and
    ``?sslpassword=``, replaced by ***."""
    parts = urlsplit(dsn)
    if parts.password is not None:
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
        parts = parts._replace(netloc=netloc)
    # Item by item as typed: decoded and encoded again, the others would be shown otherwise
    # (an escape that is not UTF-8 as that of U+FFFD).
    items = parts.query.split("&") if parts.query else []
    hidden = [
        f"{key}=***" if unquote_plus(key) in _SECRET_PARAMETERS else item
        for item in items
        for key in (item.partition("=")[0],)
    ]
    if hidden != items:
        parts = parts._replace(query="&".join(hidden))
    # Again on the text: a password holding an unencoded # or / is not where urllib looks.
    return without_password(urlunsplit(parts))


def _redacted_or_hidden(url: str) -> str:
    """A URL fit for an error message, even one too broken to find its password in (one
    with ``/``, ``?`` or ``#`` unencoded in it)."""
    try:
        return _redacted(url)
    except ValueError:
        return without_password(url)


def _has_port(host: str) -> bool:
    return "]:" in host if host.startswith("[") else ":" in host


class _ConnectOptions(NamedTuple):
    dsn: str
    settings: dict[str, str]
    schema: str | None
    # Seconds to wait for a connection; None waits as long as it takes.
    timeout: float | None
    # Neither ?schema= nor a search_path setting: the log is where the server's default
    # search_path finds it, which open() works out once and keeps to (see _default_schema).
    search_path_given: bool


def _connect_timeout(value: str | None) -> float | None:
    """libpq's ``connect_timeout``: whole seconds, and 0 (or less) waits as long as it takes.

    asyncpg would pass it on to the server as a setting, which the server refuses."""
    if value is None:
        return _CONNECT_TIMEOUT
    try:
        seconds = int(value.strip())
    except ValueError:
        raise StoreUnavailable(
            f"connect_timeout={value!r} in the database URL is not a whole number of "
            "seconds (0 waits as long as it takes)"
        ) from None
    return float(seconds) if seconds > 0 else None


# What asyncpg takes for target_session_attrs; of another value, it says it "is expected to
# be one of <built-in method values of mappingproxy object at 0x...>".
_SESSION_ATTRIBUTES = ("any", "primary", "standby", "prefer-standby", "read-write", "read-only")

# libpq's connection parameters that asyncpg does not read: it would send them to the server
# as settings, which it refuses as unrecognized, as if the server were at fault.
_LIBPQ_ONLY = frozenset(
    (
        "channel_binding",
        "fallback_application_name",
        "gssdelegation",
        "gssencmode",
        "hostaddr",
        "keepalives",
        "keepalives_count",
        "keepalives_idle",
        "keepalives_interval",
        "load_balance_hosts",
        "max_protocol_version",
        "min_protocol_version",
        "replication",
        "require_auth",
        "requirepeer",
        "requiressl",
        "sslcertmode",
        "sslcompression",
        "sslcrldir",
        "sslsni",
        "tcp_user_timeout",
    )
)
# Files the TLS parameters name: asyncpg's error for a missing one does not say which.
_TLS_FILES = ("sslrootcert", "sslcert", "sslkey", "sslcrl")


def _check_parameters_asyncpg_reads(query: Sequence[tuple[str, str]], url: str) -> None:
    """Refuse a ``port`` or ``target_session_attrs`` that asyncpg would fail on when it
    connects, in words of its own internals ("invalid literal for int()"). An empty value
    is one asyncpg leaves out."""
    for key, value in query:
        if key in _LIBPQ_ONLY:
            raise StoreUnavailable(
                f"{_redacted_or_hidden(url)} is not a valid PostgreSQL URL: ?{key}= is a libpq "
                "connection parameter that leaderlog's PostgreSQL driver (asyncpg) does not "
                "take; leave it out"
            )
        if not value:
            continue
        if key in _TLS_FILES and dict(query).get("sslmode") != "disable":
            try:
                with open(value, "rb"):
                    pass
            except OSError as error:
                raise StoreUnavailable(
                    f"{_redacted_or_hidden(url)} cannot be used: its {key} file {value!r} "
                    f"cannot be read: {error.strerror or error}"
                ) from error
        if key == "port" and not all(
            piece.strip().isascii() and piece.strip().isdigit() and int(piece) <= 65535
            for piece in value.split(",")
        ):
            raise StoreUnavailable(
                f"{_redacted_or_hidden(url)} is not a valid PostgreSQL URL: its port "
                f"parameter {value!r} is not a port number (0-65535, or one per host, "
                "separated by commas)"
            )
        if key == "target_session_attrs" and value not in _SESSION_ATTRIBUTES:
            raise StoreUnavailable(
                f"{_redacted_or_hidden(url)} is not a valid PostgreSQL URL: "
                f"target_session_attrs={value!r} is not one of {', '.join(_SESSION_ATTRIBUTES)}"
            )


_NOT_UTF8 = re.compile(r"[\ud800-\udfff]")


# A port as PostgreSQL and urllib take one: digits 0-9 alone, at most 65535.
_PORT = re.compile(
    r"^(?:[0-9]{1,4}|[0-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])\Z"
)


def _refuse_text_postgresql_cannot_take(url: str, parts: SplitResult) -> None:
    """A URL whose names or settings PostgreSQL could not be sent: asyncpg fails on them
    with an error of its own internals, or the server with one about its startup packet."""
    if _NOT_UTF8.search(url):
        # What the command line makes of bytes typed in another encoding (Latin-1's é).
        shown = _redacted_or_hidden(url).encode("utf-8", "backslashreplace").decode()
        raise StoreUnavailable(
            f"{shown} is not a valid PostgreSQL URL: it holds bytes that are not UTF-8 "
            "text; write it in UTF-8, or percent-encode the UTF-8 bytes (%C3%A9 for é)"
        )
    escaped = {
        "user name": parts.username or "",
        "password": parts.password or "",
        "host": parts.netloc.rpartition("@")[2],
        "database name": parts.path,
        # A query's + is a space, as parse_qsl reads it; elsewhere it is itself.
        **{
            f"parameter {unquote(key)!r}": f"{key}={value}".replace("+", " ")
            for key, _, value in (item.partition("=") for item in parts.query.split("&"))
        },
    }
    pieces = {}
    for where, text in escaped.items():
        try:
            pieces[where] = unquote(text, errors="strict")
        except UnicodeDecodeError:
            # unquote would put U+FFFD for each such byte, and connect with a name, or a
            # password, other than the one typed.
            raise StoreUnavailable(
                f"{_redacted_or_hidden(url)} is not a valid PostgreSQL URL: its {where} holds "
                "percent-escapes of bytes that are not UTF-8 text; percent-encode the UTF-8 "
                "bytes (%C3%A9 for é)"
            ) from None
    for where, text in pieces.items():
        if "\x00" in text:
            raise StoreUnavailable(
                f"{_redacted_or_hidden(url)} is not a valid PostgreSQL URL: its {where} holds "
                "a NUL character (%00), which PostgreSQL takes in no name, password or setting"
            )


def _refuse_no_database(url: str, service: str | None) -> None:
    """A URL naming no database may still name a connection service that names one."""
    shown = _redacted_or_hidden(url)
    if service is None:
        raise StoreUnavailable(
            f"{shown} connects to no particular database; "
            "name the database: postgresql://user@host:5432/dbname"
        )
    # Where asyncpg looks for the service; one it does not find there, or that names no
    # database, leaves it connecting to the default database as a URL naming none does.
    given = os.environ.get("PGSERVICEFILE")
    service_file = Path(given) if given is not None else Path.home() / ".pg_service.conf"
    services = configparser.ConfigParser(interpolation=None)
    try:
        services.read(service_file, encoding="utf-8")
    except (configparser.Error, UnicodeDecodeError) as error:
        raise StoreUnavailable(
            f"{shown} names the service {service!r}, but {service_file} cannot be read: "
            f"{' '.join(str(error).split())}"
        ) from error
    if not services.get(service, "dbname", fallback=""):
        raise StoreUnavailable(
            f"{shown} connects to no particular database: the service {service!r} names none "
            f"in {service_file}; name the database: postgresql://user@host:5432/dbname, or "
            "give the service a dbname"
        )


def _unreadable_address(url: str, error: ValueError) -> str:
    """Why urllib could not read a URL's host or port, in words that quote no password."""
    try:
        netloc: str | None = urlsplit(url).netloc
    except ValueError:
        netloc = None
    has_password = without_password(url) != url
    # Past the @, or with no password at all, what urllib took for a port is one: that of
    # the host urllib cannot read (an empty one it takes, as the default port).
    if netloc is not None and ("@" in netloc or not has_password):
        for host in netloc.rpartition("@")[2].split(","):
            try:
                urlsplit(f"//{host}").port  # noqa: B018 - parsing the port is what checks it
            except ValueError:
                _, colon, port = host.rpartition(":")
                if colon and "]" not in port and not _PORT.match(port):
                    return f"its port {port!r} is not a number from 0 to 65535"
    if has_password:
        # urllib's reason quotes the text it misread, which may be a piece of the password.
        return (
            "its host or port cannot be read (a / ? # or @ in the password must be "
            "percent-encoded: %2F %3F %23 %40)"
        )
    return str(error)


def _connect_options(url: str) -> _ConnectOptions:
    """Split our own ``schema`` parameter (and ``connect_timeout``, which asyncpg does not
    take from a URL) off the URL asyncpg gets."""
    try:
        parts = urlsplit(url)
        # Several hosts (host1:5432,host2:5432, tried in turn) are libpq's and asyncpg's
        # syntax, which urllib cannot read a port from; checking each is theirs then.
        for host in parts.netloc.rpartition("@")[2].split(","):
            urlsplit(f"//{host}").port  # noqa: B018 - parsing the port is what checks it
    except ValueError as error:
        raise StoreUnavailable(
            f"{_redacted_or_hidden(url)} is not a valid PostgreSQL URL: "
            f"{_unreadable_address(url, error)}"
        ) from error
    if parts.netloc.count("@") > 1:
        # asyncpg would split at the first one and look up the rest of the password as a host.
        raise StoreUnavailable(
            f"{_redacted_or_hidden(url)} is not a valid PostgreSQL URL: an @ in the user name "
            "or password must be percent-encoded: %40"
        )
    if "@" not in parts.netloc and without_password(url) != url:
        # A password starting with digits and holding a / ? or #: the user reads as a host
        # and the digits as its port (postgres:5432/...@host), an address urllib takes, and
        # asyncpg would connect there, sending part of the password as the database's name.
        raise StoreUnavailable(
            f"{without_password(url)} is not a valid PostgreSQL URL: it has an @ after its "
            "host; a / ? # or @ in the password must be percent-encoded (%2F %3F %23 %40), "
            "and an @ in the database name or a parameter too"
        )
    if "#" in url:
        # asyncpg ignores a fragment: what follows a # (a password's rest, say) is lost.
        raise StoreUnavailable(
            f"{_redacted_or_hidden(url.partition('#')[0])}#... is not a valid PostgreSQL URL: "
            "it takes no #fragment; a # in a name or password must be percent-encoded: %23"
        )
    _refuse_text_postgresql_cannot_take(url, parts)
    query = parse_qsl(parts.query, keep_blank_values=True)
    address = parts.netloc.rpartition("@")[2]
    given = {
        "host": address or None,
        "port": address if any(_has_port(host) for host in address.split(",")) else None,
        "user": parts.username,
        "password": parts.password,
    }
    for key, _ in query:
        if given.get(key) is not None:
            # asyncpg keeps the address's own and ignores the parameter: say so instead.
            raise StoreUnavailable(
                f"{_redacted_or_hidden(url)} gives the {key} twice (in the address and as "
                f"?{key}=); give it once"
            )
    # asyncpg reads the path as the database even when it is only "/", and then ignores
    # ?dbname=: the name given as a parameter is moved into the path.
    # Named twice even with one name, as the host, port and user given twice are refused.
    named = [value for key, value in query if key in ("dbname", "database")]
    in_path = unquote(parts.path.strip("/"))
    if len(named) > 1 or (named and in_path):
        raise StoreUnavailable(
            f"{_redacted_or_hidden(url)} names the database more than once (in the path or as "
            "?dbname= or ?database=); name it once"
        )
    if named:
        in_path = named[0]
        parts = parts._replace(path="/" + quote(in_path, safe=""))
    query = [(key, value) for key, value in query if key not in ("dbname", "database")]
    keys = [key for key, _ in query]
    for key in dict.fromkeys(keys):
        if keys.count(key) > 1:
            # asyncpg keeps the last and ignores the others (sslmode=disable&sslmode=require
            # asks for TLS).
            raise StoreUnavailable(
                f"{_redacted_or_hidden(url)} gives {key} more than once; give it once"
            )
    _check_parameters_asyncpg_reads(query, url)
    # Without one, libpq falls back to a default database (PGDATABASE, or the user's name)
    # and the log's tables would be created in whatever that is.
    given_once = dict(query)
    if not in_path:
        _refuse_no_database(url, given_once.get("service"))
    timeout = _connect_timeout(given_once.get("connect_timeout"))
    schema = given_once.get("schema")
    passed = [(key, value) for key, value in query if key not in ("connect_timeout", "schema")]
    if schema is not None and not _SCHEMA_NAME.fullmatch(schema):
        raise StoreUnavailable(
            f"schema {schema!r} is not a valid name: use lowercase letters, digits and _ "
            "(at most 63, not starting with a digit)"
        )
    if schema is not None and _SYSTEM_SCHEMA.fullmatch(schema):
        raise StoreUnavailable(
            f"schema {schema!r} is one of PostgreSQL's own (pg_..., information_schema): "
            "name a schema of the log's own"
        )
    if schema is not None and any(
        key == "search_path" or (key == "options" and "search_path" in value)
        for key, value in passed
    ):
        # ?schema= sets the search_path itself, and the other was silently dropped.
        raise StoreUnavailable(
            f"{_redacted_or_hidden(url)} gives both ?schema= and a search_path; "
            "?schema= alone says where the log is"
        )
    settings: dict[str, str] = {}
    if "application_name" not in dict(passed):
        settings["application_name"] = "leaderlog"
    if "lock_timeout" not in dict(passed):
        # As SQLite's busy timeout: a lock held elsewhere for longer is "busy", not a hang.
        settings["lock_timeout"] = f"{int(LOCK_TIMEOUT * 1000)}ms"
    if schema is not None:
        settings["search_path"] = f'"{schema}"'
    dsn = urlunsplit(parts._replace(query=urlencode(passed)))
    search_path_given = schema is not None or "search_path" in dict(passed)
    return _ConnectOptions(dsn, settings, schema, timeout, search_path_given)


def check_url(url: str) -> None:
    """Refuse (:class:`StoreUnavailable`) a PostgreSQL URL whose form is wrong, without
    connecting."""
    _connect_options(url)


def _row_to_event(row: asyncpg.Record) -> RecordedEvent:
    return event_from_row(tuple(row), uuid.UUID(bytes=row[1].bytes))


def _rows_to_columns(rows: Sequence[PlannedRow]) -> list[list[Any]]:
    return [
        [row.position for row in rows],
        [row.event_id for row in rows],
        [row.stream for row in rows],
        [row.version for row in rows],
        [row.type for row in rows],
        [row.schema_version for row in rows],
        [row.data_json.decode() for row in rows],
        [row.recorded_at for row in rows],
        [row.actor for row in rows],
        [row.meta_json.decode() for row in rows],
        [row.hash for row in rows],
    ]


def _holding_nul(batch: PendingBatch) -> StoreError | None:
    """The refusal of a batch naming the NUL character where it would be stored, or
    compared, as text: PostgreSQL's text cannot hold it. Data and meta are JSON, which
    writes it as an escape."""
    named = [
        ("actor", batch.actor),
        *(("stream", event.stream) for event in batch.events),
        *(("type", event.type) for event in batch.events),
        *(("stream", stream) for stream in (*batch.expected, *batch.depends)),
    ]
    for what, text in named:
        if "\x00" in text:
            return StoreError(
                "PostgreSQL text cannot hold the NUL character (U+0000), and this batch's "
                f"{what} {text!r} has one"
            )
    return None


class _Created(NamedTuple):
    """Where the events table is, and what opening the store created."""

    schema: str
    table_oid: int
    table_created: bool
    schema_created: bool


# A network that stops carrying packets without closing the connection (a host or a NAT
# entry gone) would otherwise hold a command waiting for an answer for good. As libpq's
# keepalives do, the kernel probes a connection with nothing on the way and gives up on one
# whose probes go unanswered: a long statement on a live server goes on, since its host
# answers them. (No limit on unacknowledged bytes, libpq's tcp_user_timeout: it would also
# cut a live server that reads nothing for as long, and the kernel's retransmissions end a
# send into a dead network anyway, in about 15 minutes.)
KEEPALIVE_IDLE_SECONDS = 30
KEEPALIVE_INTERVAL_SECONDS = 10
KEEPALIVE_PROBES = 3


async def _give_up_on_a_dead_network(connection: asyncpg.Connection[asyncpg.Record]) -> None:
    """Set the kernel's keepalive probes on a TCP connection (not on a Unix socket, which
    has none)."""
    # asyncpg offers no way to its socket but its transport's.
    transport = getattr(connection, "_transport", None)
    sock = transport.get_extra_info("socket") if transport is not None else None
    if sock is None or sock.family not in (socket.AF_INET, socket.AF_INET6):
        return
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for option, value in (
        ("TCP_KEEPIDLE", KEEPALIVE_IDLE_SECONDS),
        ("TCP_KEEPINTVL", KEEPALIVE_INTERVAL_SECONDS),
        ("TCP_KEEPCNT", KEEPALIVE_PROBES),
    ):
        # Linux has them all; another system keeps its own defaults for those it lacks.
        if hasattr(socket, option):
            sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, option), value)


async def _open_pool(
    dsn: str, settings: dict[str, str], timeout: float | None, shown: str
) -> asyncpg.Pool[asyncpg.Record]:
    try:
        # None, no limit, is what asyncpg runs with as timeout (its annotation says float).
        pool: asyncpg.Pool[asyncpg.Record] = await asyncpg.create_pool(  # type: ignore[call-overload]
            dsn,
            min_size=_POOL_MIN,
            max_size=_POOL_MAX,
            timeout=timeout,
            server_settings=settings,
            init=_give_up_on_a_dead_network,
        )
        return pool
    except _OPEN_OR_URL_ERRORS as error:
        reason = _reason(error)
        if isinstance(error, TimeoutError) and timeout is not None:
            # Its text is empty: what was waited for, and for how long, is the message.
            reason = (
                f"no answer within {timeout:g} s: is PostgreSQL running on that host and "
                "port? (?connect_timeout=SECONDS waits longer, 0 as long as it takes)"
            )
        message = f"cannot open PostgreSQL database {shown}: {reason}"
        raise _unreachable(error)(message) from error


# The schemas on the session's search_path holding an events table, in search order.
_LOGS_ON_THE_PATH = (
    "SELECT s.name FROM unnest(current_schemas(false)) WITH ORDINALITY AS s(name, place) "
    "WHERE to_regclass(quote_ident(s.name) || '.events') IS NOT NULL ORDER BY s.place"
)


async def _default_schema(
    connection: asyncpg.pool.PoolConnectionProxy[asyncpg.Record], where: str
) -> str | None:
    """The schema a URL without ?schema= means: the one on the default search_path holding
    an events table, else the one a new log is created in (None: no schema there)."""
    found = [str(row[0]) for row in await connection.fetch(_LOGS_ON_THE_PATH)]
    if len(found) > 1:
        raise StoreUnavailable(
            f"{where} has events tables in schemas {', '.join(found)}, all on its search_path: "
            f"name the log's with ?schema= (e.g. ?schema={found[-1]})"
        )
    if found:
        return found[0]
    current = await connection.fetchval("SELECT current_schema()")
    return None if current is None else str(current)


async def _create_schema(
    connection: asyncpg.pool.PoolConnectionProxy[asyncpg.Record], schema: str | None, where: str
) -> _Created:
    """Create what is missing, one process at a time."""
    async with connection.transaction():
        # Where CREATE puts what it makes: the path's first schema that exists, or the
        # ?schema= one about to be created.
        current = await connection.fetchval("SELECT current_schema()")
        key = _schema_lock_key(schema if current is None else str(current))
        await connection.execute("SELECT pg_advisory_xact_lock($1)", key)
        created_schema = schema is not None and not await connection.fetchval(
            "SELECT 1 FROM pg_namespace WHERE nspname = $1", schema
        )
        if created_schema:
            await connection.execute(f'CREATE SCHEMA "{schema}"')
        # By oid: without ?schema=, an events table found further along the search path
        # is not the one CREATE TABLE IF NOT EXISTS looks for.
        found_before = await connection.fetchval("SELECT to_regclass('events')::oid::bigint")
        await connection.execute(SCHEMA)
        row = await connection.fetchrow(_EVENTS_TABLE)
        if row is None:
            raise StoreUnavailable("the events table could not be created")
        # Raised inside the transaction: the triggers just put on a foreign table roll back.
        await _check_columns(connection, str(row[0]), where)
    return _Created(str(row[0]), int(row[1]), found_before != row[1], created_schema)


async def _check_columns(
    connection: asyncpg.pool.PoolConnectionProxy[asyncpg.Record], schema: str, where: str
) -> None:
    columns = [str(column[0]) for column in await connection.fetch(_EVENTS_COLUMNS)]
    if sorted(columns) != sorted(_COLUMN_NAMES):
        raise StoreUnavailable(
            f"{where} is not a leaderlog database: its events table (schema {schema}) has "
            f"other columns ({', '.join(columns)})"
        )


async def _existing_schema(
    connection: asyncpg.pool.PoolConnectionProxy[asyncpg.Record], where: str, schema: str | None
) -> tuple[str, int]:
    """The events table's schema and oid, creating nothing: a command that only reads needs
    no rights to create, and must not leave an empty log behind a mistyped schema name."""
    row = await connection.fetchrow(
        "SELECT n.nspname, c.oid::bigint FROM pg_class c "
        "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = to_regclass('events')"
    )
    if row is None:
        looked = f"in schema {schema!r}" if schema is not None else "on its search path"
        raise StoreUnavailable(
            f"{where} holds no leaderlog log (no events table {looked}): nothing was "
            "created; import records into it first, or check the database and ?schema="
        )
    await _check_columns(connection, str(row[0]), where)
    return str(row[0]), int(row[1])


class _PostgresProjectionTransaction(ProjectionTransaction):
    def __init__(
        self,
        connection: asyncpg.pool.PoolConnectionProxy[asyncpg.Record],
        append_lock_key: int,
        schema_lock_key: int,
        log_gone: Callable[[], Awaitable[bool]],
    ) -> None:
        self._connection = connection
        self._append_lock_key = append_lock_key
        self._schema_lock_key = schema_lock_key
        self._log_gone = log_gone

    async def _statement(self, work: Callable[[], Awaitable[_T]]) -> _T:
        """``work``'s result; a missing table or schema is the log's being dropped (a
        :class:`LogRemoved`) when the events table is gone too, not the statement's fault."""
        try:
            with _unavailable_on_disconnect():
                return await work()
        except _MISSING_RELATION as error:
            if await self._log_gone():
                raise _log_removed(_reason(error)) from error
            raise

    async def lock_appends(self) -> None:
        with _unavailable_on_disconnect():
            await self._connection.execute(
                "SELECT pg_advisory_xact_lock($1)", self._append_lock_key
            )

    async def refresh_statistics(self, tables: Sequence[str]) -> None:
        # Until autovacuum analyses them (never, where it is off), freshly rebuilt tables
        # are planned as if empty: a state query joined a sequential scan per dispute link.
        with _unavailable_on_disconnect():
            for table in tables:
                await self._connection.execute(f'ANALYZE "{table}"')

    @contextlib.asynccontextmanager
    async def confined(self, owns: Callable[[str], bool], savepoint: str) -> AsyncIterator[None]:
        """PostgreSQL has no authorizer to refuse a statement as it runs: what the
        statements changed beyond their own tables is found when they end, still inside the
        projection's savepoint, and refused (see ``_postgres_confinement``). Deferred
        constraints are checked then too: left to the page's COMMIT, a violation would fail
        every projection's page, every time. Ending the transaction or taking the runner's
        savepoint is refused before the statement runs, by the runner itself."""
        before = await take_snapshot(self.fetchall)
        yield
        try:
            await self.execute("SET CONSTRAINTS ALL IMMEDIATE")
            wrong = await overreach(self.fetchall, before, owns)
        except StoreBusy as busy:
            cause = busy.__cause__
            if not isinstance(cause, asyncpg.QueryCanceledError) or "statement timeout" not in (
                str(cause)
            ):
                raise
            # A statement_timeout the projection set cuts the check itself short: told as
            # the setting the check would have found changed, rather than as the database
            # being busy (which would try the page again, and again).
            raise ProjectionError(
                "a projection may not do this: changing the setting statement_timeout (it "
                "would stay for the statements after it, the runner's and other projections'; "
                f"the check after it ran out of time: {_reason(cause)})"
            ) from busy
        if wrong is not None:
            raise ProjectionError(f"a projection may not do this: {wrong}")

    async def execute(self, sql: str, parameters: Sequence[Any] = ()) -> None:
        if parameters:
            await self._statement(
                lambda: self._connection.execute(translate_placeholders(sql), *parameters)
            )
        else:
            # Without parameters the simple protocol runs scripts of several statements.
            await self._statement(lambda: self._connection.execute(sql))

    async def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if not rows:
            return
        await self._statement(lambda: self._executemany(translate_placeholders(sql), rows))

    async def _executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """asyncpg's executemany, which cancelled while it waits to send more rows (the
        server reading slower than it writes) waits for good for an answer the server never
        sends, as it waits for the rest of the rows: the page, and a catch-up, rebuild or
        shutdown cancelled with it, hung. Cancelled, the connection is closed first, which
        rolls the transaction back (the page is given up anyway) and answers that wait, and
        only then is the driver cancelled: closed alone, it would go on waiting to write."""
        running = asyncio.ensure_future(self._connection.executemany(sql, rows))
        try:
            await asyncio.shield(running)
        except asyncio.CancelledError:
            self._connection.terminate()
            running.cancel()
            with contextlib.suppress(BaseException):
                await running
            raise

    async def fetchall(self, sql: str, parameters: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        rows = await self._statement(
            lambda: self._connection.fetch(translate_placeholders(sql), *parameters)
        )
        return [tuple(row) for row in rows]

    async def lock_schema_changes(self) -> None:
        # The lock the log's own tables are created under: one process at a time.
        with _unavailable_on_disconnect():
            await self._connection.execute(
                "SELECT pg_advisory_xact_lock($1)", self._schema_lock_key
            )


class PostgresStore(EventStore):
    dialect = "postgresql"

    def __init__(
        self,
        pool: asyncpg.Pool[asyncpg.Record],
        *,
        dsn: str,
        settings: dict[str, str],
        connect_timeout: float | None = _CONNECT_TIMEOUT,
        schema: str,
        table_oid: int,
        created: _Created | None = None,
        tables_schema: str | None = None,
    ) -> None:
        super().__init__()
        self.schema = schema
        self._created = created
        self.created_log = created is not None and created.table_created
        self._pool = pool
        # asyncpg's connections belong to the loop that made them; another loop's use of
        # them fails far from its cause ("another operation is in progress").
        self._loop = asyncio.get_running_loop()
        self._dsn = dsn
        self._settings = settings
        self._connect_timeout = connect_timeout
        self._table_oid = table_oid
        self._append_lock_key = _LOCK_SPACE | table_oid
        # Projections' tables go where CREATE puts them, not always beside the events table.
        self._schema_lock_key = _schema_lock_key(tables_schema or schema)
        # One writer per process waits on the advisory lock; the others wait here without
        # holding a pooled connection.
        self._write_lock = asyncio.Lock()
        self._listener: asyncpg.Connection[asyncpg.Record] | None = None
        self._listener_lock = asyncio.Lock()
        self._listen_again_at = 0.0
        self._known_head = 0
        self._wakeup = asyncio.Event()
        self._closed = False

    @classmethod
    async def open(cls, url: str, *, create: bool = True) -> PostgresStore:
        """Open the log a URL names; ``create=False`` refuses one that does not exist
        (and runs no DDL, so a role that may only read can open it)."""
        dsn, settings, schema, timeout, search_path_given = _connect_options(url)
        # The address as given, ?schema= and settings included: they may be what is wrong.
        shown = _redacted_or_hidden(url)
        pool = await _open_pool(dsn, settings, timeout, shown)
        try:
            if not search_path_given:
                # Every connection keeps to the schema found now: a ?schema= log made later
                # under the role's name would come first on the default search_path.
                async with pool.acquire() as connection:
                    found = await _default_schema(connection, shown)
                # Idle now, so closed at once: an awaited close that a Ctrl-C interrupts (a
                # KeyboardInterrupt, which asyncpg does not clean up after, as it does after a
                # cancellation) leaves its connections open, and a second close returns
                # without closing them.
                pool.terminate()
                if found is not None:
                    settings = {**settings, "search_path": f'"{found}"'}
                pool = await _open_pool(dsn, settings, timeout, shown)
        except _SERVER_ERRORS as error:
            await pool.close()
            reason = _reason(error) + _statement_timeout_hint(error)
            raise _unreachable(error)(
                f"cannot prepare PostgreSQL database {shown}: {reason}"
            ) from error
        except BaseException:
            pool.terminate()  # cancelled or interrupted: nothing to wait for
            raise
        try:
            created: _Created | None = None
            async with pool.acquire() as connection:
                _check_version(tuple(connection.get_server_version()[:2]), shown)
                _check_encoding(await connection.fetchval("SHOW server_encoding"), shown)
                await _check_settings_arrived(connection, settings, schema, shown)
                if create:
                    created = await _create_schema(connection, schema, shown)
                    table_schema, table_oid = created.schema, created.table_oid
                else:
                    table_schema, table_oid = await _existing_schema(connection, shown, schema)
                current = await connection.fetchval("SELECT current_schema()")
        except asyncpg.ReadOnlySQLTransactionError as error:
            await pool.close()
            raise _read_only(
                f"cannot prepare PostgreSQL database {shown}: {_reason(error)}"
            ) from error
        except _SERVER_ERRORS as error:
            await pool.close()
            reason = _reason(error)
            if isinstance(error, asyncpg.InsufficientPrivilegeError):
                # Creating or checking the log's tables (CREATE ... IF NOT EXISTS, CREATE OR
                # REPLACE FUNCTION) takes rights a role that may only read lacks.
                reason = f"{reason}; {_RIGHTS_NEEDED}"
            else:
                # Checking the log's tables on opening meets it as any statement does.
                reason += _statement_timeout_hint(error)
            raise _unreachable(error)(
                f"cannot prepare PostgreSQL database {shown}: {reason}"
            ) from error
        except BaseException:
            pool.terminate()  # cancelled or interrupted: nothing to wait for
            raise
        return cls(
            pool,
            dsn=dsn,
            settings=settings,
            connect_timeout=timeout,
            schema=table_schema,
            table_oid=table_oid,
            created=created,
            tables_schema=None if current is None else str(current),
        )

    async def discard_created_log(self) -> bool:
        """See :meth:`EventStore.discard_created_log`: the events table, its trigger
        function and a ``?schema=`` schema the store created go; the database stays."""
        created = self._created
        if created is None or not created.table_created:
            return False
        schema = f'"{created.schema}"'
        async with self._write_lock:
            with _unavailable_on_disconnect():
                async with self._pool.acquire() as connection, connection.transaction():
                    # No store can be creating the log, nor appending to it, meanwhile.
                    await connection.execute(
                        "SELECT pg_advisory_xact_lock($1)", self._schema_lock_key
                    )
                    await connection.execute(
                        "SELECT pg_advisory_xact_lock($1)", self._append_lock_key
                    )
                    if await connection.fetchval(f"SELECT EXISTS (SELECT 1 FROM {schema}.events)"):
                        return False
                    await connection.execute(f"DROP TABLE {schema}.events")
                    await connection.execute(
                        f"DROP FUNCTION IF EXISTS {schema}.leaderlog_events_are_append_only()"
                    )
                    if created.schema_created:
                        # Only if nothing else was put in it meanwhile (RESTRICT).
                        with contextlib.suppress(asyncpg.DependentObjectsStillExistError):
                            async with connection.transaction():
                                await connection.execute(f"DROP SCHEMA {schema}")
        self.created_log = False
        self._created = None
        return True

    async def close(self) -> None:
        """Close the connections, in the event loop that opened them: from another (or
        once that loop has ended) asyncpg could only fail saying the loop is closed."""
        if self._closed and self._pool.is_closing():
            return  # closed already (its loop may have ended since): nothing is left to close
        self._in_its_loop()
        self._closed = True
        listener, self._listener = self._listener, None
        if listener is not None:
            with contextlib.suppress(*_CONNECTION_ERRORS):
                await listener.close()
        self._wake(self._known_head)
        await self._pool.close()

    # --- writing ---------------------------------------------------------------------------

    async def append_batches(
        self, batches: Sequence[PendingBatch], progress: WriteProgress | None = None
    ) -> list[AppendResult | StoreError]:
        if not batches:
            return []
        self._in_its_loop()
        unstorable = {
            index: refused
            for index, batch in enumerate(batches)
            if (refused := _holding_nul(batch)) is not None
        }
        if unstorable:
            # Sent along, such a batch would fail the statement, and with it every batch
            # committed together: it is refused alone, as a stale expected version is.
            storable_ones = [
                batch for index, batch in enumerate(batches) if index not in unstorable
            ]
            written = iter(await self.append_batches(storable_ones, progress))
            return [
                unstorable[index] if index in unstorable else next(written)
                for index in range(len(batches))
            ]
        reporter = None if progress is None else WriteProgressReporter(progress, batches)
        async with self._write_lock:
            with _log_still_there(), _unavailable_on_disconnect():
                connection = await self._pool.acquire()
                try:
                    # READ COMMITTED so the head is read after the lock, not from an older
                    # snapshot.
                    async with connection.transaction(isolation="read_committed"):
                        await connection.execute(
                            "SELECT pg_advisory_xact_lock($1)", self._append_lock_key
                        )
                        outcomes, rows = await self._plan(
                            connection, batches, reporter, self._table_oid
                        )
                        for start in range(0, len(rows), _INSERT_CHUNK):
                            chunk = rows[start : start + _INSERT_CHUNK]
                            await connection.execute(_INSERT, *_rows_to_columns(chunk))
                            if reporter is not None:
                                reporter.inserted(start + len(chunk), len(rows))
                        if rows:
                            await connection.execute(
                                "SELECT pg_notify($1, $2)",
                                CHANNEL,
                                f"{self.schema}:{rows[-1].position}",
                            )
                finally:
                    # Committed, the batches are written, whatever becomes of the connection
                    # next: one lost just after must not answer them as not written.
                    await _release(self._pool, connection)
        if reporter is not None:
            reporter.finished(outcomes)  # committed
        if rows:
            self._wake(rows[-1].position)
        return outcomes

    @staticmethod
    async def _plan(
        connection: asyncpg.pool.PoolConnectionProxy[asyncpg.Record],
        batches: Sequence[PendingBatch],
        reporter: WriteProgressReporter | None,
        table_oid: int,
    ) -> tuple[list[AppendResult | StoreError], list[PlannedRow]]:
        """Read the state the batches depend on (under the append lock) and lay out the rows."""
        streams = batch_streams(batches)
        ids = [event.event_id for batch in batches for event in batch.events]
        # The database's clock, not this host's: every writer of the log then stamps from
        # one clock, and a host whose clock is off cannot make recorded times go backwards.
        head = await connection.fetchrow(_HEAD_AND_CLOCK)
        assert head is not None  # the query always gives one row
        head_position, head_hash, head_time, now, table_now = head
        if table_now != table_oid:
            # Dropped and created anew since this store opened it (another process's first
            # import refused, then one more): the lock just taken is the old table's, and
            # the new log's writers take turns under another.
            raise _log_removed("its events table was dropped and created anew")
        versions = {
            row[0]: row[1]
            for row in await connection.fetch(
                "SELECT stream, MAX(version) FROM events "
                "WHERE stream = ANY($1::text[]) GROUP BY stream",
                streams,
            )
        }
        existing = {
            uuid.UUID(bytes=row[0].bytes): (row[1], row[2], row[3], row[4].encode())
            for row in await connection.fetch(
                "SELECT event_id, position, stream, type, data FROM events "
                "WHERE event_id = ANY($1::uuid[])",
                ids,
            )
        }
        if head_position is None:
            head_position, head_hash = 0, GENESIS_HASH
        guarded = [
            guard.refused(
                await connection.fetch(translate_placeholders(guard.sql), *guard.parameters)
            )
            if (guard := batch.guard) is not None
            else None
            for batch in batches
        ]
        return plan_rows(
            batches, versions, existing, head_position, head_hash, now, head_time, guarded, reporter
        )

    # --- reading ---------------------------------------------------------------------------

    def _in_its_loop(self) -> None:
        if asyncio.get_running_loop() is not self._loop:
            raise RuntimeError(
                "this PostgreSQL store was opened in another event loop; open one store (or "
                "EventLog) per event loop (or thread)"
            )

    async def _fetch(self, sql: str, *parameters: Any) -> list[asyncpg.Record]:
        self._in_its_loop()
        try:
            with _unavailable_on_disconnect():
                return await self._pool.fetch(sql, *parameters)
        except _MISSING_RELATION as error:
            # A projection's table missing is its own matter (not built yet), unless the
            # whole log went with it: then that is what to say, not "run rebuild".
            if await self._log_gone():
                raise _log_removed(_reason(error)) from error
            raise

    async def _log_gone(self) -> bool:
        """Whether the events table is missing from the log's schema (asked on a connection
        of its own: the one that met the missing table may be in a failed transaction)."""
        try:
            with _unavailable_on_disconnect():
                rows = await self._pool.fetch("SELECT to_regclass('events') IS NULL")
        except StoreError:
            return False
        return bool(rows[0][0])

    async def _fetch_from_log(self, sql: str, *parameters: Any) -> list[asyncpg.Record]:
        """:meth:`_fetch` for the events table: a missing table is the log's, with no need to
        ask whether it is gone."""
        self._in_its_loop()
        with _log_still_there(), _unavailable_on_disconnect():
            return await self._pool.fetch(sql, *parameters)

    async def _select(self, where: str, *parameters: Any) -> list[RecordedEvent]:
        return [
            _row_to_event(row)
            for row in await self._fetch_from_log(
                f"SELECT {_COLUMNS} FROM events {where}", *parameters
            )
        ]

    async def read_all(self, after: int = 0, limit: int | None = None) -> list[RecordedEvent]:
        # LIMIT NULL means no limit.
        return await self._select(
            "WHERE position > $1 ORDER BY position LIMIT $2",
            storable(after),
            None if limit is None else storable(limit),
        )

    async def read_all_as_stored(
        self, after: int, limit: int
    ) -> list[tuple[RecordedEvent, StoredText]]:
        rows = await self._fetch_from_log(
            f"SELECT {_COLUMNS} FROM events WHERE position > $1 ORDER BY position LIMIT $2",
            storable(after),
            storable(limit),
        )
        return [(_row_to_event(row), StoredText(row[6], row[9], row[7])) for row in rows]

    async def read_streams(self, streams: Sequence[str]) -> dict[str, list[RecordedEvent]]:
        found: dict[str, list[RecordedEvent]] = {}
        # A name holding NUL cannot be sent, nor stored: no event is in such a stream.
        named = [stream for stream in dict.fromkeys(streams) if "\x00" not in stream]
        for event in await self._select(
            "WHERE stream = ANY($1::text[]) ORDER BY stream, version", named
        ):
            found.setdefault(event.stream, []).append(event)
        return found

    async def find_event_ids(self, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, RecordedEvent]:
        events = await self._select("WHERE event_id = ANY($1::uuid[])", list(ids))
        return {event.event_id: event for event in events}

    async def get(self, position: int) -> RecordedEvent | None:
        found = await self._select("WHERE position = $1", storable(position))
        return found[0] if found else None

    async def head(self) -> tuple[int, str]:
        rows = await self._fetch_from_log(_HEAD)
        return (rows[0][0], rows[0][1]) if rows else (0, GENESIS_HASH)

    async def count(self) -> int:
        rows = await self._fetch_from_log("SELECT COUNT(*) FROM events")
        return int(rows[0][0])

    # --- following -------------------------------------------------------------------------

    def forget_heads_beyond(self, head: int) -> None:
        super().forget_heads_beyond(head)
        self._known_head = min(self._known_head, head)

    def _wake(self, position: int) -> None:
        self._known_head = max(self._known_head, position)
        # Waiters hold the event they started waiting on; a fresh one serves the next round.
        wakeup, self._wakeup = self._wakeup, asyncio.Event()
        wakeup.set()

    def _on_notification(
        self,
        connection: object,
        pid: int,
        channel: str,
        payload: object,
    ) -> None:
        schema, _, position = str(payload).rpartition(":")
        if schema == self.schema and position.isdigit():
            self._wake(int(position))

    def _on_listener_lost(self, connection: object) -> None:
        if self._listener is connection:
            self._listener = None

    def _listening(self) -> bool:
        return self._listener is not None and not self._listener.is_closed()

    async def _listen(self) -> bool:
        """Make sure notifications arrive; True when listening has just (re)started."""
        if self._listening():
            return False
        async with self._listener_lock:
            loop = asyncio.get_running_loop()
            if self._closed or self._listening() or loop.time() < self._listen_again_at:
                return False
            try:
                listener = await asyncpg.connect(
                    self._dsn,
                    timeout=self._connect_timeout,  # type: ignore[arg-type]  # as in open()
                    server_settings=self._settings,
                )
            except _LISTEN_ERRORS:
                # Polling still works; try listening again a little later.
                self._listen_again_at = loop.time() + _LISTEN_RETRY_DELAY
                return False
            if self._closed:
                await listener.close()
                return False
            try:
                await _give_up_on_a_dead_network(listener)
                await listener.add_listener(CHANNEL, self._on_notification)
            except _LISTEN_ERRORS:
                self._listen_again_at = loop.time() + _LISTEN_RETRY_DELAY
                listener.terminate()
                return False
            listener.add_termination_listener(self._on_listener_lost)
            self._listener = listener
            return True

    async def _holds_beyond(self, after: int) -> bool:
        """Whether the log holds an event past ``after``, as a notification said. Anyone who
        may connect can send one (NOTIFY takes no right on the log): one naming a position
        past the head, believed, would end every later wait at once, and a follower would
        read the log in a busy loop."""
        said = self._known_head
        try:
            head, _ = await self.head()
        except StoreUnavailable:
            return True  # the caller's next read meets the trouble and waits it out
        if head > after:
            return True
        if self._known_head == said:  # no commit was heard meanwhile
            self._known_head = head
        return False

    async def wait_for_events(self, after: int, timeout: float) -> None:
        """Return once a commit past ``after`` is known, or after ``timeout`` (polling), or at
        once when listening has just (re)started or the store is closed (its next read says
        so)."""
        if self._closed:
            return
        wakeup = self._wakeup
        if await self._listen():
            # Commits made before LISTEN took effect sent no notification we could hear: the
            # caller reads again. Not read here: a follower's reads wait out a database that
            # cannot answer (a lock held elsewhere, a restart), where this wait would end it.
            return
        if self._known_head > after and await self._holds_beyond(after):
            return
        # asyncio.timeout, not wait_for: see EventStore.wait_for_events.
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await wakeup.wait()

    # --- projections -----------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def projection_transaction(self) -> AsyncIterator[ProjectionTransaction]:
        self._in_its_loop()
        with _unavailable_on_disconnect():
            connection = await self._pool.acquire()
        try:
            transaction = connection.transaction(isolation="read_committed")
            with _unavailable_on_disconnect():
                await transaction.start()
            try:
                yield _PostgresProjectionTransaction(
                    connection, self._append_lock_key, self._schema_lock_key, self._log_gone
                )
            except BaseException:
                with contextlib.suppress(*_CONNECTION_ERRORS, asyncpg.PostgresError):
                    await transaction.rollback()
                raise
            with _unavailable_on_disconnect():
                await transaction.commit()
        finally:
            await _release(self._pool, connection)

    async def query(self, sql: str, parameters: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return [tuple(row) for row in await self._fetch(translate_placeholders(sql), *parameters)]
