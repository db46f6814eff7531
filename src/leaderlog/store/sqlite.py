"""The embedded default store: one SQLite file in WAL mode.

Writes go through one connection under ``BEGIN IMMEDIATE`` so positions are assigned by a
single writer at a time (gap-free by construction, also across processes). That connection
lives on its own thread and a whole append transaction runs there as one call, so an append
costs one hop off the event loop rather than one per statement. Reads use a second connection
(through aiosqlite) that only ever sees committed rows.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sqlite3
import sys
import threading
import time
import uuid
import warnings
import weakref
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import unquote

import aiosqlite

from leaderlog.errors import (
    LogRemoved,
    ProjectionError,
    StoreBusy,
    StoreDamaged,
    StoreError,
    StoreReadOnly,
    StoreUnavailable,
)
from leaderlog.events import RecordedEvent
from leaderlog.store.base import (
    CLOSED,
    FOREIGN_KEYS_QUERY,
    GENESIS_HASH,
    PROGRESS_STEP,
    AppendGuard,
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
    unreadable,
    utc_now,
)

__all__ = ["BUSY_TIMEOUT", "PRAGMAS", "SCHEMA", "SQLiteStore", "check_place", "check_url"]

_T = TypeVar("_T")

# Seconds a write waits for another process's write lock before "database is busy". The
# store reads it when it opens a connection (so a test can shorten it); PRAGMAS keeps the
# default for scripts that use them without a store.
BUSY_TIMEOUT = 10.0

# Shared with scripts/bench.py so the raw sqlite3 baseline runs with the same settings.
PRAGMAS = (
    "PRAGMA journal_mode=WAL",
    "PRAGMA synchronous=FULL",
    f"PRAGMA busy_timeout={int(BUSY_TIMEOUT * 1000)}",
    "PRAGMA foreign_keys=ON",
)

SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    position       INTEGER PRIMARY KEY,
    event_id       BLOB NOT NULL UNIQUE,
    stream         TEXT NOT NULL,
    version        INTEGER NOT NULL,
    type           TEXT NOT NULL,
    schema_version INTEGER NOT NULL,
    data           TEXT NOT NULL,
    recorded_at    TEXT NOT NULL,
    actor          TEXT NOT NULL,
    meta           TEXT NOT NULL,
    hash           TEXT NOT NULL,
    UNIQUE (stream, version)
);
CREATE TRIGGER IF NOT EXISTS events_are_append_only_update
BEFORE UPDATE ON events BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
CREATE TRIGGER IF NOT EXISTS events_are_append_only_delete
BEFORE DELETE ON events BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
"""

_COLUMNS = (
    "position, event_id, stream, version, type, schema_version, data, recorded_at, actor, meta, "
    "hash"
)
_INSERT = f"INSERT INTO events ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
_COLUMN_NAMES = tuple(_COLUMNS.split(", "))
# SQLite's default limit on host parameters is 32766; stay far below it.
_CHUNK = 500


def _row_to_event(row: Sequence[Any]) -> RecordedEvent:
    try:
        event_id = uuid.UUID(bytes=row[1])
    except (ValueError, TypeError):
        raise unreadable(row, f"event_id {row[1]!r:.60} is not 16 bytes") from None
    return event_from_row(row, event_id)


def _planned_to_row(row: PlannedRow) -> tuple[Any, ...]:
    return (
        row.position,
        row.event_id.bytes,
        row.stream,
        row.version,
        row.type,
        row.schema_version,
        row.data_json.decode(),
        row.recorded_at,
        row.actor,
        row.meta_json.decode(),
        row.hash,
    )


def _chunks(items: Sequence[Any]) -> Iterable[Sequence[Any]]:
    for start in range(0, len(items), _CHUNK):
        yield items[start : start + _CHUNK]


def _append(
    connection: sqlite3.Connection,
    batches: Sequence[PendingBatch],
    reporter: WriteProgressReporter | None,
) -> tuple[list[AppendResult | StoreError], bool]:
    """One append transaction, run whole on the writer thread."""
    try:
        # Ids are nearly always new (fresh UUIDv7s, or checked by the caller), so the UNIQUE
        # index is trusted to catch a stored one before paying for a lookup.
        return _append_in_transaction(connection, batches, reporter, look_up_ids=False)
    except sqlite3.IntegrityError:
        return _append_in_transaction(connection, batches, reporter, look_up_ids=True)


def _begin_immediate(connection: sqlite3.Connection) -> None:
    """Take the write lock, or say the database is busy once busy_timeout has run out."""
    try:
        connection.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as error:
        if error.sqlite_errorcode in _BUSY_CODES:
            raise StoreBusy(f"database is busy: {error}") from error
        raise StoreUnavailable(f"cannot write to the SQLite database: {error}") from error


