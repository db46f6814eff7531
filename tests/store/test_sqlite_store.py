"""The store contract on SQLite, plus what only the SQLite backend promises."""

from __future__ import annotations

import asyncio
import datetime as dt
import gc
import multiprocessing
import random
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from click.testing import CliRunner

from leaderlog.cli import main
from leaderlog.errors import LogRemoved, StoreUnavailable
from leaderlog.events import PersonRegistered
from leaderlog.log import EventLog
from leaderlog.store import DEFAULT_DATABASE_URL, database_url, open_store
from leaderlog.store import sqlite as sqlite_backend
from leaderlog.store.sqlite import PRAGMAS, SQLiteStore, path_from_url

from .contract import StoreContract, event
from .contract_group_commit import GroupCommitContract


def _execute(path: Path, sql: str) -> None:
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        connection.execute("PRAGMA busy_timeout=10000")
        connection.executescript(sql)
    finally:
        connection.close()


class TestSQLiteStore(StoreContract, GroupCommitContract):
    raw_error = sqlite3.IntegrityError
    new_event_id_sql = "randomblob(16)"

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

    async def drop_unique_versions(self, store_url: str, *, indexed: bool) -> None:
        # SQLite cannot drop the index of a table's constraint: the table is made again
        # without it (and without its triggers).
        table = sqlite_backend.SCHEMA.partition("CREATE TRIGGER")[0]
        unique_versions = ",\n    UNIQUE (stream, version)"
        assert unique_versions in table
        index = "CREATE INDEX events_by_version ON events (stream, version);" if indexed else ""
        await self.execute_raw(
            store_url,
            "BEGIN; ALTER TABLE events RENAME TO versioned_events; "
            f"{table.replace(unique_versions, '')}; {index}"
            "INSERT INTO events SELECT * FROM versioned_events; "
            "DROP TABLE versioned_events; COMMIT;",
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


@pytest.mark.parametrize("create", [True, False])
async def test_a_folder_named_as_the_database_or_its_folder_is_said_to_be_one(
    tmp_path: Path, create: bool
) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    with pytest.raises(StoreUnavailable) as raised:
        await open_store(f"sqlite:///{folder}", create=create)
    assert str(raised.value) == (
        f"cannot open SQLite database {folder}: it is a folder, not a database file"
    )
    file = tmp_path / "notes.txt"
    file.write_text("notes\n")
    with pytest.raises(StoreUnavailable) as raised:
        await open_store(f"sqlite:///{file / 'log.db'}", create=create)
    assert str(raised.value) == (
        f"cannot open SQLite database {file / 'log.db'}: {file} is a file, not a folder"
    )
    assert sorted(path.name for path in tmp_path.iterdir()) == ["logs", "notes.txt"]
    assert not any(folder.iterdir())


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


# The same, with the store still referenced when the program ends: not garbage before exit.
_KEEPS_IT_OPEN = """
import asyncio, sys
from leaderlog.store import open_store

store = asyncio.run(open_store(sys.argv[1]))
print(asyncio.run(store.count()))
"""


# A store used, and closed, by a thread that goes on after the main thread has ended.
_USED_BY_A_THREAD = """
import asyncio, sys, threading
from leaderlog.store import open_store

ready = threading.Event()

async def main() -> None:
    async with await open_store(sys.argv[1]) as store:
        ready.set()
        for _ in range(5):
            await asyncio.sleep(0.1)
            await store.head()
    print("closed")

worker = threading.Thread(target=asyncio.run, args=(main(),))
worker.start()
ready.wait()
"""


def test_a_store_a_thread_still_uses_when_the_main_thread_ends_is_left_to_it(
    sqlite_url: str,
) -> None:
    finished = subprocess.run(
        [sys.executable, "-W", "always::ResourceWarning", "-c", _USED_BY_A_THREAD, sqlite_url],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert (finished.returncode, finished.stdout, finished.stderr) == (0, "closed\n", "")


@pytest.mark.parametrize("program", [_FORGETS_TO_CLOSE, _KEEPS_IT_OPEN], ids=["garbage", "kept"])
def test_a_store_never_closed_does_not_hold_the_process_open(sqlite_url: str, program: str) -> None:
    # given a program that opens a store, reads, and ends without closing it
    finished = subprocess.run(
        [sys.executable, "-W", "always::ResourceWarning", "-c", program, sqlite_url],
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


# --- rows that cannot be decoded ----------------------------------------------------------


async def _seeded_with_an_edit(url: str, edit: str) -> None:
    """Five events, then the append-only guard dropped and row 3 edited behind the store."""
    store = await open_store(url)
    try:
        await store.append([event(f"s{i % 2}") for i in range(5)], actor="t")
    finally:
        await store.close()
    _execute(
        path_from_url(url),
        f"DROP TRIGGER events_are_append_only_update; UPDATE events SET {edit} WHERE position = 3;",
    )


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        ("event_id = X'00'", "event_id b'\\x00' is not 16 bytes"),
        ("event_id = 'text'", "event_id 'text' is not 16 bytes"),
        ("stream = X'41', version = 1", "the stored row cannot be read: "),
        ("data = X'7b7d'", "the stored row cannot be read: data is stored as bytes, not text"),
        ("version = 'two'", "stream s0 version two is out of order"),
        ("version = 2.5", "stream s0 version 2.5 is out of order"),
        ("version = X'02'", "stream s0 version b'\\x02' is out of order"),
    ],
)
async def test_verify_reports_columns_edited_into_another_type(
    sqlite_url: str, edit: str, reason: str
) -> None:
    # SQLite keeps whatever a column is given, whatever its declared type.
    await _seeded_with_an_edit(sqlite_url, edit)
    async with await open_store(sqlite_url) as store:
        report = await store.verify()
    assert (report.ok, report.first_bad_position, report.count) == (False, 3, 2)
    assert report.problem is not None and reason in report.problem


def test_the_commands_report_an_undecodable_row_without_a_traceback(sqlite_url: str) -> None:
    # given the reported repro: a seeded file whose row 3 holds data that is not JSON
    asyncio.run(_seeded_with_an_edit(sqlite_url, "data = '{not json'"))
    runner = CliRunner()

    # when verified, then the chain is reported broken at position 3
    verified = runner.invoke(main, ["--db", sqlite_url, "verify"])
    assert verified.exit_code == 1, verified.output
    assert verified.stdout.startswith(
        "chain BROKEN at position 3: the stored row cannot be read: data '{not json' is not "
        "valid JSON"
    )
    assert "(2 events verified before it)" in verified.stdout
    # and the commands that read it name the row instead of raising
    listed = runner.invoke(main, ["--db", sqlite_url, "events"])
    assert listed.exit_code == 1
    assert listed.stderr.startswith("error: event at position 3 cannot be read: data ")
    assert listed.exception is None or isinstance(listed.exception, SystemExit)
    for command in (["events", "--after", "3"], ["events", "--limit", "2"]):
        assert runner.invoke(main, ["--db", sqlite_url, *command]).exit_code == 0


# --- URLs ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tail", "message"),
    [
        ("q.db?mode=ro", "SQLite URLs take no query parameters"),
        ("q.db?", "SQLite URLs take no query parameters"),
        ("q.db#frag", "SQLite URLs take no fragment"),
        ("q.db#a?b", "SQLite URLs take no fragment"),
        ("q%FF.db", "its percent-escapes are not UTF-8"),
        ("q%00.db", "contains a NUL character"),
    ],
)
async def test_a_sqlite_url_that_is_not_just_a_path_is_refused(
    tmp_path: Path, tail: str, message: str
) -> None:
    with pytest.raises(StoreUnavailable, match=message):
        await open_store(f"sqlite:///{tmp_path}/{tail}")
    assert list(tmp_path.iterdir()) == []


