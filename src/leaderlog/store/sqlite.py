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

from leaderlog._json import loads
from leaderlog.errors import StoreError, StoreUnavailable
from leaderlog.events import RecordedEvent
from leaderlog.store.base import (
    GENESIS_HASH,
    AppendResult,
    EventStore,
    PendingBatch,
    PlannedRow,
    ProjectionTransaction,
    plan_rows,
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
    "position, event_id, stream, version, type, schema_version, data, recorded_at, actor, meta, "
    "hash"
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
        return [tuple(row) for row in await self._connection.execute_fetchall(sql, parameters)]


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
        async with self._write_lock:
            try:
                # Ids are nearly always new (fresh UUIDv7s, or checked by the caller), so the
                # UNIQUE index is trusted to catch a stored one before paying for a lookup.
                outcomes, appended = await self._append_in_transaction(batches, look_up_ids=False)
            except sqlite3.IntegrityError:
                outcomes, appended = await self._append_in_transaction(batches, look_up_ids=True)
        if appended:
            await self._notify_appended()
        return outcomes

    async def _append_in_transaction(
        self, batches: Sequence[PendingBatch], *, look_up_ids: bool
    ) -> tuple[list[AppendResult | StoreError], bool]:
        writer = self._writer
        try:
            await writer.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as error:
            raise StoreUnavailable(f"database is busy: {error}") from error
        try:
            head = list(
                await writer.execute_fetchall(
                    "SELECT position, hash FROM events ORDER BY position DESC LIMIT 1"
                )
            )
            head_position, head_hash = (head[0][0], head[0][1]) if head else (0, GENESIS_HASH)
            streams = sorted({event.stream for batch in batches for event in batch.events})
            versions: dict[str, int] = {}
            for chunk in _chunks(streams):
                marks = ",".join("?" * len(chunk))
                for row in await writer.execute_fetchall(
                    f"SELECT stream, MAX(version) FROM events WHERE stream IN ({marks}) "
                    "GROUP BY stream",
                    chunk,
                ):
                    versions[row[0]] = row[1]
            now = utc_now()
            existing = await self._stored_ids(batches) if look_up_ids else {}
            outcomes, rows = plan_rows(batches, versions, existing, head_position, head_hash, now)
            if not look_up_ids and any(isinstance(o, StoreError) for o in outcomes):
                # A refused batch may be the retry of a stored one (an idempotent retry is no
                # conflict even when its stream has moved on): plan again knowing the stored ids.
                existing = await self._stored_ids(batches)
                outcomes, rows = plan_rows(
                    batches, versions, existing, head_position, head_hash, now
                )
            if rows:
                await writer.executemany(_INSERT, [_planned_to_row(row) for row in rows])
            await writer.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                await writer.execute("ROLLBACK")
            raise
        return outcomes, bool(rows)

    async def _stored_ids(
        self, batches: Sequence[PendingBatch]
    ) -> dict[uuid.UUID, tuple[int, str, str, bytes]]:
        """(position, stream, type, canonical data) of each batch event id already stored."""
        existing: dict[uuid.UUID, tuple[int, str, str, bytes]] = {}
        ids = [event.event_id.bytes for batch in batches for event in batch.events]
        for chunk in _chunks(ids):
            marks = ",".join("?" * len(chunk))
            for row in await self._writer.execute_fetchall(
                "SELECT event_id, position, stream, type, data FROM events "
                f"WHERE event_id IN ({marks})",
                chunk,
            ):
                existing[uuid.UUID(bytes=row[0])] = (row[1], row[2], row[3], row[4].encode())
        return existing

    # --- reading ---------------------------------------------------------------------------

    async def _select(self, sql: str, parameters: Sequence[Any] = ()) -> list[RecordedEvent]:
        # execute_fetchall costs one thread hop where execute + fetchall cost two.
        return [_row_to_event(row) for row in await self._reader.execute_fetchall(sql, parameters)]

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
            await self._writer.execute("BEGIN IMMEDIATE")
            try:
                yield _SQLiteProjectionTransaction(self._writer)
                await self._writer.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    await self._writer.execute("ROLLBACK")
                raise

    async def query(self, sql: str, parameters: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return [tuple(row) for row in await self._reader.execute_fetchall(sql, parameters)]
