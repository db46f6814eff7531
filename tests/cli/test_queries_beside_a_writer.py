"""A query over projections already at the log's head answers while another process holds
the database's write lock (a long import), where it waited out the busy timeout and failed."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from leaderlog.cli import main
from leaderlog.store import sqlite as sqlite_store
from tests.conftest import SEEDS

SEED_FILE = SEEDS / "ice-leadership-2025-05.jsonl"


def _invoke(database: Path, *arguments: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["--db", f"sqlite:///{database}", *arguments])
    return result.exit_code, result.output


def test_a_query_on_current_projections_answers_beside_a_writer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a log whose projections are at its head
    database = tmp_path / "log.db"
    assert _invoke(database, "import", str(SEED_FILE))[0] == 0
    code, expected = _invoke(database, "state")
    assert code == 0, expected
    # and a short busy timeout, so that waiting for the lock fails the test quickly
    monkeypatch.setattr(sqlite_store, "BUSY_TIMEOUT", 0.2)
    # when another process holds the write lock meanwhile
    with contextlib.closing(sqlite3.connect(database, isolation_level=None)) as writer:
        writer.execute("BEGIN IMMEDIATE")
        code, answered = _invoke(database, "state")
        writer.execute("ROLLBACK")
    # then the query answers as before
    assert code == 0, answered
    assert answered == expected