def _append_in_transaction(
    connection: sqlite3.Connection,
    batches: Sequence[PendingBatch],
    reporter: WriteProgressReporter | None,
    *,
    look_up_ids: bool,
) -> tuple[list[AppendResult | StoreError], bool]:
    _begin_immediate(connection)
    try:
        head = connection.execute(
            "SELECT position, hash, recorded_at FROM events ORDER BY position DESC LIMIT 1"
        ).fetchone()
        head_position, head_hash, head_time = head if head else (0, GENESIS_HASH, None)
        streams = batch_streams(batches)
        versions: dict[str, int] = {}
        for chunk in _chunks(streams):
            marks = ",".join("?" * len(chunk))
            versions.update(
                connection.execute(
                    f"SELECT stream, MAX(version) FROM events WHERE stream IN ({marks}) "
                    "GROUP BY stream",
                    chunk,
                ).fetchall()
            )
        now = utc_now()
        guarded = [_guarded(connection, batch.guard) for batch in batches]
        existing = _stored_ids(connection, batches) if look_up_ids else {}
        outcomes, rows = plan_rows(
            batches, versions, existing, head_position, head_hash, now, head_time, guarded, reporter
        )
        if not look_up_ids and any(isinstance(o, StoreError) for o in outcomes):
            # A refused batch may be the retry of a stored one (an idempotent retry is no
            # conflict even when its stream has moved on): plan again knowing the stored ids.
            existing = _stored_ids(connection, batches)
            outcomes, rows = plan_rows(
                batches, versions, existing, head_position, head_hash, now, head_time, guarded
            )
        if reporter is None:
            if rows:
                connection.executemany(_INSERT, map(_planned_to_row, rows))
        else:
            for start in range(0, len(rows), PROGRESS_STEP):
                connection.executemany(
                    _INSERT, map(_planned_to_row, rows[start : start + PROGRESS_STEP])
                )
                reporter.inserted(min(start + PROGRESS_STEP, len(rows)), len(rows))
        connection.execute("COMMIT")
        if reporter is not None:
            reporter.finished(outcomes)
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            connection.execute("ROLLBACK")
        raise
    return outcomes, bool(rows)


def _guarded(connection: sqlite3.Connection, guard: AppendGuard | None) -> StoreError | None:
    if guard is None:
        return None
    return guard.refused(connection.execute(guard.sql, guard.parameters).fetchall())


def _stored_ids(
    connection: sqlite3.Connection, batches: Sequence[PendingBatch]
) -> dict[uuid.UUID, tuple[int, str, str, bytes]]:
    """(position, stream, type, canonical data) of each batch event id already stored."""
    existing: dict[uuid.UUID, tuple[int, str, str, bytes]] = {}
    ids = [event.event_id.bytes for batch in batches for event in batch.events]
    for chunk in _chunks(ids):
        marks = ",".join("?" * len(chunk))
        for row in connection.execute(
            "SELECT event_id, position, stream, type, data FROM events "
            f"WHERE event_id IN ({marks})",
            chunk,
        ):
            existing[uuid.UUID(bytes=row[0])] = (row[1], row[2], row[3], row[4].encode())
    return existing


def _stop_unanswered(reader: aiosqlite.Connection) -> None:
    """Stop a reader's thread without waiting for it to answer."""
    # stop() answers on the current event loop, which may be closed by the time the thread
    # gets to it (it then dies printing a traceback); called from a thread without a loop,
    # it answers nobody.
    stopping = threading.Thread(target=reader.stop, name="leaderlog-sqlite-reader-stop")
    try:
        stopping.start()
    except RuntimeError:
        reader.stop()  # the interpreter is exiting: no new thread may start


def _stop_abandoned(reader: aiosqlite.Connection, writer: _WriteConnection, path: str) -> None:
    _stop_unanswered(reader)
    writer.close_abandoned()
    # Stopped first: a warning turned into an error (-W error) must not keep it running.
    warnings.warn(
        f"the SQLite store on {path} was not closed; use `async with` or `await store.close()`",
        ResourceWarning,
        stacklevel=2,
    )


# Stores still open when the interpreter exits, garbage or not: their reader threads, which
# are not daemons, would hold the exit for good. threading calls this before it waits for
# such threads, as concurrent.futures has its own workers stopped (it has no public hook).
_open_stores: weakref.WeakSet[SQLiteStore] = weakref.WeakSet()


def _stop_open_stores() -> None:
    for store in list(_open_stores):
        # The main thread has ended; a store another thread opened and still runs in may
        # well be closed by it yet.
        opener = store._opened_by
        if opener is threading.main_thread() or not opener.is_alive():
            store._abandoned()


_before_threads_are_joined = getattr(threading, "_register_atexit", None)
if _before_threads_are_joined is not None:
    _before_threads_are_joined(_stop_open_stores)


_URL_PREFIX = "sqlite:///"


def path_from_url(url: str) -> Path:
    """``sqlite:///relative.db`` or ``sqlite:////absolute.db`` (or a bare path, taken as is).

    A URL's path is percent-decoded (``%20`` is a space, ``%3F`` a question mark), and a
    query string or fragment is refused rather than left in the file name. The scheme is
    case-insensitive, as in every URL.
    """
    if not url:
        raise StoreUnavailable("the database URL is empty")
    if url[: len("sqlite:")].lower() != "sqlite:":
        return _file_path(url, url)
    if url[: len(_URL_PREFIX)].lower() != _URL_PREFIX:
        raise StoreUnavailable(f"SQLite URLs look like sqlite:///path/to/file.db, not {url!r}")
    encoded = url[len(_URL_PREFIX) :]
    marks = [index for index in (encoded.find("?"), encoded.find("#")) if index >= 0]
    if marks:
        if encoded[min(marks)] == "?":
            raise StoreUnavailable(
                f"SQLite URLs take no query parameters: {url!r} "
                "(write a ? that is part of the file name as %3F)"
            )
        raise StoreUnavailable(
            f"SQLite URLs take no fragment: {url!r} "
            "(write a # that is part of the file name as %23)"
        )
    try:
        path = unquote(encoded, errors="strict")
    except UnicodeDecodeError:
        raise StoreUnavailable(
            f"{url!r} is not a valid SQLite URL: its percent-escapes are not UTF-8"
        ) from None
    if not path:
        raise StoreUnavailable(f"{url!r} names no file: use sqlite:///path/to/file.db")
    if "\0" in path:
        raise StoreUnavailable(f"{url!r} is not a valid SQLite URL: it contains a NUL character")
    return _file_path(path, url)


