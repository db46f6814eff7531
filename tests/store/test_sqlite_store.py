"""The store contract on SQLite, plus what only the SQLite backend promises."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from leaderlog.errors import StoreUnavailable
from leaderlog.store import open_store
from leaderlog.store.sqlite import SQLiteStore, path_from_url

from .contract import StoreContract, event


def _execute(path: Path, sql: str) -> None:
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        connection.execute("PRAGMA busy_timeout=10000")
        connection.executescript(sql)
    finally:
        connection.close()


class TestSQLiteStore(StoreContract):
    raw_error = sqlite3.IntegrityError

    @pytest.fixture
    def store_url(self, sqlite_url: str) -> str:
        return sqlite_url

    async def execute_raw(self, store_url: str, sql: str) -> None:
        await asyncio.to_thread(_execute, path_from_url(store_url), sql)

    async def drop_append_only_guard(self, store_url: str) -> None:
        await self.execute_raw(
            store_url,
            "DROP TRIGGER events_are_append_only_update; "
            "DROP TRIGGER events_are_append_only_delete;",
        )


async def test_sqlite_url_opens_a_sqlite_store(sqlite_url: str) -> None:
    store = await open_store(sqlite_url)
    try:
        assert isinstance(store, SQLiteStore)
        assert store.dialect == "sqlite"
        await store.append([event("a")], actor="t")
    finally:
        await store.close()
    reopened = await open_store(sqlite_url)
    try:
        assert await reopened.count() == 1
        assert (await reopened.verify()).ok
    finally:
        await reopened.close()


async def test_missing_folder_is_unavailable(tmp_path: Path) -> None:
    with pytest.raises(StoreUnavailable, match="does not exist"):
        await open_store(f"sqlite:///{tmp_path / 'nowhere' / 'log.db'}")
