"""The embedded default store: one SQLite file in WAL mode, through aiosqlite.

Writes go through one connection under ``BEGIN IMMEDIATE`` so positions are assigned by a
single writer at a time (gap-free by construction, also across processes); reads use a second
connection that only ever sees committed rows.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import sqlite3
import uuid
from collections.abc import AsyncIterator, Iterable, Sequence
from pathlib import Path
from typing import Any

import aiosqlite

from leaderlog._json import canonical_bytes, loads
from leaderlog.errors import StoreError, StoreUnavailable
from leaderlog.events import RecordedEvent
from leaderlog.store.base import (
    GENESIS_HASH,
    AppendResult,
    EventStore,
    PendingBatch,
    ProjectionTransaction,
    plan_batches,
    utc_now,
)

__all__ = ["PRAGMAS", "SCHEMA", "SQLiteStore"]

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
    "position, event_id, stream, version, type, schema_version, data, recorded_at, actor, meta, hash"
)
_INSERT = f"INSERT INTO events ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
# SQLite's default limit on host parameters is 32766; stay far below it.
_CHUNK = 500


def _row_to_event(row: Sequence[Any]) -> RecordedEvent:
    # Rows were validated on the way in; constructing without validation keeps reads cheap.
    return RecordedEvent.model_construct(
        position=row[0],
        event_id=uuid.UUID(bytes=row[1]),
        stream=row[2],
        version=row[3],
        type=row[4],
        schema_version=row[5],
        data=loads(row[6]),
        recorded_at=dt.datetime.fromisoformat(row[7].replace("Z", "+00:00")),
        actor=row[8],
        meta=loads(row[9]),
        hash=row[10],
    )


def _event_to_row(event: RecordedEvent) -> tuple[Any, ...]:
    return (
        event.position,
        event.event_id.bytes,
        event.stream,
        event.version,
        event.type,
        event.schema_version,
        canonical_bytes(event.data).decode(),
        event.recorded_at.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        event.actor,
        canonical_bytes(event.meta).decode(),
        event.hash,
    )


def _chunks(items: Sequence[Any]) -> Iterable[Sequence[Any]]:
    for start in range(0, len(items), _CHUNK):
        yield items[start : start + _CHUNK]


def path_from_url(url: str) -> Path:
    """``sqlite:///relative.db`` or ``sqlite:////absolute.db`` (or a bare path)."""
    if url.startswith("sqlite:///"):
        return Path(url[len("sqlite:///") :])
    if url.startswith("sqlite:"):
        raise StoreUnavailable(f"SQLite URLs look like sqlite:///path/to/file.db, not {url!r}")
    return Path(url)