def _file_path(path: str, url: str) -> Path:
    """``path`` as a file's, refused when it ends as a folder's: Path() drops the trailing
    slash, and an import would then create a file named after the folder."""
    if path.endswith("/"):
        raise StoreUnavailable(
            f"{url!r} names a folder (it ends with /); name the database file in it, "
            "such as sqlite:///data/leaderlog.db"
        )
    return Path(path)


def check_url(url: str) -> Path:
    """The file a SQLite URL names, or :class:`StoreUnavailable` saying why it names none."""
    path = path_from_url(url)
    if str(path) == ":memory:":
        # The writer and the reader are two connections: two separate databases.
        raise StoreUnavailable(
            "an in-memory SQLite database is not supported: each connection would see "
            "its own empty database; use a file"
        )
    try:
        os.fsencode(path)
    except UnicodeEncodeError:
        # Every file operation on it would fail so (a UTF-8 name in a C or Latin-1 locale).
        shown = str(path).encode("unicode_escape").decode("ascii")
        raise StoreUnavailable(
            f"cannot use SQLite database {shown}: its name cannot be written in this "
            f"system's encoding for file names ({sys.getfilesystemencoding()}); run with a "
            "UTF-8 locale (LC_ALL=C.UTF-8) or choose a name it can write"
        ) from None
    return path


def check_place(path: Path) -> None:
    """Refuse, saying why, an absolute ``path`` no database can be at: a folder, or a file
    under a file. SQLite says only "unable to open database file" for either, and a command
    that reads would say the file does not exist, to be made by an import that fails too."""
    try:
        folder_is_a_file = path.parent.exists() and not path.parent.is_dir()
        is_a_folder = path.is_dir()
    except OSError as error:
        raise StoreUnavailable(f"cannot open SQLite database {path}: {error.strerror}") from None
    if folder_is_a_file:
        raise StoreUnavailable(
            f"cannot open SQLite database {path}: {path.parent} is a file, not a folder"
        )
    if is_a_folder:
        raise StoreUnavailable(
            f"cannot open SQLite database {path}: it is a folder, not a database file"
        )


class _Abandoned(Exception):
    """Work whose caller stopped waiting before it started: it is not run at all."""


class _Progress:
    __slots__ = ("abandoned", "lock", "running")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running = False
        self.abandoned = False


def _answer(answer: asyncio.Future[_T], result: _T | None, error: BaseException | None) -> None:
    if answer.done():
        return  # its caller stopped waiting
    if error is not None:
        answer.set_exception(error)
    else:
        answer.set_result(result)  # type: ignore[arg-type]


def _run_and_answer(
    loop: asyncio.AbstractEventLoop,
    answer: asyncio.Future[_T],
    work: Callable[[sqlite3.Connection], _T],
    connection: sqlite3.Connection,
) -> None:
    """Run ``work`` on the writer thread and hand its outcome straight to the waiting
    future: one wake-up of the loop, where run_in_executor chains a second future (and its
    locks and callbacks) to the first, which cost about 20 microseconds an append."""
    if answer.cancelled():
        return  # stopped waiting before the work began: as a cancelled pending item, skipped
    result: _T | None = None
    error: BaseException | None = None
    try:
        result = work(connection)
    except BaseException as raised:  # handed to the caller, as run_in_executor does
        error = raised
    with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is waiting
        loop.call_soon_threadsafe(_answer, answer, result, error)