async def test_a_sqlite_url_is_percent_decoded(tmp_path: Path) -> None:
    async with await open_store(f"sqlite:///{tmp_path}/x%20y%3Fz%23.db") as store:
        await store.append([event("a")], actor="t")
    assert sorted(path.name for path in tmp_path.glob("*.db")) == ["x y?z#.db"]


async def test_a_file_name_beginning_with_file_colon_is_a_name_not_a_sqlite_uri(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # SQLite reads a name beginning with "file:" as a URI: its options would come from the name
    monkeypatch.chdir(tmp_path)
    url = "sqlite:///file:log.db%3Fmode=memory"
    async with await open_store(url) as store:
        await store.append([event("a")], actor="t")
    async with await open_store(url) as again:
        assert await again.count() == 1
    assert (tmp_path / "file:log.db?mode=memory").is_file()


@pytest.mark.parametrize("scheme", ["SQLITE", "Sqlite"])
async def test_the_scheme_of_a_sqlite_url_is_case_insensitive(tmp_path: Path, scheme: str) -> None:
    async with await open_store(f"{scheme}:///{tmp_path}/log.db") as store:
        assert isinstance(store, SQLiteStore)
        assert store.path == tmp_path / "log.db"
    with pytest.raises(StoreUnavailable, match="sqlite:///"):
        await open_store(f"{scheme}:/{tmp_path}/log.db")


async def test_a_sqlite_url_naming_no_file_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(StoreUnavailable, match="names no file"):
        await open_store("sqlite:///")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("url", ["sqlite:///data/", "data/", "sqlite:///data%2F", "sqlite:////{}/"])
def test_a_url_ending_as_a_folder_does_is_refused_and_creates_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, url: str
) -> None:
    # Path() drops the trailing slash: an import created a file named data, and the commands
    # that read said that data did not exist.
    monkeypatch.chdir(tmp_path)
    url = url.format(str(tmp_path).strip("/"))
    with pytest.raises(StoreUnavailable, match=r"names a folder \(it ends with /\)"):
        asyncio.run(open_store(url))
    assert list(tmp_path.iterdir()) == []
    record = '{"type": "person.registered", "data": {"person": "ada", "name": "Ada"}}'
    result = CliRunner().invoke(main, ["--db", url, "import", "-"], input=record)
    assert result.exit_code == 2
    assert "names a folder" in result.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("url", ["sqlite:///:memory:", ":memory:", "sqlite:///%3Amemory%3A"])
