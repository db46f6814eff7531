"""A SQLite file on a full disk, or damaged: one clear error line naming the file and what to
do, never a trace, and the log as it was."""

from __future__ import annotations

import contextlib
import json
import resource
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from click.testing import CliRunner

from leaderlog.cli import main
from tests.conftest import SEEDS

LEADERLOG = Path(sys.executable).parent / "leaderlog"
SEED_FILE = SEEDS / "ice-leadership-2025-05.jsonl"


def _seeded(tmp_path: Path) -> Path:
    database = tmp_path / "log.db"
    imported = CliRunner().invoke(main, ["--db", f"sqlite:///{database}", "import", str(SEED_FILE)])
    assert imported.exit_code == 0, imported.output
    return database


def _log_summary(database: Path) -> tuple[int, str]:
    with contextlib.closing(sqlite3.connect(database)) as connection:
        count, head = connection.execute(
            "SELECT COUNT(*), (SELECT hash FROM events ORDER BY position DESC LIMIT 1) FROM events"
        ).fetchone()
    return int(count), str(head)


def _leaderlog(
    database: Path, *arguments: str, preexec_fn: Callable[[], None] | None = None
) -> subprocess.CompletedProcess[str]:
    """The command as a user runs it, in a process of its own."""
    return subprocess.run(
        [str(LEADERLOG), "--db", f"sqlite:///{database}", *arguments],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        preexec_fn=preexec_fn,
    )


def test_an_import_that_outgrows_the_file_size_allowed_is_one_clear_error(
    tmp_path: Path,
) -> None:
    # given a seeded log, and many records whose writing takes far more than the room left
    database = _seeded(tmp_path)
    before = _log_summary(database)
    records = tmp_path / "many.jsonl"
    with records.open("w", encoding="utf-8") as out:
        for index in range(4000):
            record = {
                "type": "person.registered",
                "data": {"person": f"person-{index}", "name": f"Person {index} " + "x" * 200},
            }
            out.write(json.dumps(record) + "\n")
    room = sum(path.stat().st_size for path in tmp_path.glob("log.db*")) + 64 * 1024

    def limited() -> None:
        # as a full disk does to a write, the way a test can: writes past this size fail
        resource.setrlimit(resource.RLIMIT_FSIZE, (room, room))

    # when they are imported with no more room than that
    result = _leaderlog(database, "import", str(records), preexec_fn=limited)
    # then one error says the file could not be written, and nothing was
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith(
        (
            f"error: the SQLite database {database} cannot grow: ",
            f"error: cannot read or write the SQLite database {database}: ",
        )
    ), result.stderr
    assert "nothing of this was kept" in result.stderr
    assert _log_summary(database) == before


def test_a_damaged_file_is_said_to_be_damaged_with_what_to_do(tmp_path: Path) -> None:
    # given a seeded log whose pages after the first are overwritten
    database = _seeded(tmp_path)
    with contextlib.closing(sqlite3.connect(database)) as connection:
        page_size = int(connection.execute("PRAGMA page_size").fetchone()[0])
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    size = database.stat().st_size
    with database.open("r+b") as file:
        file.seek(page_size)
        file.write(bytes((index * 7 + 13) % 256 for index in range(size - page_size)))
    # when a command reads it
    result = _leaderlog(database, "state")
    # then one error says it is damaged and what to do, with no trace
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert f"the SQLite database {database} is damaged: " in result.stderr, result.stderr
    assert "`leaderlog export` may still read every event" in result.stderr
    # and how to restore a copy without the damaged file's last writes
    assert "log.db-wal and log.db-shm files beside it removed" in result.stderr


def _index_out_of_step(database: Path, tmp_path: Path) -> None:
    """Put in ``database`` the page of its index on (stream, version) from a copy in which
    position 22's version was changed: the index then no longer matches its table, whose
    events are whole, as in a file copied while SQLite wrote it."""
    edited = tmp_path / "edited.db"
    with contextlib.closing(sqlite3.connect(database)) as source:
        source.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        with contextlib.closing(sqlite3.connect(edited)) as target:
            source.backup(target)
    with contextlib.closing(sqlite3.connect(edited)) as connection:
        (index,) = connection.execute(
            "SELECT list.name FROM pragma_index_list('events') AS list, "
            "pragma_index_info(list.name) AS info WHERE info.seqno = 1 AND info.name = 'version'"
        ).fetchone()
        ((root,),) = connection.execute(
            "SELECT rootpage FROM sqlite_master WHERE name = ?", (index,)
        )
        page_size = int(connection.execute("PRAGMA page_size").fetchone()[0])
        for (trigger,) in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'events'"
        ).fetchall():
            connection.execute(f"DROP TRIGGER {trigger}")
        connection.execute("UPDATE events SET version = 7 WHERE position = 22")
        connection.commit()
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    with edited.open("rb") as file:
        file.seek((root - 1) * page_size)
        page = file.read(page_size)
    with database.open("r+b") as file:
        file.seek((root - 1) * page_size)
        file.write(page)


def test_verify_of_a_chain_broken_in_a_damaged_file_says_the_file_is_damaged(
    tmp_path: Path,
) -> None:
    # given a seeded log whose index of stream versions no longer matches its table
    database = _seeded(tmp_path)
    _index_out_of_step(database, tmp_path)
    # when it is verified
    result = _leaderlog(database, "verify")
    # then the break is reported, with SQLite's finding that the file is damaged and what
    # may still read the log whole
    assert result.returncode == 1, result.stdout + result.stderr
    said = result.stdout + result.stderr
    assert "chain BROKEN at position 23" in said
    assert "but the database itself is damaged (" in said
    assert "missing from index" in said or "wrong # of entries in index" in said
    assert "`leaderlog export` may still read every event" in said