class _WriteConnection:
    """The write connection and the one thread that uses it; each ``run`` is a single hop.

    Work runs in submission order, so a whole transaction submitted as one call can never
    interleave with another, even if its caller stops waiting for it.
    """

    def __init__(
        self,
        connection: sqlite3.Connection,
        thread: ThreadPoolExecutor,
        path: Path,
        *,
        created_log: bool,
    ) -> None:
        self._connection = connection
        self._thread = thread
        self._path = path
        # Set as closing begins: work submitted after the connection's close would find it
        # closed (a raw sqlite3 error), or, submitted before it, still write once the store
        # was said to be closed.
        self._closed = False
        self._closing = False
        self.created_log = created_log
        self._identity = _file_identity(path)

    @classmethod
    async def open(cls, path: Path, *, create: bool) -> _WriteConnection:
        thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="leaderlog-sqlite-writer")
        try:
            connection, created_log = await asyncio.get_running_loop().run_in_executor(
                thread, _connect_writer, path, create
            )
        except BaseException:
            thread.shutdown(wait=False)
            raise
        return cls(connection, thread, path, created_log=created_log)

    def check_same_file(self) -> None:
        """Refuse to go on once the file at the path is no longer the one opened: removed, or
        replaced by another (a copy moved over it). The connection would go on reading and
        writing the old file, and what it wrote would be lost with it, with no error."""
        now = _file_identity(self._path)
        if now != self._identity:
            what = "removed" if now is None else "replaced by another file"
            raise LogRemoved(
                f"the database file {self._path} was {what} while leaderlog had it open: "
                "nothing more is written to the old one (it would be lost with it); restart "
                "to open the file now at that path",
                public="the database file was removed or replaced while this server had it open",
            )

    async def run(self, work: Callable[[sqlite3.Connection], _T], *, closing: bool = False) -> _T:
        """``work`` on the writer thread; refused once closing has begun, but for the close
        itself (``closing``), which runs after what was submitted before it."""
        if self._closed and not closing:
            raise StoreUnavailable(CLOSED)
        loop = asyncio.get_running_loop()
        running: asyncio.Future[_T] = loop.create_future()
        try:
            self._thread.submit(_run_and_answer, loop, running, work, self._connection)
        except RuntimeError as error:
            # concurrent.futures stops its threads once the main thread has ended: a store
            # another thread still uses then can no longer write.
            raise _ProgramEnding(
                f"cannot use the SQLite database {self._path}: the program is ending "
                "(its main thread has finished)"
            ) from error
        try:
            return await running
        except sqlite3.DatabaseError as error:
            _raise_as_store_error(error, self._path)
            raise

    async def run_or_interrupt(self, work: Callable[[sqlite3.Connection], _T]) -> _T:
        """``run``, except that a caller who stops waiting also stops the work: its statement
        is interrupted if it is running, and it is skipped if it has not started.

        Otherwise a statement that never ends (a user projection's runaway query) would go
        on holding the thread, and with it the write lock and every write queued behind it.
        """
        progress = _Progress()

        def tracked(connection: sqlite3.Connection) -> _T:
            with progress.lock:
                if progress.abandoned:
                    raise _Abandoned
                progress.running = True
            try:
                return work(connection)
            finally:
                with progress.lock:
                    progress.running = False

        try:
            return await self.run(tracked)
        except asyncio.CancelledError:
            # Under the lock the thread cannot finish this work and start the next, so the
            # interrupt reaches this work's statement and never one queued after it (the
            # rollback that follows a cancellation, say).
            with progress.lock:
                progress.abandoned = True
                if progress.running:
                    self._connection.interrupt()
            raise

    def close_abandoned(self) -> None:
        """Close the connection on its own thread, without waiting, for a store dropped
        unclosed (Python 3.13 warns of a connection collected open, besides the store's own
        warning)."""
        self.refuse_work()
        with contextlib.suppress(RuntimeError):  # the interpreter is exiting: it goes with it
            self._thread.submit(self._connection.close)
        self._thread.shutdown(wait=False)

    def refuse_work(self) -> None:
        """Refuse work from now on (:class:`StoreUnavailable`); what was submitted before
        still runs, in order, before the connection is closed."""
        self._closed = True

    async def close(self) -> None:
        self.refuse_work()
        if self._closing:
            return
        self._closing = True
        try:
            await self.run(sqlite3.Connection.close, closing=True)
        except _ProgramEnding:
            # The thread takes no more work: once it has run what it was given, the
            # connection is closed here (Python 3.13 warns of one collected open).
            self._thread.shutdown(wait=True)
            self._connection.close()
        finally:
            # Queued work, the close among it, still runs (a close cancelled meanwhile).
            self._thread.shutdown(wait=False)


class _ProgramEnding(StoreUnavailable):
    """The writer thread refuses work: the program's main thread has finished."""