async def test_an_in_memory_database_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, url: str
) -> None:
    # Its writer and reader connections would each get a database of their own.
    monkeypatch.chdir(tmp_path)
    with pytest.raises(
        StoreUnavailable,
        match="an in-memory SQLite database is not supported: each connection would see its "
        "own empty database; use a file",
    ):
        await open_store(url)
    assert list(tmp_path.iterdir()) == []


def test_an_empty_database_url_is_an_error_but_an_unset_one_is_the_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("LEADERLOG_DB", raising=False)
    assert database_url() == DEFAULT_DATABASE_URL
    assert database_url("sqlite:///x.db") == "sqlite:///x.db"
    for empty in ("", "  "):
        with pytest.raises(StoreUnavailable, match=r"^the database URL is empty$"):
            database_url(empty)
    monkeypatch.setenv("LEADERLOG_DB", "")
    with pytest.raises(StoreUnavailable, match=r"^the database URL is empty$"):
        database_url()
    # An explicit URL still wins over the (empty) environment.
    assert database_url("sqlite:///x.db") == "sqlite:///x.db"


@pytest.mark.parametrize("where", ["--db", "env"])
def test_an_empty_database_url_from_the_command_line_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LEADERLOG_DB", raising=False)
    if where == "env":
        monkeypatch.setenv("LEADERLOG_DB", "")
    arguments = ["--db", "", "verify"] if where == "--db" else ["verify"]
    result = CliRunner().invoke(main, arguments)
    assert result.exit_code == 2
    assert result.stderr.endswith(
        "Error: Invalid value for '--db' (or LEADERLOG_DB): the database URL is empty\n"
    )
    assert list(tmp_path.iterdir()) == []


# --- someone else's file ------------------------------------------------------------------


async def test_a_file_whose_events_table_is_not_leaderlogs_is_refused_untouched(
    tmp_path: Path,
) -> None:
    # given a database of another program that happens to have an events table
    foreign = tmp_path / "other.db"
    _execute(
        foreign, "CREATE TABLE events (id INTEGER, what TEXT); INSERT INTO events VALUES (1, 'x');"
    )
    content = foreign.read_bytes()

    # when it is opened as a log, then it is refused, and left exactly as it was
    with pytest.raises(
        StoreUnavailable,
        match=f"^{foreign} is not a leaderlog database: its events table has other columns "
        r"\(id, what\)$",
    ):
        await open_store(f"sqlite:///{foreign}")
    assert foreign.read_bytes() == content
    assert sorted(path.name for path in tmp_path.iterdir()) == ["other.db"]


async def test_a_file_with_other_tables_and_no_events_table_still_opens(tmp_path: Path) -> None:
    shared = tmp_path / "shared.db"
    _execute(
        shared, "CREATE TABLE notes (id INTEGER, text TEXT); INSERT INTO notes VALUES (1, 'x');"
    )
    async with await open_store(f"sqlite:///{shared}") as store:
        await store.append([event("a")], actor="t")
        assert await store.query("SELECT text FROM notes") == [("x",)]
        assert (await store.verify()).ok


# --- another process holding the write lock -----------------------------------------------


@pytest.fixture
def short_busy_timeout(monkeypatch: pytest.MonkeyPatch) -> float:
    monkeypatch.setattr(sqlite_backend, "BUSY_TIMEOUT", 0.2)
    return 0.2


