"""Event stores: the contract (:mod:`.base`) and its backends, chosen by database URL."""

from __future__ import annotations

import os
import re
from urllib.parse import unquote

from leaderlog.errors import StoreUnavailable
from leaderlog.store.base import (
    AppendGuard,
    AppendResult,
    EventStore,
    ExpectedVersion,
    NewEvent,
    PendingBatch,
    StoredText,
    VerifyReport,
    WriteProgress,
)

__all__ = [
    "DEFAULT_DATABASE_URL",
    "AppendGuard",
    "AppendResult",
    "EventStore",
    "ExpectedVersion",
    "NewEvent",
    "PendingBatch",
    "StoredText",
    "VerifyReport",
    "WriteProgress",
    "check_database_url",
    "database_url",
    "open_store",
    "without_password",
]

DEFAULT_DATABASE_URL = "sqlite:///leaderlog.db"


def database_url(explicit: str | None = None) -> str:
    """The URL to use: the explicit one, else ``LEADERLOG_DB``, else ``./leaderlog.db``.

    Only an unset one falls back: an empty one (``--db ""``, ``LEADERLOG_DB=``) is more
    likely a variable that went missing than a wish for the default file.
    """
    url = explicit if explicit is not None else os.environ.get("LEADERLOG_DB")
    if url is None:
        return DEFAULT_DATABASE_URL
    if not isinstance(url, str):
        raise TypeError(f"the database URL must be a string, got {url!r:.80}")
    if not url.strip():
        raise StoreUnavailable("the database URL is empty")
    control = _CONTROL_CHARACTER.search(url)
    if control is not None:
        # A URL read with its line end (a file's last line) would name a new, empty log
        # whose file name ends in a line feed. A URL holds no raw control character (RFC
        # 3986): one that is part of a SQLite file name is written percent-encoded (%0A).
        raise StoreUnavailable(
            f"the database URL {without_password(url)!r} holds the control character "
            f"{control[0]!r}; remove it (a line end read with the URL?)"
        )
    return url


def check_database_url(url: str | None = None) -> str:
    """The URL to use (:func:`database_url`), once its form is checked without connecting:
    a :class:`StoreUnavailable` names what is wrong with it (a scheme of another database,
    a SQLite URL with a query string, a PostgreSQL URL naming no database...)."""
    url = database_url(url)
    scheme = _scheme(url)
    if scheme in ("postgresql", "postgres"):
        from leaderlog.store.postgres import check_url as check_postgres_url

        check_postgres_url(url)
    elif scheme is None or scheme == "sqlite":
        from leaderlog.store.sqlite import check_url as check_sqlite_url

        check_sqlite_url(url)
    else:
        raise _unsupported(url)
    return url


_CONTROL_CHARACTER = re.compile(r"[\x00-\x1f\x7f]")
# What begins a URL (RFC 3986), two letters at least: a Windows drive (C:) begins a path.
_SCHEME_ALONE = re.compile(r"([A-Za-z][A-Za-z0-9+.-]+):")
# A database URL that lost the colon of its :// (postgresql//app:secret@host/db) reads as a
# relative path whose folders do not exist, which the error would then show whole.
_SCHEME_WITHOUT_COLON = re.compile(r"(sqlite|postgresql|postgres)//", re.IGNORECASE)


_URL_FORMS = "(sqlite:///path/to/file.db, postgresql://user@host:5432/dbname)"


def _scheme(url: str) -> str | None:
    # Schemes are case-insensitive (RFC 3986).
    if "://" in url:
        return url.partition("://")[0].lower()
    # Anything else is the path of a SQLite file: a URL mistyped (postgresql:/host/db) would
    # create a file named after it. Only the scheme is shown, as a password may follow it.
    lost_colon = _SCHEME_WITHOUT_COLON.match(url)
    if lost_colon is not None:
        scheme = lost_colon[1].lower()
        raise StoreUnavailable(
            f"a database URL beginning {scheme}// must begin {scheme}:// {_URL_FORMS}"
        )
    written = _SCHEME_ALONE.match(url)
    if written is not None and written[1].lower() != "sqlite":
        raise StoreUnavailable(
            f"a database URL beginning {written[1].lower()}: must go on with :// {_URL_FORMS}"
        )
    return None


def _unsupported(url: str) -> StoreUnavailable:
    return StoreUnavailable(
        f"unsupported database URL {without_password(url)!r}: "
        "use sqlite:///path or postgresql://..."
    )


async def open_store(url: str | None = None, *, create: bool = True) -> EventStore:
    """Open the store a URL names: ``sqlite:///path`` or ``postgresql://...``.

    ``create=False``: a log that does not exist is refused rather than created (a SQLite
    file that does not exist: see the CLI, which refuses it before opening it).
    """
    url = database_url(url)
    scheme = _scheme(url)
    if scheme in ("postgresql", "postgres"):
        from leaderlog.store.postgres import PostgresStore

        return await PostgresStore.open(url, create=create)
    if scheme is None or scheme == "sqlite":
        from leaderlog.store.sqlite import SQLiteStore

        return await SQLiteStore.open(url, create=create)
    raise _unsupported(url)


def without_password(url: str) -> str:
    """The URL fit to print: a password (``user:***@``, ``?password=***``) and a client key's
    passphrase (``?sslpassword=***``) hidden, however malformed the URL is.

    A password written with ``/``, ``?`` or ``#`` unencoded hides where the host begins, so
    everything from the user's ``:`` to the last ``@`` is hidden: a host or path lost from
    the message is better than a password shown in it.
    """
    scheme, separator, rest = url.partition("://")
    if separator and "@" in rest:
        user_part, _, after = rest.rpartition("@")
        user, colon, _ = user_part.partition(":")
        if colon and "/" not in user and "?" not in user:
            rest = f"{user}:***@{after}"
    return _QUERY_PARAMETER.sub(_password_hidden, f"{scheme}{separator}{rest}")


_QUERY_PARAMETER = re.compile(r"([?&])([^=&#]*)=([^&#]*)")


def _password_hidden(parameter: re.Match[str]) -> str:
    # By the name the driver reads: "%70assword" is "password" too.
    if unquote(parameter[2]).lower() in ("password", "sslpassword"):
        return f"{parameter[1]}{parameter[2]}=***"
    return parameter[0]