_BUSY_CODES = (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def _raise_as_store_error(error: sqlite3.DatabaseError, path: Path) -> None:
    """Raise what ``error`` says of the log or the file, if anything; the caller raises
    ``error`` itself otherwise (a statement's own fault)."""
    if isinstance(error, sqlite3.OperationalError):
        _raise_if_log_removed(error)
    trouble = _file_trouble(error, path)
    if trouble is not None:
        raise trouble from error


def _file_trouble(error: sqlite3.DatabaseError, path: Path) -> StoreError | None:
    """What ``error`` says of the database file itself, for its user to mend, or None for
    an error of the statement's own. Nothing of the transaction it ended was kept."""
    code = getattr(error, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None
    if primary == sqlite3.SQLITE_READONLY:
        # A file this user may read but not write opens fine (a log in WAL mode needs no
        # write to open): the first write is where it shows.
        return StoreReadOnly(
            f"cannot write to the SQLite database {path}: {error}; appending and the commands "
            "that keep projections up to date need write access to the file and its folder "
            "(verify, events, export, projections and token list only read)",
            public="the database cannot be written to: it is read-only here; nothing was written",
        )
    if primary == sqlite3.SQLITE_FULL or (primary == sqlite3.SQLITE_IOERR and _disk_full(path)):
        return StoreUnavailable(
            f"the SQLite database {path} cannot grow: {error} (the disk holding it is full, "
            "or the file reached a size limit); nothing of this was kept: free space, then "
            "try again",
            public="the database's disk is full; nothing was written",
        )
    if primary == sqlite3.SQLITE_IOERR:
        return StoreUnavailable(
            f"cannot read or write the SQLite database {path}: {error} (the disk failed, or "
            "the file reached a size limit set for this program); nothing of this was kept",
            public="the database's disk failed; nothing was written",
        )
    if primary in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB):
        return StoreDamaged(
            f"the SQLite database {path} is damaged: {error}; `leaderlog export` may still "
            "read every event: imported into a new file, verified there and its head hash "
            "compared to one noted earlier, it tells whether the log is whole; otherwise "
            "restore the file from a backup, with every program using it stopped and the "
            f"{path.name}-wal and {path.name}-shm files beside it removed (SQLite would apply "
            "their writes, the damaged file's, to the copy)",
            public="the database file is damaged; the server's log says what to do",
        )
    return None


# Less free space than this beside the file: what SQLite reports as an I/O error (it could
# not grow the -shm file, say) is a full disk.
_NEARLY_FULL_BYTES = 1024 * 1024
_DISK_FULL = " (the disk holding it is full: free space, then try again)"


def _disk_full(path: Path) -> bool:
    try:
        return shutil.disk_usage(path.parent).free < _NEARLY_FULL_BYTES
    except OSError:
        return False


def _raise_if_log_removed(error: sqlite3.OperationalError) -> None:
    """A statement that found the log's own table missing: the log was dropped under this
    store, as PostgreSQL's store says of a dropped table or schema (a user projection's
    missing table is that statement's own fault, and left as it is)."""
    if str(error) == "no such table: events":
        raise LogRemoved(
            "the log is gone (no such table: events): its events table was dropped while "
            "leaderlog had it open, by another command whose first import into a new log was "
            "refused (nothing was written: try again), or by hand (restore it from a backup or "
            "an export, then restart)",
            public="the log was removed from the database while this server had it open",
        ) from error


def _file_identity(path: Path) -> tuple[int, int] | None:
    """The device and inode of the file at ``path``; None when there is none."""
    try:
        status = os.stat(path)
    except FileNotFoundError:
        return None
    return status.st_dev, status.st_ino


def _pragmas() -> list[str]:
    """PRAGMAS, with the busy timeout :data:`BUSY_TIMEOUT` holds now."""
    busy = f"PRAGMA busy_timeout={int(BUSY_TIMEOUT * 1000)}"
    return [busy if pragma.startswith("PRAGMA busy_timeout=") else pragma for pragma in PRAGMAS]


def _connect_writer(path: Path, create: bool) -> tuple[sqlite3.Connection, bool]:
    """The write connection, and whether it created the log (see :meth:`SQLiteStore.open`)."""
    # Runs on the writer thread, which is the only thread that uses the connection, but for
    # its close once that thread has stopped, at the program's end (_WriteConnection.close).
    connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    try:
        created_log = _set_up(connection, path, create)
    except BaseException:
        connection.close()
        raise
    return connection, created_log


def _set_up(connection: sqlite3.Connection, path: Path, create: bool) -> bool:
    """Switch to WAL and create the schema, waiting while another process does the same;
    return whether the events table was missing.

    When two processes open a new file at once, SQLite refuses the journal-mode switch
    with "database is locked" straight away, without its busy handler, so the wait is here
    (as long as busy_timeout lets a writer wait for another). Every statement is
    idempotent, so trying again is safe.
    """
    pragmas = _pragmas()
    deadline = time.monotonic() + BUSY_TIMEOUT
    while True:
        try:
            # Before anything is written (WAL mode, triggers), so a file that is someone
            # else's is left exactly as it was.
            had_log = _check_events_table(connection, path)
            if not had_log and not create:
                had_log = _created_meanwhile(connection, path)
            if not had_log and not create:
                raise StoreUnavailable(
                    f"{path} holds no leaderlog log (no events table): nothing was created; "
                    "import records into it first (leaderlog import FILE), or name another "
                    "with --db URL or LEADERLOG_DB"
                )
            for pragma in pragmas:
                connection.execute(pragma)
            connection.executescript(SCHEMA)
            return not had_log
        except sqlite3.OperationalError as error:
            if error.sqlite_errorcode not in _BUSY_CODES or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


# How long a command that only reads waits for a file with nothing in it yet to become a log:
# another process may have just created it and not yet its tables.
_CREATION_GRACE = 1.0


def _created_meanwhile(connection: sqlite3.Connection, path: Path) -> bool:
    """Whether a file that holds nothing at all becomes a log within :data:`_CREATION_GRACE`
    (a file with other tables is another program's, and is not waited for)."""
    deadline = time.monotonic() + _CREATION_GRACE
    while not connection.execute("SELECT EXISTS (SELECT 1 FROM sqlite_master)").fetchone()[0]:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    # Something was created: the events table comes first, in one statement.
    return _check_events_table(connection, path)


def _check_events_table(connection: sqlite3.Connection, path: Path) -> bool:
    """Whether the file has leaderlog's ``events`` table; a file whose ``events`` table is
    not leaderlog's is refused (other tables are fine)."""
    columns = [row[0] for row in connection.execute("SELECT name FROM pragma_table_info('events')")]
    if columns and sorted(columns) != sorted(_COLUMN_NAMES):
        raise StoreUnavailable(
            f"{path} is not a leaderlog database: its events table has other columns "
            f"({', '.join(columns)})"
        )
    return bool(columns)


def _drop_empty_log(connection: sqlite3.Connection) -> bool:
    """Drop the events table (its triggers go with it) if it holds no event."""
    _begin_immediate(connection)
    try:
        # Under the write lock: no other writer can append between this check and the drop.
        if connection.execute("SELECT EXISTS (SELECT 1 FROM events)").fetchone()[0]:
            connection.execute("ROLLBACK")
            return False
        connection.execute("DROP TABLE events")
        connection.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            connection.execute("ROLLBACK")
        raise
    return True


# What a confined statement may do whatever it names (reads); the rest is judged by the
# table it acts on.
_ALWAYS_ALLOWED = {
    sqlite3.SQLITE_READ,
    sqlite3.SQLITE_SELECT,
    sqlite3.SQLITE_FUNCTION,
    sqlite3.SQLITE_RECURSIVE,
}
_ROW_WRITES = {sqlite3.SQLITE_INSERT, sqlite3.SQLITE_UPDATE, sqlite3.SQLITE_DELETE}
# What creating or dropping an own table or index writes (writing them directly needs a
# PRAGMA, refused; sqlite_stat1 would change every table's query plans).
_SCHEMA_TABLES = {"sqlite_master", "sqlite_schema", "sqlite_sequence"}
# Views are refused: nothing drops them again (a rebuild or a forget drops tables).
_TABLE_CHANGES = {sqlite3.SQLITE_CREATE_TABLE, sqlite3.SQLITE_DROP_TABLE}
_INDEX_CHANGES = {sqlite3.SQLITE_CREATE_INDEX, sqlite3.SQLITE_DROP_INDEX}
_READ_PRAGMAS = {"table_info", "table_xinfo", "index_list", "index_info", "index_xinfo"}
# Temporary tables, indexes, views and triggers live on the connection, which leaderlog goes
# on using after the page (a temporary table may even hide a table of the same name). SQLite
# writes their schema table first: the statement itself is named, by its own action after.
_TEMP_SCHEMA_TABLES = {"sqlite_temp_master", "sqlite_temp_schema"}
_TEMP_CHANGES = {
    sqlite3.SQLITE_CREATE_TEMP_TABLE: "CREATE TEMP TABLE",
    sqlite3.SQLITE_CREATE_TEMP_INDEX: "CREATE INDEX on a temporary table",
    sqlite3.SQLITE_CREATE_TEMP_VIEW: "CREATE TEMP VIEW",
    sqlite3.SQLITE_CREATE_TEMP_TRIGGER: "CREATE TEMP TRIGGER",
    sqlite3.SQLITE_DROP_TEMP_TABLE: "DROP of a temporary table",
    sqlite3.SQLITE_DROP_TEMP_INDEX: "DROP of a temporary index",
    sqlite3.SQLITE_DROP_TEMP_VIEW: "DROP of a temporary view",
    sqlite3.SQLITE_DROP_TEMP_TRIGGER: "DROP of a temporary trigger",
}


class _Confinement:
    """An SQLite authorizer for :meth:`ProjectionTransaction.confined`; it keeps the reason
    of its last refusal, since SQLite itself only says "not authorized"."""

    def __init__(self, owns: Callable[[str], bool], savepoint: str) -> None:
        self.owns = owns
        self.savepoint = savepoint.lower()
        self.refused: str | None = None

    def __call__(self, action: int, first: str | None, second: str | None, *_: str | None) -> int:
        reason = self._refusal(action, first or "", second or "")
        if reason is None:
            return sqlite3.SQLITE_OK
        self.refused = reason
        return sqlite3.SQLITE_DENY

    def _refusal(self, action: int, first: str, second: str) -> str | None:
        if action in _ALWAYS_ALLOWED:
            return None
        if action in _ROW_WRITES:
            if first.lower() in _SCHEMA_TABLES | _TEMP_SCHEMA_TABLES or self.owns(first):
                return None
            return f"changing rows of {first}, which is not its own"
        if action in _TABLE_CHANGES:
            return None if self.owns(first) else f"changing the table {first}, not its own"
        if action in _INDEX_CHANGES:
            # The index's own name too: one taking a built-in's name would make the
            # built-in's CREATE INDEX IF NOT EXISTS skip its own.
            if not self.owns(second):
                return f"changing an index of {second}, not its own"
            if not (self.owns(first) or first.startswith("sqlite_autoindex_")):
                return f"an index named {first}, which is not its own"
            return None
        if action == sqlite3.SQLITE_REINDEX and self.owns(first):
            return None  # what creating an own index does
        if action == sqlite3.SQLITE_ALTER_TABLE:
            # Refused outright: SQLite does not tell the new name of a RENAME, which could
            # take a table name that is not its own. Tables change with schema() and version.
            return f"ALTER TABLE {second} (tables change with schema() and a new version)"
        if action == sqlite3.SQLITE_SAVEPOINT:
            if second.lower() == self.savepoint:
                return f"{first.lower()} of a savepoint named as the runner's ({second})"
            return None
        if action == sqlite3.SQLITE_TRANSACTION:
            return f"{first} (the runner commits each page with its checkpoint)"
        if action == sqlite3.SQLITE_PRAGMA and first.lower() in _READ_PRAGMAS:
            return None
        if action in _TEMP_CHANGES:
            return (
                f"{_TEMP_CHANGES[action]} {first} (on SQLite it would stay on the connection, "
                "which leaderlog goes on using after the page: use a table of its own)"
            )
        names = {
            sqlite3.SQLITE_PRAGMA: f"PRAGMA {first}",
            sqlite3.SQLITE_ATTACH: "ATTACH",
            sqlite3.SQLITE_DETACH: "DETACH",
            sqlite3.SQLITE_ANALYZE: "ANALYZE",
            sqlite3.SQLITE_REINDEX: f"REINDEX {first}",
            sqlite3.SQLITE_CREATE_VIEW: "CREATE VIEW",
        }
        return f"{names.get(action, 'this kind of statement')} (only its own tables may change)"


class _SQLiteProjectionTransaction(ProjectionTransaction):
    def __init__(self, writer: _WriteConnection) -> None:
        self._writer = writer
        self._confinement: _Confinement | None = None

    async def _run(self, work: Callable[[sqlite3.Connection], _T]) -> _T:
        confinement = self._confinement
        if confinement is not None:
            confinement.refused = None
        try:
            return await self._writer.run_or_interrupt(work)
        except sqlite3.DatabaseError as error:
            if confinement is None or confinement.refused is None:
                raise
            raise ProjectionError(
                f"a projection's statement may not do this: {confinement.refused}"
            ) from error

    async def execute(self, sql: str, parameters: Sequence[Any] = ()) -> None:
        await self._run(lambda connection: connection.execute(sql, parameters))

    async def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        await self._run(lambda connection: connection.executemany(sql, rows))

    async def fetchall(self, sql: str, parameters: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return await self._run(
            lambda connection: [tuple(row) for row in connection.execute(sql, parameters)]
        )

    async def lock_schema_changes(self) -> None:
        """Nothing to do: projection transactions hold the file's write lock throughout."""

    async def lock_appends(self) -> None:
        """Nothing to do: the file's one write lock, held throughout, is the appends' too."""

    @contextlib.asynccontextmanager
    async def confined(self, owns: Callable[[str], bool], savepoint: str) -> AsyncIterator[None]:
        confinement = _Confinement(owns, savepoint)
        await self._writer.run(lambda connection: connection.set_authorizer(confinement))
        self._confinement = confinement
        try:
            yield
        finally:
            self._confinement = None
            await self._writer.run(lambda connection: connection.set_authorizer(None))
        # Checked now, inside the projection's savepoint: a deferred foreign key left
        # dangling would otherwise fail the page's COMMIT, for every projection, every time;
        # one to another's table would pin that table's rows.
        wrong = await self._writer.run(lambda connection: _foreign_key_problem(connection, owns))
        if wrong is not None:
            raise ProjectionError(f"a projection may not do this: {wrong}")


def _foreign_key_problem(connection: sqlite3.Connection, owns: Callable[[str], bool]) -> str | None:
    """A foreign key of an own table that refers to another's table (it would pin that
    table's rows: a built-in could no longer drop them, a token no longer be replaced), or
    to nothing, described; None when none."""
    referring: dict[str, set[str]] = {}
    for table, refers_to in connection.execute(FOREIGN_KEYS_QUERY["sqlite"]).fetchall():
        if owns(table):
            referring.setdefault(str(table), set()).add(str(refers_to))
    for table, refers_to_tables in sorted(referring.items()):
        foreign = sorted(other for other in refers_to_tables if not owns(other))
        if foreign:
            return f"a foreign key of {table} refers to {', '.join(foreign)}, not its own"
        quoted = '"' + table.replace('"', '""') + '"'
        found = connection.execute(f"PRAGMA foreign_key_check({quoted})").fetchone()
        if found is not None:
            return f"a row of {table} refers to a row of {found[2]} that is not there"
    return None


class SQLiteStore(EventStore):
    dialect = "sqlite"

    def __init__(self, path: Path, writer: _WriteConnection, reader: aiosqlite.Connection) -> None:
        super().__init__()
        self.path = path
        self._writer = writer
        self._reader = reader
        self._closed = False
        self._write_lock = asyncio.Lock()
        self.created_log = writer.created_log
        # The reader's thread is not a daemon and its last call keeps the reader alive, so a
        # store dropped without close() would hold the process open at exit: stop the thread
        # when the store is garbage collected, and warn as an unclosed file does.
        self._abandoned = weakref.finalize(self, _stop_abandoned, reader, writer, str(path))
        self._abandoned.atexit = False
        self._opened_by = threading.current_thread()  # the thread of its event loop
        _open_stores.add(self)

    @classmethod
    async def open(cls, url: str, *, create: bool = True) -> SQLiteStore:
        """The store in the file ``url`` names; ``create=False`` refuses a file without a log
        (an empty file, another program's database) and leaves it as it was."""
        path = check_url(url)
        # Absolute, so a name that begins with "file:" is a file name, never a SQLite URI
        # whose options (?mode=memory, ?mode=ro, another file) would come from the name.
        path = path.absolute()
        try:
            folder_exists = path.parent.exists()
        except OSError as error:
            raise StoreUnavailable(
                f"cannot open SQLite database {path}: {error.strerror}"
            ) from None
        if not folder_exists:
            raise StoreUnavailable(f"cannot create {path}: folder {path.parent} does not exist")
        check_place(path)
        if not create and not path.exists():
            # Connecting would create the file, empty: a log refused must not leave one.
            raise StoreUnavailable(f"database {path} does not exist: nothing was created")
        # Whatever was opened before a failure is closed again, newest first.
        async with contextlib.AsyncExitStack() as opened:
            try:
                writer = await _WriteConnection.open(path, create=create)
                opened.push_async_callback(writer.close)
                connecting = aiosqlite.connect(path, isolation_level=None)
                # Its thread (not a daemon) starts with the await: stopped whatever ends the
                # open, even a Ctrl-C landing as the await returns, or it holds the exit;
                # unanswered, as the loop may be closed by the time the thread stops.
                opened.callback(_stop_unanswered, connecting)
                reader = await connecting
                opened.push_async_callback(reader.close)
                for pragma in _pragmas()[1:]:
                    await reader.execute(pragma)
            except sqlite3.Error as error:
                full = _DISK_FULL if _disk_full(path) else ""
                raise StoreUnavailable(
                    f"cannot open SQLite database {path}: {error}{full}"
                ) from error
            # Made before the connections are let go of: once it is, its finalizer and
            # _open_stores stop them, should Ctrl-C land before its owner holds it.
            store = cls(path, writer, reader)
            opened.pop_all()
        return store

    async def discard_created_log(self) -> bool:
        """See :meth:`EventStore.discard_created_log`. The file itself stays: another
        process may have opened it meanwhile, and what it wrote to a removed file would be
        lost without a word."""
        if not self.created_log:
            return False
        async with self._write_lock:
            dropped = await self._writer.run(_drop_empty_log)
        if dropped:
            self.created_log = False
        return dropped

    async def close(self) -> None:
        """Close both connections; closing again does nothing."""
        if self._closed:
            return
        self._closed = True
        self._abandoned.detach()
        # At once, as reads are: an append or a projection's statement begun while the
        # reader closes must not write after the store was closed, nor reach the writer's
        # connection once it is closed.
        self._writer.refuse_work()
        try:
            await self._reader.close()
        finally:
            await self._writer.close()
        # A follower waiting for commits learns at once that none will come.
        await self._notify_appended(self._committed_head)

    async def _fetch(self, sql: str, parameters: Sequence[Any] = ()) -> Iterable[Any]:
        if self._closed:
            raise StoreUnavailable(CLOSED)
        # Answers from a file removed or replaced under the store would be the old file's.
        self._writer.check_same_file()
        # execute_fetchall costs one thread hop where execute + fetchall cost two.
        try:
            return await self._reader.execute_fetchall(sql, parameters)
        except sqlite3.DatabaseError as error:
            _raise_as_store_error(error, self.path)
            raise

    # --- writing ---------------------------------------------------------------------------

    async def append_batches(
        self, batches: Sequence[PendingBatch], progress: WriteProgress | None = None
    ) -> list[AppendResult | StoreError]:
        if not batches:
            return []
        reporter = None
        if progress is not None:
            reporter = WriteProgressReporter(progress, batches, asyncio.get_running_loop())
        async with self._write_lock:
            self._writer.check_same_file()
            outcomes, appended = await self._writer.run(
                lambda connection: _append(connection, batches, reporter)
            )
        if appended:
            await self._notify_appended(
                max(max(o.positions, default=0) for o in outcomes if isinstance(o, AppendResult))
            )
        return outcomes

    # --- reading ---------------------------------------------------------------------------

    async def _select(self, sql: str, parameters: Sequence[Any] = ()) -> list[RecordedEvent]:
        return [_row_to_event(row) for row in await self._fetch(sql, parameters)]

    async def read_all(self, after: int = 0, limit: int | None = None) -> list[RecordedEvent]:
        return await self._select(
            f"SELECT {_COLUMNS} FROM events WHERE position > ? ORDER BY position LIMIT ?",
            (storable(after), -1 if limit is None else storable(limit)),
        )

    async def read_all_as_stored(
        self, after: int, limit: int
    ) -> list[tuple[RecordedEvent, StoredText]]:
        rows = await self._fetch(
            f"SELECT {_COLUMNS} FROM events WHERE position > ? ORDER BY position LIMIT ?",
            (storable(after), storable(limit)),
        )
        return [(_row_to_event(row), StoredText(row[6], row[9], row[7])) for row in rows]

    async def read_streams(self, streams: Sequence[str]) -> dict[str, list[RecordedEvent]]:
        found: dict[str, list[RecordedEvent]] = {}
        for chunk in _chunks(list(dict.fromkeys(streams))):
            marks = ",".join("?" * len(chunk))
            for event in await self._select(
                f"SELECT {_COLUMNS} FROM events WHERE stream IN ({marks}) ORDER BY stream, version",
                chunk,
            ):
                found.setdefault(event.stream, []).append(event)
        return found

    async def find_event_ids(self, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, RecordedEvent]:
        found: dict[uuid.UUID, RecordedEvent] = {}
        for chunk in _chunks([event_id.bytes for event_id in ids]):
            marks = ",".join("?" * len(chunk))
            for event in await self._select(
                f"SELECT {_COLUMNS} FROM events WHERE event_id IN ({marks})", chunk
            ):
                found[event.event_id] = event
        return found

    async def get(self, position: int) -> RecordedEvent | None:
        found = await self._select(
            f"SELECT {_COLUMNS} FROM events WHERE position = ?", (storable(position),)
        )
        return found[0] if found else None

    async def head(self) -> tuple[int, str]:
        rows = list(
            await self._fetch("SELECT position, hash FROM events ORDER BY position DESC LIMIT 1")
        )
        return (rows[0][0], rows[0][1]) if rows else (0, GENESIS_HASH)

    async def count(self) -> int:
        rows = list(await self._fetch("SELECT COUNT(*) FROM events"))
        return int(rows[0][0])

    # --- projections -----------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def projection_transaction(self) -> AsyncIterator[ProjectionTransaction]:
        async with self._write_lock:
            self._writer.check_same_file()
            await self._writer.run(_begin_immediate)
            try:
                yield _SQLiteProjectionTransaction(self._writer)
                await self._writer.run(lambda connection: connection.execute("COMMIT"))
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    await self._writer.run(lambda connection: connection.execute("ROLLBACK"))
                raise

    async def query(self, sql: str, parameters: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return [tuple(row) for row in await self._fetch(sql, parameters)]

    async def damage(self) -> str | None:
        """SQLite's integrity check of the file (indexes against their tables too), its
        first few findings; None when it finds nothing wrong."""
        found = [str(row[0]) for row in await self.query("PRAGMA integrity_check(3)")]
        return None if found == ["ok"] else "; ".join(found)
