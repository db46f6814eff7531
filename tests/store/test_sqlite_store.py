"""The store contract on SQLite, plus what only the SQLite backend promises."""

from __future__ import annotations

import asyncio
import gc
import multiprocessing
import random
import sqlite3
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

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


async def test_a_file_that_is_not_a_database_is_unavailable_and_left_as_it_was(
    tmp_path: Path,
) -> None:
    junk = tmp_path / "junk.db"
    content = random.Random(3).randbytes(8192)
    junk.write_bytes(content)
    with pytest.raises(StoreUnavailable, match="file is not a database"):
        await open_store(f"sqlite:///{junk}")
    assert junk.read_bytes() == content


def _open_new_files_when_released(urls: list[str], barrier: Any, failures: Any, seed: int) -> None:
    async def open_and_read(url: str) -> None:
        store = await open_store(url)
        try:
            await store.read_all()
        finally:
            await store.close()

    jitter = random.Random(seed)
    for url in urls:
        barrier.wait()
        # Spread the openers over a few milliseconds: the refusal needs one of them to be
        # switching the file to WAL just when another asks for it.
        time.sleep(jitter.uniform(0, 0.01))
        try:
            asyncio.run(open_and_read(url))
        except Exception as error:
            failures.put(f"{url}: {error!r}")


def test_processes_opening_a_new_file_at_once_all_succeed(tmp_path: Path) -> None:
    # SQLite refuses a journal-mode switch with "database is locked" at once, without its
    # busy handler, while another connection is switching the same new file: the store waits.
    context = multiprocessing.get_context("spawn")
    failures = context.Queue()
    urls = [f"sqlite:///{tmp_path / f'new-{number}.db'}" for number in range(30)]
    barrier = context.Barrier(4)
    openers = [
        context.Process(target=_open_new_files_when_released, args=(urls, barrier, failures, seed))
        for seed in range(4)
    ]
    for opener in openers:
        opener.start()
    for opener in openers:
        opener.join(timeout=120)
        assert opener.exitcode == 0
    reported = []
    while not failures.empty():
        reported.append(failures.get())
    assert reported == []


_FORGETS_TO_CLOSE = """
import asyncio, sys
from leaderlog.store import open_store

async def main() -> None:
    store = await open_store(sys.argv[1])
    print(await store.count())

asyncio.run(main())
"""


def test_a_store_never_closed_does_not_hold_the_process_open(sqlite_url: str) -> None:
    # given a program that opens a store, reads, and ends without closing it
    finished = subprocess.run(
        [sys.executable, "-W", "always::ResourceWarning", "-c", _FORGETS_TO_CLOSE, sqlite_url],
        capture_output=True,
        text=True,
        timeout=30,
    )
    # then it exits on its own, and is told what it forgot
    assert finished.returncode == 0, finished.stderr
    assert finished.stdout == "0\n"
    assert "ResourceWarning: the SQLite store on" in finished.stderr
    assert "was not closed; use `async with` or `await store.close()`" in finished.stderr
    assert "Traceback" not in finished.stderr


def _resource_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]


async def test_only_a_store_left_open_is_warned_about(sqlite_url: str) -> None:
    closed = await open_store(sqlite_url)
    await closed.close()
    left_open = await open_store(sqlite_url)
    # The warning comes from a finalizer, whose exceptions are only printed: record it instead.
    # Both stores are dropped before any assertion, so a failure leaves no thread behind.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        del closed
        gc.collect()
        after_the_closed_one = _resource_warnings(caught)
        del left_open
        gc.collect()
    warned = _resource_warnings(caught)
    assert after_the_closed_one == [], warned
    assert len(warned) == 1 and warned[0].startswith("the SQLite store on "), warned
