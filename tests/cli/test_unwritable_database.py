"""SQLite files a command may not write, or that hold no log: one clear error line, the file
as it was. Commands run as a user without write access (``setpriv`` to ``nobody`` when the
tests run as root, who may write anything; file modes otherwise)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from leaderlog.cli import main
from leaderlog.store.sqlite import PRAGMAS, SCHEMA, SQLiteStore
from tests.conftest import SEEDS

LEADERLOG = Path(sys.executable).parent / "leaderlog"
SEED_FILE = SEEDS / "ice-leadership-2025-05.jsonl"
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
AS_ROOT = os.geteuid() == 0


def as_reader(*arguments: str) -> subprocess.CompletedProcess[str]:
    """Run leaderlog as a user who may read the test's files but not write them."""
    prefix = NOBODY if AS_ROOT else []
    return subprocess.run(
        [*prefix, str(LEADERLOG), *arguments],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd="/",
    )


@pytest.fixture
def folder() -> Iterator[Path]:
    """A folder outside pytest's own (which only its owner may enter), readable by all."""
    if AS_ROOT and shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: no user to lack write access")
    path = Path(tempfile.mkdtemp(prefix="leaderlog-unwritable-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        path.chmod(0o755)
        shutil.rmtree(path)


def read_only(folder: Path) -> None:
    if not AS_ROOT:
        for path in folder.iterdir():
            path.chmod(0o444)
        folder.chmod(0o555)


def log_summary(database: Path) -> tuple[int, str]:
    with contextlib.closing(sqlite3.connect(database)) as connection:
        count, head = connection.execute(
            "SELECT COUNT(*), (SELECT hash FROM events ORDER BY position DESC LIMIT 1) FROM events"
        ).fetchone()
    return count, head


def held_in_wal_mode(folder: Path, *, caught_up: bool) -> Iterator[Path]:
    """A seeded log whose WAL files are kept, as when a server is running on it: a reader
    can then open it without writing anything, so it is the first write that fails. Caught
    up, its projections are at the head, as a server following the log keeps them."""
    database = folder / "log.db"
    imported = CliRunner().invoke(main, ["--db", f"sqlite:///{database}", "import", str(SEED_FILE)])
    assert imported.exit_code == 0, imported.output
    if caught_up:
        rebuilt = CliRunner().invoke(main, ["--db", f"sqlite:///{database}", "rebuild"])
        assert rebuilt.exit_code == 0, rebuilt.output
    record = {"type": "person.registered", "data": {"person": "new-person", "name": "New"}}
    (folder / "new.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")
    with contextlib.closing(sqlite3.connect(database)) as holder:
        holder.execute("BEGIN")
        holder.execute("SELECT COUNT(*) FROM events").fetchone()
        for path in folder.iterdir():
            path.chmod(0o644)
        read_only(folder)
        yield database
        folder.chmod(0o755)


@pytest.fixture
def seeded_in_wal_mode(folder: Path) -> Iterator[Path]:
    yield from held_in_wal_mode(folder, caught_up=False)


@pytest.fixture
def caught_up_in_wal_mode(folder: Path) -> Iterator[Path]:
    yield from held_in_wal_mode(folder, caught_up=True)


@pytest.mark.parametrize(
    "command",
    [
        ["state"],
        ["claim", "fox-ice-shakeup-2025-05-genalo-retirement"],
        ["feed"],
        ["import", "{folder}/new.jsonl"],
    ],
    ids=" ".join,
)
def test_a_user_who_may_only_read_the_file_is_told_writing_is_needed(
    seeded_in_wal_mode: Path, command: list[str]
) -> None:
    before = log_summary(seeded_in_wal_mode)
    command = [part.format(folder=seeded_in_wal_mode.parent) for part in command]
    result = as_reader("--db", f"sqlite:///{seeded_in_wal_mode}", *command)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith(
        f"error: cannot write to the SQLite database {seeded_in_wal_mode}: attempt to write a "
        "readonly database; appending and the commands that keep projections up to date need "
        "write access"
    ), result.stderr
    assert log_summary(seeded_in_wal_mode) == before


@pytest.mark.parametrize(
    "command",
    [
        ["state", "--org", "ice"],
        ["history", "--post", "ice-hsi-ead"],
        ["claim", "fox-ice-shakeup-2025-05-genalo-retirement"],
        ["audit", "--status", "disputed"],
        ["feed"],
    ],
    ids=" ".join,
)
def test_the_same_user_may_query_projections_already_up_to_date(
    caught_up_in_wal_mode: Path, command: list[str]
) -> None:
    # Given a log whose projections are at its head, which the reader may not write
    before = log_summary(caught_up_in_wal_mode)
    # When the reader asks a query command
    result = as_reader("--db", f"sqlite:///{caught_up_in_wal_mode}", *command)
    # Then it answers, as the README says, having had nothing to write
    assert result.returncode == 0, result.stderr
    assert result.stdout
    assert log_summary(caught_up_in_wal_mode) == before


def test_the_same_user_may_verify_and_export(seeded_in_wal_mode: Path) -> None:
    url = f"sqlite:///{seeded_in_wal_mode}"
    # and import what is already there: nothing to write
    again = as_reader("--db", url, "import", str(SEED_FILE))
    assert (again.returncode, again.stdout) == (0, "appended 0, already present 29\n")
    verified = as_reader("--db", url, "verify")
    assert verified.returncode == 0, verified.stderr
    assert verified.stdout.startswith("chain OK, 29 events")
    exported = as_reader("--db", url, "export")
    assert exported.returncode == 0, exported.stderr
    assert len(exported.stdout.splitlines()) == 29


@pytest.mark.parametrize("command", [["verify"], ["import", str(SEED_FILE)]], ids=" ".join)
def test_a_file_in_a_folder_the_user_may_not_enter_is_one_clear_error(
    folder: Path, command: list[str]
) -> None:
    closed = folder / "closed"
    closed.mkdir(mode=0o700)
    if not AS_ROOT:
        closed.chmod(0)
    database = closed / "log.db"
    try:
        result = as_reader("--db", f"sqlite:///{database}", *command)
    finally:
        closed.chmod(0o700)
    assert result.returncode == 1
    assert result.stderr == f"error: cannot open SQLite database {database}: Permission denied\n"
    assert list(closed.iterdir()) == []


@pytest.mark.parametrize("command", [["events"], ["verify"], ["state"], ["export"]], ids=" ".join)
def test_a_command_that_only_reads_refuses_an_empty_file_and_leaves_it_empty(
    tmp_path: Path, command: list[str]
) -> None:
    empty = tmp_path / "empty.db"
    empty.touch()
    result = CliRunner().invoke(main, ["--db", f"sqlite:///{empty}", *command])
    assert result.exit_code == 1
    assert result.stderr == (
        f"error: {empty} holds no leaderlog log (no events table): nothing was created; import "
        "records into it first (leaderlog import FILE), or name another with --db URL or "
        "LEADERLOG_DB\n"
    )
    assert empty.stat().st_size == 0
    assert [path.name for path in tmp_path.iterdir()] == ["empty.db"]


def test_verify_does_not_add_a_log_to_another_programs_database(tmp_path: Path) -> None:
    shared = tmp_path / "shared.db"
    with contextlib.closing(sqlite3.connect(shared)) as connection, connection:
        connection.execute("CREATE TABLE other (x INTEGER)")
    result = CliRunner().invoke(main, ["--db", f"sqlite:///{shared}", "verify"])
    assert result.exit_code == 1
    assert "holds no leaderlog log" in result.stderr
    with contextlib.closing(sqlite3.connect(shared)) as connection:
        assert connection.execute("SELECT name FROM sqlite_master").fetchall() == [("other",)]
        assert connection.execute("PRAGMA journal_mode").fetchone() == ("delete",)
    # and a command that writes still makes it a log
    imported = CliRunner().invoke(main, ["--db", f"sqlite:///{shared}", "import", str(SEED_FILE)])
    assert imported.exit_code == 0, imported.output


async def test_a_file_another_process_is_making_a_log_of_is_waited_for(tmp_path: Path) -> None:
    """The file exists before its tables do: a command that only reads, arriving then, gets
    the log rather than "holds no leaderlog log"."""
    database = tmp_path / "new.db"
    database.touch()

    def create_the_log() -> None:
        time.sleep(0.3)
        with contextlib.closing(sqlite3.connect(database, isolation_level=None)) as creator:
            for pragma in PRAGMAS:
                creator.execute(pragma)
            creator.executescript(SCHEMA)

    creating = threading.Thread(target=create_the_log)
    creating.start()
    try:
        store = await SQLiteStore.open(f"sqlite:///{database}", create=False)
        await store.close()
    finally:
        creating.join()
