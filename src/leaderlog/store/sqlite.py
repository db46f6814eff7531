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
import sqlite3
import threading
import time
import uuid
import warnings
import weakref
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite

from leaderlog.errors import StoreError, StoreUnavailable
from leaderlog.events import RecordedEvent
from leaderlog.store.base import (
    GENESIS_HASH,
    AppendResult,
    EventStore,
    PendingBatch,
    PlannedRow,
    ProjectionTransaction,
    event_from_row,
    plan_rows,
    storable,
    utc_now,
)

__all__ = ["PRAGMAS", "SCHEMA", "SQLiteStore"]

_T = TypeVar("_T")

# Shared with scripts/bench.py so the raw sqlite3 baseline runs with the same settings.
PRAGMAS = (
    "PRAGMA journal_mode=WAL",
    "PRAGMA synchronous=FULL",
    "PRAGMA busy_timeout=10000",
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
# SQLite's default limit on host parameters is 32766; stay far below it.
_CHUNK = 500


def _row_to_event(row: Sequence[Any]) -> RecordedEvent:
    return event_from_row(row, uuid.UUID(bytes=row[1]))


def _planned_to_row(row: PlannedRow) -> tuple[Any, ...]:
    return (
        row.position,
        row.event_id.bytes,
        row.stream,
        row.version,
        row.type,
        row.schema_version,
        row.data_json,
        row.recorded_at,
        row.actor,
        row.meta_json,
        row.hash,
    )


def _chunks(items: Sequence[Any]) -> Iterable[Sequence[Any]]:
    for start in range(0, len(items), _CHUNK):
        yield items[start : start + _CHUNK]


def _append(
    connection: sqlite3.Connection, batches: Sequence[PendingBatch]
) -> tuple[list[AppendResult | StoreError], bool]:
    """One append transaction, run whole on the writer thread."""
    try:
        # Ids are nearly always new (fresh UUIDv7s, or checked by the caller), so the UNIQUE
        # index is trusted to catch a stored one before paying for a lookup.
        return _append_in_transaction(connection, batches, look_up_ids=False)
    except sqlite3.IntegrityError:
        return _append_in_transaction(connection, batches, look_up_ids=True)


def _append_in_transaction(
    connection: sqlite3.Connection, batches: Sequence[PendingBatch], *, look_up_ids: bool
) -> tuple[list[AppendResult | StoreError], bool]:
    try:
        connection.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as error:
        raise StoreUnavailable(f"database is busy: {error}") from error
    try:
        head = connection.execute(
            "SELECT position, hash FROM events ORDER BY position DESC LIMIT 1"
        ).fetchone()
        head_position, head_hash = (head[0], head[1]) if head else (0, GENESIS_HASH)
        streams = sorted({event.stream for batch in batches for event in batch.events})
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
        existing = _stored_ids(connection, batches) if look_up_ids else {}
        outcomes, rows = plan_rows(batches, versions, existing, head_position, head_hash, now)
        if not look_up_ids and any(isinstance(o, StoreError) for o in outcomes):
            # A refused batch may be the retry of a stored one (an idempotent retry is no
            # conflict even when its stream has moved on): plan again knowing the stored ids.
            existing = _stored_ids(connection, batches)
            outcomes, rows = plan_rows(batches, versions, existing, head_position, head_hash, now)
        if rows:
            connection.executemany(_INSERT, [_planned_to_row(row) for row in rows])
        connection.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            connection.execute("ROLLBACK")
        raise
    return outcomes, bool(rows)


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


def _stop_abandoned(reader: aiosqlite.Connection, path: str) -> None:
    warnings.warn(
        f"the SQLite store on {path} was not closed; use `async with` or `await store.close()`",
        ResourceWarning,
        stacklevel=2,
    )
    # stop() answers on the current event loop, which may be closed by the time the thread
    # gets to it; called from a thread without a loop, it answers nobody.
    threading.Thread(target=reader.stop, name="leaderlog-sqlite-reader-stop").start()


def path_from_url(url: str) -> Path:
    """``sqlite:///relative.db`` or ``sqlite:////absolute.db`` (or a bare path)."""
    if url.startswith("sqlite:///"):
        return Path(url[len("sqlite:///") :])
    if url.startswith("sqlite:"):
        raise StoreUnavailable(f"SQLite URLs look like sqlite:///path/to/file.db, not {url!r}")
    return Path(url)


class _WriteConnection:
    """The write connection and the one thread that uses it; each ``run`` is a single hop.

    Work runs in submission order, so a whole transaction submitted as one call can never
    interleave with another, even if its caller stops waiting for it.
    """

    def __init__(self, connection: sqlite3.Connection, thread: ThreadPoolExecutor) -> None:
        self._connection = connection
        self._thread = thread

    @classmethod
    async def open(cls, path: Path) -> _WriteConnection:
        thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="leaderlog-sqlite-writer")
        try:
            connection = await asyncio.get_running_loop().run_in_executor(
                thread, _connect_writer, path
            )
        except BaseException:
            thread.shutdown(wait=False)
            raise
        return cls(connection, thread)

    async def run(self, work: Callable[[sqlite3.Connection], _T]) -> _T:
        return await asyncio.get_running_loop().run_in_executor(
            self._thread, work, self._connection
        )

    async def close(self) -> None:
        await self.run(sqlite3.Connection.close)
        self._thread.shutdown(wait=False)


