"""Ctrl-C while a SQLite store opens leaves no thread behind to hold the process's exit."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import aiosqlite.core
import pytest

from leaderlog.errors import Interrupted
from leaderlog.store.sqlite import SQLiteStore


# A thread that dies of an exception prints its traceback to the user's terminal.
@pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")
def test_given_ctrl_c_as_the_reader_connects_when_the_store_opens_then_no_thread_is_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given: Ctrl-C lands just as the reader's connection is made (between the await
    # returning and the next line, as a SIGINT can), while the reader's thread is still busy
    # (so that it gets to stopping only once asyncio.run has closed the loop).
    connect = aiosqlite.core.Connection._connect

    async def interrupted(self: aiosqlite.core.Connection) -> aiosqlite.core.Connection:
        await connect(self)
        self._tx.put_nowait((None, lambda: time.sleep(0.3)))
        raise Interrupted

    monkeypatch.setattr(aiosqlite.core.Connection, "_connect", interrupted)
    before = set(threading.enumerate())

    # When: the store is opened.
    with pytest.raises(KeyboardInterrupt):
        asyncio.run(SQLiteStore.open(f"sqlite:///{tmp_path / 'log.db'}"))

    # Then: every thread it started ends (a reader's thread left waiting is not a daemon:
    # the interpreter waited for it at exit for good, after printing "interrupted").
    left = set(threading.enumerate()) - before
    for thread in left:
        thread.join(timeout=5)
    assert [thread.name for thread in left if thread.is_alive()] == []