class _SQLiteProjectionTransaction(ProjectionTransaction):
    def __init__(self, connection: aiosqlite.Connection) -> None:
        self._connection = connection

    async def execute(self, sql: str, parameters: Sequence[Any] = ()) -> None:
        await self._connection.execute(sql, parameters)

    async def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        await self._connection.executemany(sql, rows)

    async def fetchall(self, sql: str, parameters: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        cursor = await self._connection.execute(sql, parameters)
        return [tuple(row) for row in await cursor.fetchall()]


class SQLiteStore(EventStore):
    dialect = "sqlite"

    def __init__(
        self, path: Path, writer: aiosqlite.Connection, reader: aiosqlite.Connection
    ) -> None:
        super().__init__()
        self.path = path
        self._writer = writer
        self._reader = reader
        self._write_lock = asyncio.Lock()

    @classmethod
    async def open(cls, url: str) -> SQLiteStore:
        path = path_from_url(url)
        if str(path) != ":memory:" and not path.parent.exists():
            raise StoreUnavailable(f"cannot create {path}: folder {path.parent} does not exist")
        try:
            writer = await aiosqlite.connect(path, isolation_level=None)
            for pragma in PRAGMAS:
                await writer.execute(pragma)
            await writer.executescript(SCHEMA)
            reader = await aiosqlite.connect(path, isolation_level=None)
            for pragma in PRAGMAS[1:]:
                await reader.execute(pragma)
        except sqlite3.Error as error:
            raise StoreUnavailable(f"cannot open SQLite database {path}: {error}") from error
        return cls(path, writer, reader)

    async def close(self) -> None:
        await self._reader.close()
        await self._writer.close()

    # --- writing ---------------------------------------------------------------------------

    async def append_batches(
        self, batches: Sequence[PendingBatch]
    ) -> list[AppendResult | StoreError]:
        if not batches:
            return []
        streams = sorted({event.stream for batch in batches for event in batch.events})
        ids = [event.event_id.bytes for batch in batches for event in batch.events]
        async with self._write_lock:
            writer = self._writer
            try:
                await writer.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as error:
                raise StoreUnavailable(f"database is busy: {error}") from error
            try:
                cursor = await writer.execute(
                    "SELECT position, hash FROM events ORDER BY position DESC LIMIT 1"
                )
                head = await cursor.fetchone()
                head_position, head_hash = (head[0], head[1]) if head else (0, GENESIS_HASH)
                versions: dict[str, int] = {}
                for chunk in _chunks(streams):
                    marks = ",".join("?" * len(chunk))
                    cursor = await writer.execute(
                        f"SELECT stream, MAX(version) FROM events WHERE stream IN ({marks}) "
                        "GROUP BY stream",
                        chunk,
                    )
                    versions.update({row[0]: row[1] for row in await cursor.fetchall()})
                existing: dict[uuid.UUID, tuple[int, str, str, bytes]] = {}
                for chunk in _chunks(ids):
                    marks = ",".join("?" * len(chunk))
                    cursor = await writer.execute(
                        "SELECT event_id, position, stream, type, data FROM events "
                        f"WHERE event_id IN ({marks})",
                        chunk,
                    )
                    for row in await cursor.fetchall():
                        existing[uuid.UUID(bytes=row[0])] = (row[1], row[2], row[3], row[4].encode())
                outcomes, rows = plan_batches(
                    batches, versions, existing, head_position, head_hash, utc_now()
                )
                if rows:
                    await writer.executemany(_INSERT, [_event_to_row(row) for row in rows])
                await writer.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    await writer.execute("ROLLBACK")
                raise
        if rows:
            await self._notify_appended()
        return outcomes

    # --- reading ---------------------------------------------------------------------------

    async def _select(self, sql: str, parameters: Sequence[Any] = ()) -> list[RecordedEvent]:
        cursor = await self._reader.execute(sql, parameters)
        return [_row_to_event(row) for row in await cursor.fetchall()]

    async def read_all(self, after: int = 0, limit: int | None = None) -> list[RecordedEvent]:
        return await self._select(
            f"SELECT {_COLUMNS} FROM events WHERE position > ? ORDER BY position LIMIT ?",
            (after, -1 if limit is None else limit),
        )

    async def read_streams(self, streams: Sequence[str]) -> dict[str, list[RecordedEvent]]:
        found: dict[str, list[RecordedEvent]] = {}
        for chunk in _chunks(list(dict.fromkeys(streams))):
            marks = ",".join("?" * len(chunk))
            for event in await self._select(
                f"SELECT {_COLUMNS} FROM events WHERE stream IN ({marks}) "
                "ORDER BY stream, version",
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
        found = await self._select(f"SELECT {_COLUMNS} FROM events WHERE position = ?", (position,))
        return found[0] if found else None

    async def head(self) -> tuple[int, str]:
        cursor = await self._reader.execute(
            "SELECT position, hash FROM events ORDER BY position DESC LIMIT 1"
        )
        row = await cursor.fetchone()
        return (row[0], row[1]) if row else (0, GENESIS_HASH)

    async def count(self) -> int:
        cursor = await self._reader.execute("SELECT COUNT(*) FROM events")
        row = await cursor.fetchone()
        return int(row[0]) if row else 0

    # --- projections -----------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def projection_transaction(self) -> AsyncIterator[ProjectionTransaction]:
        async with self._write_lock:
            await self._writer.execute("BEGIN IMMEDIATE")
            try:
                yield _SQLiteProjectionTransaction(self._writer)
                await self._writer.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    await self._writer.execute("ROLLBACK")
                raise

    async def query(self, sql: str, parameters: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        cursor = await self._reader.execute(sql, parameters)
        return [tuple(row) for row in await cursor.fetchall()]
