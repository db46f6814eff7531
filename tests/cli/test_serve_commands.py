"""``leaderlog feed`` and ``leaderlog serve``: arguments, errors, and where seeds come from."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from click.testing import CliRunner

from leaderlog.cli import serve_commands
from leaderlog.cli._app import main
from leaderlog.log import EventLog, load_seeds
from tests.conftest import ROOT, SEEDS


async def _seed(url: str) -> None:
    log = await EventLog.open(url)
    try:
        await load_seeds(log, SEEDS)
    finally:
        await log.close()


def test_feed_writes_a_document_and_refuses_bad_arguments(sqlite_url: str) -> None:
    asyncio.run(_seed(sqlite_url))
    runner = CliRunner()
    written = runner.invoke(
        main, ["--db", sqlite_url, "feed", "--format", "json", "--lang", "pt-BR"]
    )
    assert written.exit_code == 0, written.output
    assert b'"language": "pt"' in written.stdout_bytes
    assert b'"feed_url": "http://127.0.0.1:8000/feeds/all.json?lang=pt"' in written.stdout_bytes
    cases = {
        ("--scope", "planet:earth"): (2, "is not one of all, org:ID"),
        ("--lang", "tlh"): (2, "is not offered"),
        ("--format", "xml"): (2, "'xml' is not one of"),
        ("--base-url", "ftp://example.org"): (2, "http:// or https://"),
        ("--base-url", "http://example.com/sub?x=1&y=2"): (2, "without ?query or #fragment"),
        ("--base-url", "http://example.com/sub#top"): (2, "without ?query or #fragment"),
        ("--scope", "org:atlantis"): (1, "unknown organisation 'atlantis'"),
        ("--scope", "person:hammer"): (1, "'hammer'; did you mean robert-hammer (Robert Hammer,"),
        ("--page", "1"): (1, "the feed is complete"),
    }
    for arguments, (status, message) in cases.items():
        result = runner.invoke(main, ["--db", sqlite_url, "feed", *arguments])
        assert result.exit_code == status, arguments
        assert message in result.stderr, (arguments, result.stderr)


def test_seeds_come_from_the_working_folder_when_it_has_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    assert serve_commands.seeds_folder() == Path("seeds")
    monkeypatch.chdir(tmp_path)
    found = serve_commands.seeds_folder()
    # Elsewhere only a packaged copy can be used (an editable install has none).
    assert found is None or any(found.glob("*.jsonl"))


def test_serve_is_documented() -> None:
    result = CliRunner().invoke(main, ["serve", "--help"])
    assert result.exit_code == 0
    for option in ("--host", "--port", "--no-seed"):
        assert option in result.output


def test_serve_reports_a_database_it_cannot_open_in_one_line(tmp_path: Path) -> None:
    # No server starts: the database is opened (and seeded) before uvicorn is.
    missing = tmp_path / "no-such-folder" / "leaderlog.db"
    result = CliRunner().invoke(main, ["--db", f"sqlite:///{missing}", "serve", "--port", "1"])
    assert result.exit_code == 1
    assert result.stderr.endswith(
        f"error: cannot create {missing}: folder {missing.parent} does not exist\n"
    )
    assert "Traceback" not in result.stderr


def test_serve_names_the_seed_file_that_is_bad(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "seeds").mkdir()
    (tmp_path / "seeds" / "a.jsonl").write_text(
        (SEEDS / "ice-leadership-2025-05.jsonl").read_text(encoding="utf-8")
    )
    (tmp_path / "seeds" / "b.jsonl").write_text('{"type": "org.registered"}\n')
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["--db", "sqlite:///leaderlog.db", "serve", "--port", "1"])
    assert result.exit_code == 1
    assert "b.jsonl line 1: " in result.stderr, result.stderr
    # the whole of a.jsonl went in before b.jsonl was refused; b.jsonl wrote nothing
    verify = CliRunner().invoke(main, ["--db", "sqlite:///leaderlog.db", "verify", "--json"])
    assert '"count": 29' in verify.stdout