# As long as PRAGMA busy_timeout lets a writer wait for another.
_SET_UP_PATIENCE = 10.0
_BUSY_CODES = (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def _connect_writer(path: Path) -> sqlite3.Connection:
    # Runs on the writer thread, which is the only thread that ever touches the connection.
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        _set_up(connection)
    except BaseException:
        connection.close()
        raise
    return connection


def _set_up(connection: sqlite3.Connection) -> None:
    """Switch to WAL and create the schema, waiting while another process does the same.

    When two processes open a new file at once, SQLite refuses the journal-mode switch
    with "database is locked" straight away, without its busy handler, so the wait is here.
    Every statement is idempotent, so trying again is safe.
    """
    deadline = time.monotonic() + _SET_UP_PATIENCE
    while True:
        try:
            for pragma in PRAGMAS:
                connection.execute(pragma)
            connection.executescript(SCHEMA)
            return
        except sqlite3.OperationalError as error:
            if error.sqlite_errorcode not in _BUSY_CODES or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


class _SQLiteProjectionTransaction(ProjectionTransaction):
    def __init__(self, writer: _WriteConnection) -> None:
        self._writer = writer

    async def execute(self, sql: str, parameters: Sequence[Any] = ()) -> None:
        await self._writer.run(lambda connection: connection.execute(sql, parameters))

    async def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        await self._writer.run(lambda connection: connection.executemany(sql, rows))

    async def fetchall(self, sql: str, parameters: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return await self._writer.run(
            lambda connection: [tuple(row) for row in connection.execute(sql, parameters)]
        )


class SQLiteStore(EventStore):
    dialect = "sqlite"

    def __init__(self, path: Path, writer: _WriteConnection, reader: aiosqlite.Connection) -> None:
        super().__init__()
        self.path = path
        self._writer = writer
        self._reader = reader
        self._write_lock = asyncio.Lock()
        # The reader's thread is not a daemon and its last call keeps the reader alive, so a
        # store dropped without close() would hold the process open at exit: stop the thread
        # when the store is garbage collected, and warn as an unclosed file does.
        self._abandoned = weakref.finalize(self, _stop_abandoned, reader, str(path))
        self._abandoned.atexit = False

    @classmethod
    async def open(cls, url: str) -> SQLiteStore:
        path = path_from_url(url)
        if str(path) != ":memory:" and not path.parent.exists():
            raise StoreUnavailable(f"cannot create {path}: folder {path.parent} does not exist")
        # Whatever was opened before a failure is closed again, newest first.
        async with contextlib.AsyncExitStack() as opened:
            try:
                writer = await _WriteConnection.open(path)
                opened.push_async_callback(writer.close)
                reader = await aiosqlite.connect(path, isolation_level=None)
                opened.push_async_callback(reader.close)
                for pragma in PRAGMAS[1:]:
                    await reader.execute(pragma)
            except sqlite3.Error as error:
                raise StoreUnavailable(f"cannot open SQLite database {path}: {error}") from error
            opened.pop_all()
        return cls(path, writer, reader)

    async def close(self) -> None:
        self._abandoned.detach()
        await self._reader.close()
        await self._writer.close()

    # --- writing ---------------------------------------------------------------------------

    async def append_batches(
        self, batches: Sequence[PendingBatch]
    ) -> list[AppendResult | StoreError]:
        if not batches:
            return []
        async with self._write_lock:
            outcomes, appended = await self._writer.run(
                lambda connection: _append(connection, batches)
            )
        if appended:
            await self._notify_appended(
                max(max(o.positions, default=0) for o in outcomes if isinstance(o, AppendResult))
            )
        return outcomes

    # --- reading ---------------------------------------------------------------------------

    async def _select(self, sql: str, parameters: Sequence[Any] = ()) -> list[RecordedEvent]:
        # execute_fetchall costs one thread hop where execute + fetchall cost two.
        return [_row_to_event(row) for row in await self._reader.execute_fetchall(sql, parameters)]

    async def read_all(self, after: int = 0, limit: int | None = None) -> list[RecordedEvent]:
        return await self._select(
            f"SELECT {_COLUMNS} FROM events WHERE position > ? ORDER BY position LIMIT ?",
            (storable(after), -1 if limit is None else storable(limit)),
        )

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
            await self._reader.execute_fetchall(
                "SELECT position, hash FROM events ORDER BY position DESC LIMIT 1"
            )
        )
        return (rows[0][0], rows[0][1]) if rows else (0, GENESIS_HASH)

    async def count(self) -> int:
        rows = list(await self._reader.execute_fetchall("SELECT COUNT(*) FROM events"))
        return int(rows[0][0])

    # --- projections -----------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def projection_transaction(self) -> AsyncIterator[ProjectionTransaction]:
        async with self._write_lock:
            await self._writer.run(lambda connection: connection.execute("BEGIN IMMEDIATE"))
            try:
                yield _SQLiteProjectionTransaction(self._writer)
                await self._writer.run(lambda connection: connection.execute("COMMIT"))
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    await self._writer.run(lambda connection: connection.execute("ROLLBACK"))
                raise

    async def query(self, sql: str, parameters: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return [tuple(row) for row in await self._reader.execute_fetchall(sql, parameters)]