async def test_a_projection_transaction_waiting_too_long_for_the_lock_is_busy(
    sqlite_url: str, short_busy_timeout: float
) -> None:
    async with await open_store(sqlite_url) as store:
        await store.append([event("a")], actor="t")
        # given another process holding the write lock
        holder = sqlite3.connect(path_from_url(sqlite_url), isolation_level=None)
        try:
            holder.execute("BEGIN IMMEDIATE")
            started = time.monotonic()
            # when a projection transaction waits past busy_timeout, then it is told so
            with pytest.raises(StoreUnavailable, match=r"^database is busy: database is locked"):
                async with store.projection_transaction() as tx:
                    await tx.execute("CREATE TABLE p_never (id INTEGER)")
            with pytest.raises(StoreUnavailable, match=r"^database is busy: database is locked"):
                await store.append([event("b")], actor="t")
            assert time.monotonic() - started < 10 * short_busy_timeout + 2
        finally:
            holder.execute("ROLLBACK")
            holder.close()

        # and once the lock is free, both work again: nothing was left half open
        async with store.projection_transaction() as tx:
            await tx.execute("CREATE TABLE p_after (id INTEGER)")
        await store.append([event("b")], actor="t")
        assert await store.query("SELECT COUNT(*) FROM p_after") == [(0,)]
        assert await store.count() == 2


def test_the_pragmas_shared_with_scripts_keep_the_default_busy_timeout() -> None:
    assert sqlite_backend.BUSY_TIMEOUT == 10.0
    assert "PRAGMA busy_timeout=10000" in PRAGMAS


async def test_opening_a_missing_file_without_creating_leaves_no_file(tmp_path: Path) -> None:
    missing = tmp_path / "missing.db"
    with pytest.raises(StoreUnavailable, match="does not exist: nothing was created"):
        await open_store(f"sqlite:///{missing}", create=False)
    assert list(tmp_path.iterdir()) == []


async def test_a_database_url_that_is_not_text_is_a_clear_type_error() -> None:
    with pytest.raises(TypeError, match="the database URL must be a string, got 12345"):
        await open_store(12345)  # type: ignore[arg-type]


async def test_a_commit_wakes_a_follower_waiting_in_another_event_loop(sqlite_url: str) -> None:
    # given a follower waiting in this loop, and a writer in another thread's own loop
    store = await open_store(sqlite_url)
    failures: list[BaseException] = []

    def append_elsewhere() -> None:
        time.sleep(0.3)
        try:
            asyncio.run(store.append([event("person-elsewhere")], actor="t"))
        except BaseException as error:  # reported below, where the test can fail on it
            failures.append(error)

    writer = threading.Thread(target=append_elsewhere)
    try:
        started = time.monotonic()
        writer.start()
        # when it commits
        await store.wait_for_events(0, timeout=30)
        waited = time.monotonic() - started
        await asyncio.to_thread(writer.join)
        # then the follower is woken by the commit, not by its timeout, and the append
        # that committed says so
        assert failures == []
        assert waited < 10
        assert await store.count() == 1
    finally:
        await asyncio.to_thread(writer.join)
        await store.close()


async def test_writes_given_up_before_they_start_are_skipped_and_the_rest_answered(
    sqlite_url: str,
) -> None:
    # given the writer thread busy with a first piece of work, and two more queued behind it
    store = await SQLiteStore.open(sqlite_url)
    writer = store._writer
    started, release = threading.Event(), threading.Event()
    ran: list[str] = []

    def first(connection: sqlite3.Connection) -> str:
        started.set()
        release.wait(10)
        ran.append("first")
        return "first"

    def doomed(connection: sqlite3.Connection) -> str:
        ran.append("doomed")
        return "doomed"

    def failing(connection: sqlite3.Connection) -> str:
        ran.append("failing")
        return str(connection.execute("SELECT * FROM nowhere").fetchone())

    def last(connection: sqlite3.Connection) -> int:
        ran.append("last")
        return int(connection.execute("SELECT 41 + 1").fetchone()[0])

    try:
        running = asyncio.create_task(writer.run(first))
        await asyncio.to_thread(started.wait, 10)
        given_up = asyncio.create_task(writer.run(doomed))
        refused = asyncio.create_task(writer.run(failing))
        answered = asyncio.create_task(writer.run(last))
        await asyncio.sleep(0)
        # when the caller of the second stops waiting before its work starts
        given_up.cancel()
        release.set()
        # then its work never runs, the others run in order, each caller gets its own answer
        assert await running == "first"
        with pytest.raises(asyncio.CancelledError):
            await given_up
        with pytest.raises(sqlite3.OperationalError, match="nowhere"):
            await refused
        assert await answered == 42
        assert ran == ["first", "failing", "last"]
    finally:
        release.set()
        await store.close()


def test_stamped_times_follow_the_last_event_however_far_the_clock_steps_back(
    sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # (PostgreSQL stamps from the database server's clock, which a test cannot move.)
    ahead = sqlite_backend.utc_now() + dt.timedelta(hours=1)

    async def append_as_the_clock_is_set_right() -> None:
        log = await EventLog.open(sqlite_url)
        try:
            # given an event stamped while the clock ran an hour ahead
            monkeypatch.setattr(sqlite_backend, "utc_now", lambda: ahead)
            await log.append_events([PersonRegistered(person="ada", name="Ada")], actor="t")
            # when the clock is set right, then the next event is stamped no earlier
            monkeypatch.undo()
            await log.append_events([PersonRegistered(person="bo", name="Bo")], actor="t")
            assert [e.recorded_at for e in await log.events()] == [ahead, ahead]
            assert (await log.store.verify()).ok
        finally:
            await log.close()

    asyncio.run(append_as_the_clock_is_set_right())
    # and the log's own export moves into an empty one, once its times are past (before,
    # it was refused for a time before the event before it)
    exported = CliRunner().invoke(main, ["--db", sqlite_url, "export"])
    assert exported.exit_code == 0, exported.output
    monkeypatch.setattr(sqlite_backend, "utc_now", lambda: ahead + dt.timedelta(minutes=1))
    copy = f"sqlite:///{tmp_path / 'copy.db'}"
    moved = CliRunner().invoke(main, ["--db", copy, "import", "-"], input=exported.stdout)
    assert moved.exit_code == 0, moved.output


async def test_a_log_dropped_while_open_is_said_to_be_removed(sqlite_url: str) -> None:
    async with await open_store(sqlite_url) as store:
        await store.append([event("a")], actor="t")
        # given the log's table dropped by hand while the store has it open
        with sqlite3.connect(path_from_url(sqlite_url)) as other:
            other.execute("DROP TABLE events")
        other.close()
        # then reading and appending say the log is gone, as on PostgreSQL, rather than
        # raise sqlite3's own error, which no caller of the store expects
        with pytest.raises(LogRemoved, match=r"^the log is gone \(no such table: events\)"):
            await store.read_all()
        with pytest.raises(LogRemoved):
            await store.append([event("b")], actor="t")
        with pytest.raises(LogRemoved):
            await store.verify()


def _disk_with_free_bytes(monkeypatch: pytest.MonkeyPatch, free: int) -> None:
    def usage(_: object) -> Any:
        return SimpleNamespace(total=free + 1, used=1, free=free)

    monkeypatch.setattr(shutil, "disk_usage", usage)


# SQLite's "disk I/O error" when it could not grow the -shm file, as a full disk makes it.
SQLITE_IOERR_SHMSIZE = sqlite3.SQLITE_IOERR | (19 << 8)


@pytest.mark.parametrize(("free", "full"), [(0, True), (10 * 1024 * 1024, False)])
async def test_an_io_error_on_a_full_disk_is_said_to_be_a_full_disk(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch, free: int, full: bool
) -> None:
    # given a disk with no room left (or plenty), and SQLite failing to open the file with
    # its I/O error, as it does when the -shm file beside the log cannot grow
    _disk_with_free_bytes(monkeypatch, free)
    failure = sqlite3.OperationalError("disk I/O error")
    failure.sqlite_errorcode = SQLITE_IOERR_SHMSIZE

    async def failing_open(*_: Any, **__: Any) -> Any:
        raise failure

    monkeypatch.setattr(sqlite_backend._WriteConnection, "open", failing_open)
    # when a store opens it
    with pytest.raises(StoreUnavailable) as refused:
        await open_store(sqlite_url)
    # then a full disk is named as the cause, with what to do; another I/O error is not
    said = str(refused.value)
    assert said.startswith(f"cannot open SQLite database {path_from_url(sqlite_url).absolute()}")
    assert ("the disk holding it is full: free space, then try again" in said) is full, said
    # and the same error while writing is said to be a full disk, not a failed one
    trouble = sqlite_backend._file_trouble(failure, path_from_url(sqlite_url))
    assert trouble is not None
    assert ("cannot grow" in str(trouble)) is full, trouble
    assert ("the disk failed" in str(trouble)) is not full, trouble
